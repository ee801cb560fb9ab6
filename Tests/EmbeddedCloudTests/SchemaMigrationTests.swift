import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Testing

/// Cloud files written by earlier releases (schema 1 and 2) are upgraded in place when opened.
@Suite("Embedded cloud schema migration")
struct SchemaMigrationTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/previous-release/cloud.sqlite")

    @Test("a schema 1 file becomes schema 3 (records keyed WITHOUT ROWID, creation times), keeping every record, tombstone and token")
    func migratesVersion1() async throws {
        let directory = try TemporaryDirectory(prefix: "cloud-migration")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: path)
        let before = try await DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"), try Int.fetchOne(db, sql: "SELECT count(*) FROM records JOIN zones USING (zone_key) WHERE zone_name = 'Notes'"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM records JOIN zones USING (zone_key) WHERE zone_name = 'Notes' AND deleted = 1"))
        }
        #expect(before.0 == 1)

        let cloud = try EmbeddedCloud(path: path)
        let zone = ZoneID(zoneName: "Notes")
        let page = try await cloud.fetchChanges(in: zone, since: nil, limit: 2_000)
        #expect(page.modified.count + page.deleted.count == before.1)
        #expect(page.deleted.count == before.2)
        let after = try await DatabaseQueue(path: path).read { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version"),
             try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'records'") ?? "")
        }
        #expect(after.0 == 3)
        #expect(after.1.contains("WITHOUT ROWID"))
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
        try await DatabaseQueue(path: path).write { db in
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

    private static func saved(_ result: RecordOperationResult) -> GatewayCore.Record? {
        if case .saved(let record) = result { return record }
        return nil
    }
}
