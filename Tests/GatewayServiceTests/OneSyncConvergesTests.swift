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
}
