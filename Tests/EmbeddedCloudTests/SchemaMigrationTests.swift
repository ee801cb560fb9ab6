import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Testing

/// Cloud files written by earlier releases (schemas 1 to 4) are upgraded in place when opened.
@Suite("Embedded cloud schema migration")
struct SchemaMigrationTests {
    /// The cloud's file, opened as another program would; it waits for the lock a cloud that
    /// just went out of scope may still hold (its background checkpoint) instead of failing.
    static func file(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/previous-release/cloud.sqlite")

    @Test("a schema 1 file becomes the current schema (creation times, records indexed by name, subscriptions), keeping every record, tombstone and token")
    func migratesVersion1() async throws {
        let directory = try TemporaryDirectory(prefix: "cloud-migration")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: path)
        let before = try await Self.file(path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Int.fetchOne(db, sql: "SELECT count(*) FROM records JOIN zones USING (zone_key) WHERE zone_name = 'Notes'"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM records JOIN zones USING (zone_key) WHERE zone_name = 'Notes' AND deleted = 1"))
        }
        #expect(before.0 == 1)

        let cloud = try EmbeddedCloud(path: path)
        let zone = ZoneID(zoneName: "Notes")
        let page = try await cloud.fetchChanges(in: zone, since: nil, limit: 2_000)
        #expect(page.modified.count + page.deleted.count == before.1)
        #expect(page.deleted.count == before.2)
        let after = try await Self.file(path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"),
             try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'records'") ?? "")
        }
        #expect(after.0 == 5)
        #expect(!after.1.contains("WITHOUT ROWID"))
        #expect(page.modified.allSatisfy { $0.createdAt != nil && $0.createdAt == $0.modifiedAt }, "records saved before report their last save as created")
        // The token at the end of the feed is still the end: nothing is fetched twice.
        let again = try await cloud.fetchChanges(in: zone, since: page.token, limit: 2_000)
        #expect(again.modified.isEmpty && again.deleted.isEmpty)
        // And the migrated table takes new saves.
        let saved = try await cloud.modify(
            [.create(Record(id: RecordID(recordName: "after-migration", zoneID: zone), recordType: "Note", fields: ["n": .int64(1)]))],
            in: zone, atomic: true)
        #expect(saved.allSatisfy { $0.error == nil })
    }

    @Test("a schema 2 file gains creation times: old records report their last save, new ones their first, and updates keep it")
    func migratesVersion2() async throws {
        let directory = try TemporaryDirectory(prefix: "cloud-migration-2")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        let zone = ZoneID(zoneName: "Notes")
        let clock = LockedValue(Date(timeIntervalSince1970: 1_700_000_000))
        let configuration = EmbeddedCloud.Configuration(now: { clock.get() })
        do {
            let cloud = try EmbeddedCloud(path: path, configuration: configuration)
            try await cloud.createZone(zone)
            _ = try await cloud.modify(
                [.create(Record(id: RecordID(recordName: "old", zoneID: zone), recordType: "Note", fields: ["n": .int64(1)]))], in: zone, atomic: true)
        }
        // What the schema 2 code wrote: the same table without created_at.
        try await Self.file(path).write { db in
            try db.execute(sql: "ALTER TABLE records DROP COLUMN created_at; PRAGMA user_version = 2")
        }
        clock.set(Date(timeIntervalSince1970: 1_700_000_100))
        let cloud = try EmbeddedCloud(path: path, configuration: configuration)
        let old = try #require(try await cloud.lookup([RecordID(recordName: "old", zoneID: zone)]).first ?? nil)
        #expect(old.createdAt == Timestamp(millisecondsSince1970: 1_700_000_000_000))
        var edit = old
        edit["n"] = .int64(2)
        let updatedResult = try await cloud.modify([.replace(edit)], in: zone, atomic: true)
        let updated = try #require(updatedResult.first.flatMap(Self.saved))
        #expect(updated.createdAt == old.createdAt && updated.modifiedAt == Timestamp(millisecondsSince1970: 1_700_000_100_000))
        // Deleted and saved again, a record is created anew.
        _ = try await cloud.modify([.delete(old.id, changeTag: updated.changeTag)], in: zone, atomic: true)
        clock.set(Date(timeIntervalSince1970: 1_700_000_200))
        let againResult = try await cloud.modify(
            [.create(GatewayCore.Record(id: old.id, recordType: "Note", fields: ["n": .int64(3)]))], in: zone, atomic: true)
        let again = try #require(againResult.first.flatMap(Self.saved))
        #expect(again.createdAt == Timestamp(millisecondsSince1970: 1_700_000_200_000))
        let feed = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
        #expect(feed.modified.first?.createdAt == again.createdAt)
    }

    @Test("a schema 3 file (records keyed WITHOUT ROWID) becomes the current schema, keeping records, tombstones, creation times and the feed's position")
    func migratesVersion3() async throws {
        let directory = try TemporaryDirectory(prefix: "cloud-migration-3")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        let zone = ZoneID(zoneName: "Notes")
        let clock = LockedValue(Date(timeIntervalSince1970: 1_700_000_000))
        let configuration = EmbeddedCloud.Configuration(now: { clock.get() })
        let token: ChangeToken?
        do {
            let cloud = try EmbeddedCloud(path: path, configuration: configuration)
            try await cloud.createZone(zone)
            let names = ["b", "a", "c", "gone"]
            _ = try await cloud.modify(
                names.map { .create(Record(id: RecordID(recordName: $0, zoneID: zone), recordType: "Note", fields: ["n": .string($0)])) },
                in: zone, atomic: true)
            clock.set(Date(timeIntervalSince1970: 1_700_000_050))
            let gone = try #require(try await cloud.lookup([RecordID(recordName: "gone", zoneID: zone)]).first ?? nil)
            _ = try await cloud.modify([.delete(gone.id, changeTag: gone.changeTag)], in: zone, atomic: true)
            token = try await cloud.fetchChanges(in: zone, since: nil, limit: 10).token
        }
        // What the schema 3 code wrote: the same columns in a WITHOUT ROWID table keyed by name.
        try await Self.file(path).write { db in
            try db.execute(
                sql: """
                    CREATE TABLE records_v3 (
                        zone_key INTEGER NOT NULL REFERENCES zones(zone_key) ON DELETE CASCADE, record_name TEXT NOT NULL,
                        record_type TEXT NOT NULL, change_tag TEXT, seq INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
                        modified_at INTEGER NOT NULL, fields BLOB, created_at INTEGER, PRIMARY KEY (zone_key, record_name)
                    ) WITHOUT ROWID;
                    INSERT INTO records_v3 SELECT zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at FROM records;
                    DROP TABLE records;
                    ALTER TABLE records_v3 RENAME TO records;
                    CREATE UNIQUE INDEX records_by_seq ON records (zone_key, seq);
                    CREATE INDEX tombstones_by_age ON records (zone_key, modified_at) WHERE deleted = 1;
                    PRAGMA user_version = 3;
                    """)
        }
        clock.set(Date(timeIntervalSince1970: 1_700_000_100))
        let cloud = try EmbeddedCloud(path: path, configuration: configuration)
        let schema = try await Self.file(path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"),
             try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'records'") ?? "",
             try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'records_by_name'"))
        }
        #expect(schema.0 == 5 && !schema.1.contains("WITHOUT ROWID") && schema.2 == 1)
        // The feed is where it was: nothing new after the old token, everything from the start.
        let after = try await cloud.fetchChanges(in: zone, since: token, limit: 10)
        #expect(after.modified.isEmpty && after.deleted.isEmpty)
        let all = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
        #expect(all.modified.map(\.id.recordName) == ["b", "a", "c"] && all.deleted.map(\.recordName) == ["gone"])
        #expect(all.modified.allSatisfy { $0.createdAt == Timestamp(millisecondsSince1970: 1_700_000_000_000) })
        // A name taken by a record or a tombstone is still found: a create meets the record, and
        // a create of the tombstone's name makes it anew.
        let again = try await cloud.modify(
            [
                .create(Record(id: RecordID(recordName: "a", zoneID: zone), recordType: "Note", fields: ["n": .string("again")])),
                .create(Record(id: RecordID(recordName: "gone", zoneID: zone), recordType: "Note", fields: ["n": .string("back")])),
            ], in: zone, atomic: false)
        #expect(again.first?.error?.code == .serverRecordChanged)
        #expect(again.last.flatMap(Self.saved)?.createdAt == Timestamp(millisecondsSince1970: 1_700_000_100_000))
        let scanned = try await cloud.scanRecords(in: zone, ofType: "Note", after: nil, limit: 10)
        #expect(scanned.map(\.id.recordName) == ["a", "b", "c", "gone"])
    }

    private static func saved(_ result: RecordOperationResult) -> GatewayCore.Record? {
        if case .saved(let record) = result { return record }
        return nil
    }

    @Test("a schema 4 file gains the subscriptions table and keeps its records and feed")
    func migratesVersion4() async throws {
        let directory = try TemporaryDirectory(prefix: "cloud-migration-4")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        let zone = ZoneID(zoneName: "Notes")
        let token: ChangeToken
        do {
            let cloud = try EmbeddedCloud(path: path)
            try await cloud.createZone(zone)
            _ = try await cloud.modify(
                [.create(Record(id: RecordID(recordName: "kept", zoneID: zone), recordType: "Note", fields: ["n": .int64(1)]))], in: zone, atomic: true)
            token = try await cloud.currentChangeToken(in: zone)
            await cloud.close()
        }
        // What the schema 4 code wrote: everything but the subscriptions.
        try await Self.file(path).write { db in try db.execute(sql: "DROP TABLE subscriptions; PRAGMA user_version = 4") }

        let cloud = try EmbeddedCloud(path: path)
        #expect(try await Self.file(path).read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == 5)
        let all = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
        #expect(all.modified.map(\.id.recordName) == ["kept"])
        let after = try await cloud.fetchChanges(in: zone, since: token, limit: 10)
        #expect(after.modified.isEmpty && after.deleted.isEmpty, "the feed's position is kept")
        let subscription = CloudSubscription(id: "s", owner: "_owner", scope: .zone(zone), definition: Data("{}".utf8))
        try await cloud.saveSubscription(subscription)
        #expect(try await cloud.subscriptions(of: "_owner") == [subscription])
        await cloud.close()
    }
}
