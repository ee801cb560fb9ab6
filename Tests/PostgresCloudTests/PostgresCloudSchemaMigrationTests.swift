import Foundation
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// Cloud schemas written by earlier releases (versions 1 to 4) are upgraded in place when opened.
@Suite("PostgreSQL cloud schema migration", .heavy)
struct PostgresCloudSchemaMigrationTests {
    @Test("a version 1 schema gains creation times: old records report their last save, updates keep it, a record saved again after deletion is created anew")
    func migratesVersion1() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("cloud_migration")
        let zone = ZoneID(zoneName: "Notes")
        let clock = LockedValue(Date(timeIntervalSince1970: 1_700_000_000))
        let configuration = PostgresCloud.Configuration(schema: "cloud", maximumConnections: 1, now: { clock.get() })
        let first = try await PostgresCloud.open(endpoint, configuration: configuration)
        try await first.createZone(zone)
        _ = try await first.modify(
            [.create(Record(id: RecordID(recordName: "old", zoneID: zone), recordType: "Note", fields: ["n": .int64(1)]))], in: zone, atomic: true)
        await first.close()
        // What the version 1 code created: the version 4 tables without created_at.
        try await Self.execute(
            Self.version4 + [
                "ALTER TABLE cloud.records DROP COLUMN created_at", "DELETE FROM cloud.schema_version",
                "INSERT INTO cloud.schema_version (version) VALUES (1)",
            ], on: endpoint)

        clock.set(Date(timeIntervalSince1970: 1_700_000_100))
        let cloud = try await PostgresCloud.open(endpoint, configuration: configuration)
        let old = try #require(try await cloud.lookup([RecordID(recordName: "old", zoneID: zone)]).first ?? nil)
        #expect(old.createdAt == Timestamp(millisecondsSince1970: 1_700_000_000_000))
        var edit = old
        edit["n"] = .int64(2)
        let updated = try #require(Self.saved(try await cloud.modify([.replace(edit)], in: zone, atomic: true)[0]))
        #expect(updated.createdAt == old.createdAt && updated.modifiedAt == Timestamp(millisecondsSince1970: 1_700_000_100_000))
        _ = try await cloud.modify([.delete(old.id, changeTag: updated.changeTag)], in: zone, atomic: true)
        clock.set(Date(timeIntervalSince1970: 1_700_000_200))
        let again = try #require(
            Self.saved(try await cloud.modify([.create(Record(id: old.id, recordType: "Note", fields: ["n": .int64(3)]))], in: zone, atomic: true)[0]))
        #expect(again.createdAt == Timestamp(millisecondsSince1970: 1_700_000_200_000))
        let feed = try await cloud.fetchChanges(in: zone, since: nil, limit: 10)
        #expect(feed.modified.first?.createdAt == again.createdAt)
        await cloud.close()
    }

    @Test("a version 2 schema gains the subscriptions table and keeps its records")
    func migratesVersion2() async throws {
        let (endpoint, zone, configuration, first) = try await Self.cloudHolding(["kept"], label: "cloud_migration_2")
        await first.close()
        // What the version 2 code created: everything but the subscriptions.
        try await Self.execute(
            Self.version4 + ["DROP TABLE cloud.subscriptions", "DELETE FROM cloud.schema_version", "INSERT INTO cloud.schema_version (version) VALUES (2)"],
            on: endpoint)

        let cloud = try await PostgresCloud.open(endpoint, configuration: configuration)
        #expect(try await cloud.lookup([RecordID(recordName: "kept", zoneID: zone)]).first??.recordType == "Note")
        let subscription = CloudSubscription(id: "s", owner: "_owner", scope: .database, definition: Data("{}".utf8))
        try await cloud.saveSubscription(subscription)
        #expect(try await cloud.subscriptions(of: nil) == [subscription])
        await cloud.close()
    }

    @Test("a version 3 or 4 schema gets its records keyed by zone number; its feed, tokens, lookups, tombstones and zones go on", arguments: [3, 4])
    func migratesVersion3And4(version: Int) async throws {
        let (endpoint, zone, configuration, first) = try await Self.cloudHolding(["r1", "r2", "r3", "gone"], label: "cloud_migration_\(version)")
        let other = ZoneID(zoneName: "Other")
        try await first.createZone(other)
        _ = try await first.modify([.create(Record(id: RecordID(recordName: "r1", zoneID: other), recordType: "Other"))], in: other, atomic: true)
        let gone = try #require(try await first.lookup([RecordID(recordName: "gone", zoneID: zone)]).first ?? nil)
        _ = try await first.modify([.delete(gone.id, changeTag: gone.changeTag)], in: zone, atomic: true)
        let token = try await first.fetchChanges(in: zone, since: nil, limit: 2).token
        await first.close()
        // Version 3 had the feed's index on the zone's plain columns.
        let version3 = [
            "DROP INDEX cloud.records_in_feed_order", "CREATE UNIQUE INDEX records_by_seq ON cloud.records (owner_name, zone_name, seq)",
        ]
        try await Self.execute(
            Self.version4 + (version == 3 ? version3 : []) + [
                "DELETE FROM cloud.schema_version", "INSERT INTO cloud.schema_version (version) VALUES (\(version))",
            ], on: endpoint)

        let cloud = try await PostgresCloud.open(endpoint, configuration: configuration)
        let indexes = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "listing indexes") { connection in
            var names: [String] = []
            let rows = try await connection.query("SELECT indexname FROM pg_indexes WHERE schemaname = 'cloud' AND tablename = 'records' ORDER BY 1", logger: connection.logger)
            for try await name in rows.decode(String.self) { names.append(name) }
            return names
        }
        #expect(indexes == ["records_in_feed_order", "records_pkey", "tombstones_by_age"])
        let rest = try await cloud.fetchChanges(in: zone, since: token, limit: 10)
        #expect(rest.modified.map(\.id.recordName) == ["r3"] && rest.deleted.map(\.recordName) == ["gone"])
        #expect(try await cloud.lookup([RecordID(recordName: "r1", zoneID: other)]).first??.recordType == "Other")
        #expect(try await cloud.fetchChanges(in: other, since: nil, limit: 10).modified.map(\.id.recordName) == ["r1"])
        // A zone created after the upgrade gets a number of its own.
        let third = ZoneID(zoneName: "Third")
        try await cloud.createZone(third)
        _ = try await cloud.modify([.create(Record(id: RecordID(recordName: "r1", zoneID: third), recordType: "Third"))], in: third, atomic: true)
        #expect(try await cloud.lookup([RecordID(recordName: "r1", zoneID: third)]).first??.recordType == "Third")
        _ = try await cloud.modify([.create(Record(id: RecordID(recordName: "r4", zoneID: zone), recordType: "Note"))], in: zone, atomic: true)
        #expect(try await cloud.fetchChanges(in: zone, since: rest.token, limit: 10).modified.map(\.id.recordName) == ["r4"])
        #expect(try await cloud.lookup([RecordID(recordName: "r2", zoneID: zone), RecordID(recordName: "none", zoneID: zone)]).map { $0?.id.recordName } == ["r2", nil])
        // The tombstone came across: saving the name again without a tag creates it anew.
        let revived = try await cloud.modify([.create(Record(id: gone.id, recordType: "Note"))], in: zone, atomic: true)
        #expect(Self.saved(revived[0]) != nil)
        await cloud.close()
    }

    /// A cloud in schema `cloud` of a fresh database, holding `Note` records of these names in zone `Notes`.
    private static func cloudHolding(_ names: [String], label: String) async throws
        -> (PostgresEndpoint, ZoneID, PostgresCloud.Configuration, PostgresCloud)
    {
        let endpoint = try await PostgresTestServer.freshDatabase(label)
        let zone = ZoneID(zoneName: "Notes")
        let configuration = PostgresCloud.Configuration(schema: "cloud", maximumConnections: 1)
        let cloud = try await PostgresCloud.open(endpoint, configuration: configuration)
        try await cloud.createZone(zone)
        _ = try await cloud.modify(
            names.enumerated().map { .create(Record(id: RecordID(recordName: $1, zoneID: zone), recordType: "Note", fields: ["n": .int64(Int64($0 + 1))])) },
            in: zone, atomic: true)
        return (endpoint, zone, configuration, cloud)
    }

    /// Turns a current schema's records back into version 4's: keyed by the zone's owner and name,
    /// the feed's index on those columns in the `"C"` collation, no zone numbers.
    private static let version4 = [
        """
        CREATE TABLE cloud.records_v4 AS
        SELECT z.owner_name, z.zone_name, r.record_name, r.record_type, r.change_tag, r.seq, r.deleted, r.modified_at, r.fields, r.created_at
        FROM cloud.records AS r JOIN cloud.zones AS z USING (zone_key)
        """,
        "DROP TABLE cloud.records", "ALTER TABLE cloud.records_v4 RENAME TO records",
        "ALTER TABLE cloud.records ALTER COLUMN deleted SET DEFAULT false",
        "ALTER TABLE cloud.records ADD CONSTRAINT records_pkey PRIMARY KEY (owner_name, zone_name, record_name)",
        #"CREATE UNIQUE INDEX records_in_feed_order ON cloud.records ((owner_name COLLATE "C"), (zone_name COLLATE "C"), seq)"#,
        "CREATE INDEX tombstones_by_age ON cloud.records (owner_name, zone_name, modified_at) WHERE deleted",
        "DROP INDEX cloud.zones_by_key", "ALTER TABLE cloud.zones DROP COLUMN zone_key",
    ]

    /// Runs `statements` in order, to turn the schema back into an earlier release's.
    private static func execute(_ statements: [String], on endpoint: PostgresEndpoint) async throws {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "making an earlier schema") { connection in
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
            }
        }
    }

    private static func saved(_ result: RecordOperationResult) -> Record? {
        if case .saved(let record) = result { return record }
        return nil
    }
}
