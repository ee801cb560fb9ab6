import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Testing

/// A cloud file written by the previous release (schema 1) is upgraded in place when opened.
@Suite("Embedded cloud schema migration")
struct SchemaMigrationTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/previous-release/cloud.sqlite")

    @Test("a schema 1 file becomes schema 2 (records keyed WITHOUT ROWID), keeping every record, tombstone and token")
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
        #expect(after.0 == 2)
        #expect(after.1.contains("WITHOUT ROWID"))
        // The token at the end of the feed is still the end: nothing is fetched twice.
        let again = try await cloud.fetchChanges(in: zone, since: page.token, limit: 2_000)
        #expect(again.modified.isEmpty && again.deleted.isEmpty)
        // And the migrated table takes new saves.
        let saved = try await cloud.modify(
            [.create(Record(id: RecordID(recordName: "after-migration", zoneID: zone), recordType: "Note", fields: ["n": .int64(1)]))],
            in: zone, atomic: true)
        #expect(saved.allSatisfy { $0.error == nil })
    }
}
