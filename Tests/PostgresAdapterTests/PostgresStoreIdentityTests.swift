import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// A PostgreSQL table restored behind the gateway's back never rolls the zone back (DESIGN D4).
@Suite("PostgreSQL tables restored from a dump", .heavy)
struct PostgresStoreIdentityTests {
    static let zone = ZoneID(zoneName: "Restored")

    /// A gateway (one device id, as the default config) over the table `note` of `schema`.
    static func gateway(_ schema: String, endpoint: PostgresEndpoint, cloud: EmbeddedCloud) async throws -> (Synchronizer, PostgresAdapter) {
        let adapter = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: schema, endpoint: endpoint, schema: schema, zoneID: zone, tables: [PostgresTableMapping(table: "note")]))
        return (Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: "gateway")), adapter)
    }

    /// Two gateways, `a` and `b`, each over the table `note` (with `columns`) of its own schema in
    /// a fresh database, on one embedded cloud in a temporary folder; `a`'s table starts with
    /// `rows` (what follows `INSERT INTO a.note`).
    struct Pair {
        let endpoint: PostgresEndpoint
        let pool: PostgresConnectionPool
        let directory: TemporaryDirectory
        let cloud: EmbeddedCloud
        let a: Synchronizer
        let b: Synchronizer
        private let adapters: [PostgresAdapter]

        init(_ database: String, columns: String, rows: String) async throws {
            endpoint = try await PostgresTestServer.freshDatabase(database)
            pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
            try await PostgresConnectionPool.execute(
                ["CREATE SCHEMA a", "CREATE SCHEMA b", "CREATE TABLE a.note (\(columns))", "CREATE TABLE b.note (\(columns))", "INSERT INTO a.note \(rows)"],
                on: endpoint, doing: "setting up")
            directory = try TemporaryDirectory(prefix: "pg-\(database)")
            cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            let (a, adapterA) = try await PostgresStoreIdentityTests.gateway("a", endpoint: endpoint, cloud: cloud)
            let (b, adapterB) = try await PostgresStoreIdentityTests.gateway("b", endpoint: endpoint, cloud: cloud)
            (self.a, self.b, adapters) = (a, b, [adapterA, adapterB])
        }

        /// Closes the adapters and the pool.
        func close() async {
            for adapter in adapters { await adapter.close() }
            await pool.close()
        }
    }

    /// The one number `sql` selects.
    static func count(_ sql: String, pool: PostgresConnectionPool) async throws -> Int64 {
        try await pool.withConnection(doing: "counting") { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
            for try await value in rows.decode(Int64.self) { return value }
            return 0
        }
    }

    /// What `gateway status` reads of the gateway over `tables` of `schema`.
    static func status(_ schema: String, endpoint: PostgresEndpoint, tables: [String] = ["note"]) async throws -> StoreStatusSnapshot {
        try await PostgresAdapter.readStatus(
            PostgresAdapterConfiguration(name: schema, endpoint: endpoint, schema: schema, zoneID: zone, tables: tables.map { PostgresTableMapping(table: $0) }))
    }

    /// Row id → title of table `note` in `schema`.
    static func titles(_ schema: String, pool: PostgresConnectionPool) async throws -> [Int64: String] {
        try await pool.withConnection(doing: "reading") { connection in
            var result: [Int64: String] = [:]
            let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT id, title FROM \(schema).note"), logger: connection.logger)
            for try await (id, title) in rows.decode((Int64, String).self) { result[id] = title }
            return result
        }
    }

    @Test("a table dropped, created again and filled from an older dump joins the zone: the newer edit made elsewhere survives")
    func tableRestoredFromDump() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("restored_table")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        let create = "CREATE TABLE %@.note (id bigint PRIMARY KEY, title text)"
        let seed = "INSERT INTO %@.note VALUES (1, 'one'), (2, 'two'), (3, 'three')"
        try await PostgresConnectionPool.execute(
            ["CREATE SCHEMA a", "CREATE SCHEMA b"] + ["a", "b"].map { create.replacingOccurrences(of: "%@", with: $0) }
                + [seed.replacingOccurrences(of: "%@", with: "a")],
            on: endpoint, doing: "setting up")
        let directory = try TemporaryDirectory(prefix: "pg-restored")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let (a, adapterA) = try await Self.gateway("a", endpoint: endpoint, cloud: cloud)
        let (b, adapterB) = try await Self.gateway("b", endpoint: endpoint, cloud: cloud)
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresConnectionPool.execute(["UPDATE b.note SET title = 'edited in b' WHERE id = 2"], on: endpoint, doing: "editing")
        try await Synchronizer.syncInTurns([b, a])
        #expect(try await Self.titles("a", pool: pool)[2] == "edited in b")

        // The operator restores a.note from a dump taken before the edit.
        try await PostgresConnectionPool.execute(
            ["DROP TABLE a.note", create.replacingOccurrences(of: "%@", with: "a"), seed.replacingOccurrences(of: "%@", with: "a")],
            on: endpoint, doing: "restoring")
        // Status sees it before the sync does: nothing captured the restore's changes.
        let restored = try await Self.status("a", endpoint: endpoint)
        #expect(restored.hasChanges)
        #expect(restored.note?.contains("table note was created again since the last sync") == true, "\(restored)")
        #expect(restored.note?.contains("--store-wins a") == true)
        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "row 2 met the cloud without a common ancestor and the cloud's version won")
        #expect(report.adapters[0].uploaded == 0)
        #expect(try await b.sync().succeeded)
        let expected: [Int64: String] = [1: "one", 2: "edited in b", 3: "three"]
        #expect(try await Self.titles("a", pool: pool) == expected)
        #expect(try await Self.titles("b", pool: pool) == expected)
        let synced = try await Self.status("a", endpoint: endpoint)
        #expect(synced.note == nil, "the sync put the capture back: \(synced)")
        #expect(!synced.hasChanges)

        // A table added to the configuration: none of its rows is synced yet.
        try await PostgresConnectionPool.execute(["CREATE TABLE a.extra (id bigint PRIMARY KEY, title text)"], on: endpoint, doing: "adding")
        let added = try await Self.status("a", endpoint: endpoint, tables: ["note", "extra"])
        #expect(added.hasChanges)
        #expect(added.note == "table extra is configured but not synced yet: the next sync installs its change capture and syncs every row", "\(added)")
        await adapterA.close()
        await adapterB.close()
        await pool.close()
    }

    @Test("a table restored with pg_dump --clean (its triggers recreated after its rows) joins the zone; its edits lost with the old table delete nothing")
    func tableRestoredWithItsTriggers() async throws {
        let pair = try await Pair("restored_with_triggers", columns: "id bigint PRIMARY KEY, title text", rows: "VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        defer { pair.directory.remove() }
        let (endpoint, pool, directory, a, b) = (pair.endpoint, pair.pool, pair.directory, pair.a, pair.b)
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresTestServer.dump(table: "a.note", of: endpoint, to: directory.path("a-note.sql"))
        #expect(try String(contentsOfFile: directory.path("a-note.sql"), encoding: .utf8).contains("CREATE TRIGGER"), "the dump holds the capture triggers")

        try await PostgresConnectionPool.execute(["INSERT INTO a.note VALUES (4, 'four')"], on: endpoint, doing: "inserting")
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresConnectionPool.execute(["UPDATE b.note SET title = 'edited in b' WHERE id = 2"], on: endpoint, doing: "editing b")
        try await Synchronizer.syncInTurns([b, a])
        // An edit that never left a, then the restore of the dump taken before row 4 existed.
        try await PostgresConnectionPool.execute(["UPDATE a.note SET title = 'four, unsent' WHERE id = 4"], on: endpoint, doing: "editing a")
        try await PostgresTestServer.runScript(directory.path("a-note.sql"), on: endpoint)
        // The dump put capture triggers back, on a table with another object id.
        let restored = try await Self.status("a", endpoint: endpoint)
        #expect(restored.hasChanges)
        #expect(restored.note?.contains("table note was created again since the last sync") == true, "\(restored)")

        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "row 2 met the cloud without a common ancestor and the cloud's version won")
        #expect(report.adapters[0].deletedRemotely == 0, "row 4, missing from the restored table, was deleted by no one")
        #expect(report.adapters[0].uploaded == 0)
        #expect(try await b.sync().succeeded)
        let expected: [Int64: String] = [1: "one", 2: "edited in b", 3: "three", 4: "four"]
        #expect(try await Self.titles("a", pool: pool) == expected)
        #expect(try await Self.titles("b", pool: pool) == expected)
        await pair.close()
    }

    @Test("a dump holding an edit that had not synced yet joins the zone: the edit meets the cloud without an ancestor and is reported, never uploaded as an edit")
    func dumpHoldingAnUnsyncedEdit() async throws {
        let pair = try await Pair("dump_unsynced_edit", columns: "id bigint PRIMARY KEY, title text", rows: "VALUES (1, 'one'), (2, 'two')")
        defer { pair.directory.remove() }
        let (endpoint, pool, directory, a, b) = (pair.endpoint, pair.pool, pair.directory, pair.a, pair.b)
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresConnectionPool.execute(["UPDATE a.note SET title = 'edited in a' WHERE id = 2"], on: endpoint, doing: "editing a")
        try await PostgresTestServer.dump(table: "a.note", of: endpoint, to: directory.path("a-note.sql"))
        try await PostgresTestServer.runScript(directory.path("a-note.sql"), on: endpoint)

        // Whether the dump was taken after the edit or before it cannot be told, and a dump older
        // than what was synced taken for an edit would upload its stale values: the rejoin has no
        // ancestor, the cloud's version wins, and the conflict is reported.
        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1)
        #expect(report.adapters[0].uploaded == 0)
        #expect(try await b.sync().succeeded)
        #expect(try await Self.titles("b", pool: pool)[2] == "two")
        await pair.close()
    }

    @Test("a row a dump holds exactly as it was synced takes the cloud's newer version, a field cleared since included")
    func dumpHoldingTheSyncedVersion() async throws {
        let pair = try await Pair("dump_synced_version", columns: "id bigint PRIMARY KEY, title text, rank text", rows: "VALUES (1, 'one', 'first'), (2, 'two', 'second')")
        defer { pair.directory.remove() }
        let (endpoint, pool, directory, a, b) = (pair.endpoint, pair.pool, pair.directory, pair.a, pair.b)
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresTestServer.dump(table: "a.note", of: endpoint, to: directory.path("a-note.sql"))

        // b deletes row 1 and creates it again with a title only; a, not synced since, is then
        // restored from its dump, which holds row 1 as a last synced it.
        try await PostgresConnectionPool.execute(["DELETE FROM b.note WHERE id = 1"], on: endpoint, doing: "deleting in b")
        #expect(try await b.sync().succeeded)
        #expect(try await b.sync().succeeded)
        try await PostgresConnectionPool.execute(["INSERT INTO b.note VALUES (1, 'one again', NULL)"], on: endpoint, doing: "creating in b")
        #expect(try await b.sync().succeeded)
        try await PostgresTestServer.runScript(directory.path("a-note.sql"), on: endpoint)

        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 0, "the dump's row is the synced version, no edit")
        #expect(report.adapters[0].conflictCount == 0)
        #expect(try await b.sync().succeeded)
        for schema in ["a", "b"] {
            #expect(try await Self.count("SELECT count(*) FROM \(schema).note WHERE id = 1 AND title = 'one again' AND rank IS NULL", pool: pool) == 1)
            #expect(try await Self.count("SELECT count(*) FROM \(schema).note WHERE id = 2 AND title = 'two' AND rank = 'second'", pool: pool) == 1)
        }
        await pair.close()
    }

    @Test("a table on an older schema never erases a column it lacks; the column, added later, gets the cloud's values")
    func olderSchema() async throws {
        let pair = try await Pair("older_schema", columns: "id bigint PRIMARY KEY, title text", rows: "SELECT g, 'one' FROM generate_series(1, 20) g")
        defer { pair.directory.remove() }
        let (endpoint, pool, a, b) = (pair.endpoint, pair.pool, pair.a, pair.b)
        func count(_ sql: String) async throws -> Int64 { try await Self.count(sql, pool: pool) }
        try await Synchronizer.syncInTurns([a, b])
        try await PostgresConnectionPool.execute(
            ["ALTER TABLE b.note ADD COLUMN color text", "UPDATE b.note SET color = 'red'"], on: endpoint, doing: "upgrading b")
        try await Synchronizer.syncInTurns([b, a])
        try await PostgresConnectionPool.execute(["UPDATE a.note SET title = 'edited in a' WHERE id <= 10"], on: endpoint, doing: "editing a")
        try await Synchronizer.syncInTurns([a, b, a, b])
        #expect(try await count("SELECT count(*) FROM b.note WHERE color = 'red'") == 20, "no color was erased")
        #expect(try await count("SELECT count(*) FROM b.note WHERE title = 'edited in a'") == 10)

        try await PostgresConnectionPool.execute(["ALTER TABLE a.note ADD COLUMN color text"], on: endpoint, doing: "upgrading a")
        #expect(try await a.sync().succeeded)
        #expect(try await count("SELECT count(*) FROM a.note WHERE color = 'red'") == 20, "the added column received the cloud's values")
        await pair.close()
    }

    @Test("a renamed column keeps its values: they are uploaded under the new name, and the old field stays in the zone")
    func columnRenamed() async throws {
        let pair = try await Pair("renamed_column", columns: "id bigint PRIMARY KEY, title text, color text", rows: "SELECT g, 'one', 'red' FROM generate_series(1, 10) g")
        defer { pair.directory.remove() }
        let (endpoint, pool, cloud, a, b) = (pair.endpoint, pair.pool, pair.cloud, pair.a, pair.b)
        func count(_ sql: String) async throws -> Int64 { try await Self.count(sql, pool: pool) }
        try await Synchronizer.syncInTurns([a, b])

        try await PostgresConnectionPool.execute(
            ["ALTER TABLE a.note RENAME COLUMN color TO hue", "UPDATE a.note SET title = 'edited in a' WHERE id = 1"], on: endpoint, doing: "renaming")
        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0)
        #expect(try await count("SELECT count(*) FROM a.note WHERE hue = 'red'") == 10, "the renamed column kept its values")
        #expect(try await b.sync().succeeded)
        #expect(try await count("SELECT count(*) FROM b.note WHERE color = 'red'") == 10, "the old field stayed in the zone")
        #expect(try await count("SELECT count(*) FROM b.note WHERE title = 'edited in a'") == 1)
        let records = try await zoneContents(of: cloud, zone: Self.zone)
        #expect(records.values.filter { $0["hue"] == .string("red") }.count == 10, "the values travel under the new name")
        await pair.close()
    }

    @Test("a column dropped and added again between two syncs gets the cloud's values back, and a row edited meanwhile keeps its edit")
    func columnDroppedAndAddedAgain() async throws {
        let pair = try await Pair("readded_column", columns: "id bigint PRIMARY KEY, title text, color text", rows: "SELECT g, 'one', 'red' FROM generate_series(1, 10) g")
        defer { pair.directory.remove() }
        let (endpoint, pool, a, b) = (pair.endpoint, pair.pool, pair.a, pair.b)
        func count(_ sql: String) async throws -> Int64 { try await Self.count(sql, pool: pool) }
        try await Synchronizer.syncInTurns([a, b])

        // A migration and its rollback with no sync in between; then row 1's title and row 2's
        // color are edited.
        try await PostgresConnectionPool.execute(
            ["ALTER TABLE b.note DROP COLUMN color", "ALTER TABLE b.note ADD COLUMN color text", "UPDATE b.note SET title = 'edited in b' WHERE id = 1",
             "UPDATE b.note SET color = 'blue' WHERE id = 2"],
            on: endpoint, doing: "migrating b")
        let report = try await b.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 2, "the two edits, and no emptied color, were uploaded")
        #expect(try await count("SELECT count(*) FROM b.note WHERE color = 'red'") == 9, "the emptied colors came back from the cloud")
        #expect(try await a.sync().succeeded)
        #expect(try await count("SELECT count(*) FROM a.note WHERE color = 'red'") == 9)
        #expect(try await count("SELECT count(*) FROM a.note WHERE color = 'blue' AND id = 2") == 1)
        #expect(try await count("SELECT count(*) FROM a.note WHERE title = 'edited in b' AND color = 'red'") == 1)
        await pair.close()
    }
}
