import Foundation
import GRDB
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// What a user who runs `gateway sync` once expects of two stores on one zone: whichever side
/// was edited, both hold the edit when the sync returns.
@Suite("One gateway sync converges a zone", .heavy)
struct OneSyncConvergesTests {
    @Test("SQLite and PostgreSQL on one zone: an edit on either side is in both after one gateway sync", arguments: [1, 2])
    func sqliteAndPostgres(parallelism: Int) async throws {
        let directory = try TemporaryDirectory(prefix: "one-sync")
        defer { directory.remove() }
        let store = try await PostgresTestServer.freshDatabase("one_sync_\(parallelism)")
        try await PostgresConnectionPool.withOneConnection(to: store, doing: "creating the table") { connection in
            _ = try await connection.query("CREATE TABLE note (id bigint PRIMARY KEY, title text)", logger: connection.logger)
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let sqlite = try DatabaseQueue(path: directory.path("app.sqlite"), configuration: configuration)
        try await sqlite.write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute(sql: "INSERT INTO note (id, title) VALUES (1, 'first'), (2, 'second')")
        }
        // SQLite syncs first: an ordered sync has to come back to it for PostgreSQL's edits.
        let config = """
            gateway: { parallelism: \(parallelism) }
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: Notes, tables: [{ table: note, record_type: Note }] }
              - { name: crm, kind: postgres, url: "${STORE_URL}", zone: Notes, tables: [{ table: note, record_type: Note }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let environment = ["STORE_URL": store.description]
        func sync() async throws {
            let result = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url, environment: environment)
            #expect(result.status == 0, "\(result)")
        }
        func sqliteRows() async throws -> [String] {
            try await sqlite.read { db in try Row.fetchAll(db, sql: "SELECT id, title FROM note ORDER BY id").map { "\($0[0] as Int64)|\($0[1] as String)" } }
        }
        func postgresRows() async throws -> [String] {
            try await PostgresConnectionPool.withOneConnection(to: store, doing: "reading") { connection in
                var rows: [String] = []
                for try await (id, title) in try await connection.query("SELECT id, title FROM note ORDER BY id", logger: connection.logger)
                    .decode((Int64, String).self)
                {
                    rows.append("\(id)|\(title)")
                }
                return rows
            }
        }
        func postgres(_ statements: String...) async throws {
            try await PostgresConnectionPool.withOneConnection(to: store, doing: "editing") { connection in
                for sql in statements { _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger) }
            }
        }

        try await sync()
        #expect(try await postgresRows() == ["1|first", "2|second"])

        try await postgres("UPDATE note SET title = 'edited in PostgreSQL' WHERE id = 1", "INSERT INTO note VALUES (3, 'new in PostgreSQL')")
        try await sync()
        #expect(try await sqliteRows() == ["1|edited in PostgreSQL", "2|second", "3|new in PostgreSQL"], "one sync brings PostgreSQL's edits to SQLite")

        try await sqlite.write { db in try db.execute(sql: "UPDATE note SET title = 'edited in SQLite' WHERE id = 2; DELETE FROM note WHERE id = 3") }
        try await sync()
        #expect(try await postgresRows() == ["1|edited in PostgreSQL", "2|edited in SQLite"], "one sync brings SQLite's edits to PostgreSQL")

        try await postgres("DELETE FROM note WHERE id = 1")
        try await sync()
        #expect(try await sqliteRows() == ["2|edited in SQLite"])
        let status = try await GatewayCLI.run(["status", "--fail-on-changes"], in: directory.url, environment: environment)
        #expect(status.status == 0, "nothing pending: \(status)")
    }

    @Test("status of PostgreSQL as a role that may only read: not set up before the first sync (nothing created), then the edit that waits")
    func postgresStatusReadOnly() async throws {
        let directory = try TemporaryDirectory(prefix: "pg-status")
        defer { directory.remove() }
        let store = try await PostgresTestServer.freshDatabase("pg_status_reader")
        var reader = store
        reader.username = "gateway_status_reader"
        try await PostgresConnectionPool.withOneConnection(to: store, doing: "setting up") { connection in
            for sql in [
                "CREATE TABLE note (id bigint PRIMARY KEY, title text)", "INSERT INTO note VALUES (1, 'one')",
                "DO $$ BEGIN CREATE ROLE gateway_status_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
                "GRANT SELECT ON note TO gateway_status_reader",
            ] {
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
            }
        }
        let config = """
            adapters:
              - { name: crm, kind: postgres, url: "${STORE_URL}", zone: Notes, tables: [{ table: note, record_type: Note }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        func status(as endpoint: PostgresEndpoint) async throws -> CLIResult {
            try await GatewayCLI.run(["status"], in: directory.url, environment: ["STORE_URL": endpoint.description])
        }
        func stateSchemaExists() async throws -> Bool {
            try await PostgresConnectionPool.withOneConnection(to: store, doing: "looking") { connection in
                var exists = false
                for try await (value) in try await connection.query(
                    "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'gateway')", logger: connection.logger
                ).decode(Bool.self) {
                    exists = value
                }
                return exists
            }
        }

        let before = try await status(as: reader)
        #expect(before.status == 0, "\(before)")
        #expect(before.stdout.contains("crm      postgres  Notes  yes            0       0    400  never synced"), "\(before)")
        #expect(before.stdout.contains("note: crm: the gateway has not set this database up yet"), "\(before)")
        #expect(try await stateSchemaExists() == false, "status created nothing")

        let sync = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url, environment: ["STORE_URL": store.description])
        #expect(sync.status == 0, "\(sync)")
        try await PostgresConnectionPool.withOneConnection(to: store, doing: "editing and granting") { connection in
            for sql in [
                "UPDATE note SET title = 'edited' WHERE id = 1", "GRANT USAGE ON SCHEMA gateway TO gateway_status_reader",
                "GRANT SELECT ON ALL TABLES IN SCHEMA gateway TO gateway_status_reader",
            ] {
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
            }
        }
        let after = try await status(as: reader)
        #expect(after.status == 0, "\(after)")
        #expect(after.stdout.contains("crm      postgres  Notes  yes            1       0    400  synced"), "\(after)")
        #expect(!after.stdout.contains("note:"), "\(after)")
    }
}
