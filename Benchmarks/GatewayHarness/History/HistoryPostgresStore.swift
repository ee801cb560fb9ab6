import Foundation
import GatewayCore
import PostgresAdapter
import PostgresNIO
import PostgresSupport

/// A PostgreSQL table `note(name, title, rank)` in a schema of its own; `color` and `hue` come and go with
/// schema changes. Backups are what `pg_dump --clean -t note` saves (the rows and, unless
/// `dataOnly`, the table's triggers, which it recreates after the rows, so the restored rows are
/// never captured), and a restore is what `psql` does with that dump: the table is dropped and
/// created again.
final class HistoryPostgresStore: HistorySchemaStore {
    let namesEveryField = true
    let name: String
    let endpoint: PostgresEndpoint
    let schema: String
    let stateSchema: String
    private(set) var fields = ["title", "rank"]
    /// Per backup: the table holding its rows, and the trigger definitions it recreates.
    private var backups: [String: (table: String, triggers: [String])] = [:]
    private let pool: PostgresConnectionPool

    private var table: String { "\(SQLQuoting.identifier(schema)).note" }

    init(name: String, endpoint: PostgresEndpoint, schema: String) async throws {
        self.name = name
        self.endpoint = endpoint
        self.schema = schema
        self.stateSchema = schema + "_gateway"
        pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        try await execute([
            "DROP SCHEMA IF EXISTS \(SQLQuoting.identifier(schema)) CASCADE",
            "DROP SCHEMA IF EXISTS \(SQLQuoting.identifier(stateSchema)) CASCADE",
            "CREATE SCHEMA \(SQLQuoting.identifier(schema))",
            "CREATE TABLE \(table) (name text PRIMARY KEY, title text, rank text)",
        ])
    }

    /// Drops the store's schemas and closes its connection.
    func remove() async {
        try? await execute([
            "DROP SCHEMA IF EXISTS \(SQLQuoting.identifier(schema)) CASCADE",
            "DROP SCHEMA IF EXISTS \(SQLQuoting.identifier(stateSchema)) CASCADE",
        ])
        await pool.close()
    }

    private func execute(_ statements: [String]) async throws {
        try await pool.withConnection(doing: "history store \(name)") { connection in
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
            }
        }
    }

    private func texts(_ sql: String) async throws -> [String] {
        try await pool.withConnection(doing: "history store \(name)") { connection in
            var result: [String] = []
            for try await text in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger).decode(String.self) {
                result.append(text)
            }
            return result
        }
    }

    func addColumn(_ column: String) async throws {
        try await execute(["ALTER TABLE \(table) ADD COLUMN \(column) text"])
        fields.append(column)
    }

    func dropColumn(_ column: String) async throws {
        try await execute(["ALTER TABLE \(table) DROP COLUMN \(column)"])
        fields.removeAll { $0 == column }
    }

    func renameColumn(_ column: String, to newName: String) async throws {
        try await execute(["ALTER TABLE \(table) RENAME COLUMN \(column) TO \(newName)"])
        fields = fields.map { $0 == column ? newName : $0 }
    }

    func contents() async throws -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for text in try await texts("SELECT row_to_json(n)::text FROM \(table) n") {
            guard var object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                let record = object.removeValue(forKey: "name") as? String
            else { throw HarnessFailure("history store \(name): a row without a name") }
            result[record] = object.compactMapValues { $0 as? String }.filter { fields.contains($0.key) }
        }
        return result
    }

    func write(record: String, field: String, value: String) async throws {
        try await execute([
            "INSERT INTO \(table) (name, \(field)) VALUES (\(SQLQuoting.literal(record)), \(SQLQuoting.literal(value))) ON CONFLICT (name) DO UPDATE SET \(field) = excluded.\(field)"
        ])
    }

    func delete(record: String) async throws {
        try await execute(["DELETE FROM \(table) WHERE name = \(SQLQuoting.literal(record))"])
    }

    func configuration(zone: String) -> String {
        var url = "postgres://\(endpoint.username)@\(endpoint.host):\(endpoint.port)/\(endpoint.database)?sslmode=disable"
        if let socket = endpoint.socketDirectory { url += "&host=\(socket)" }
        return """
              - name: \(name)
                kind: postgres
                url: \(HistoryGatewayProcess.quoted(url))
                schema: \(HistoryGatewayProcess.quoted(schema))
                state_schema: \(HistoryGatewayProcess.quoted(stateSchema))
                max_connections: 1
                zone: \(zone)
                tables:
                  - table: note
                    record_type: Note
            """
    }

    func adapter(zone: ZoneID) async throws -> any ModelAdapter {
        try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: name, endpoint: endpoint, schema: schema, stateSchema: stateSchema, zoneID: zone, tables: [PostgresTableMapping(table: "note", recordType: "Note")],
                maximumConnections: 1))
    }

    func backup(to path: String) async throws {
        let copy = "\(SQLQuoting.identifier(stateSchema + "_backups")).\(SQLQuoting.identifier(URL(fileURLWithPath: path).lastPathComponent))"
        try await execute([
            "CREATE SCHEMA IF NOT EXISTS \(SQLQuoting.identifier(stateSchema + "_backups"))",
            "CREATE TABLE \(copy) AS SELECT * FROM \(table)",
        ])
        let triggers = try await texts(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = \(SQLQuoting.literal(table))::regclass AND NOT tgisinternal ORDER BY tgname")
        backups[path] = (copy, triggers)
    }

    /// Restores the dump of `path`; with `dataOnly`, only its rows (a `COPY` of the data into a
    /// table created again by hand), without the triggers.
    func restore(from path: String, dataOnly: Bool) async throws {
        guard let backup = backups[path] else { throw HarnessFailure("history store \(name): no backup \(path)") }
        let columns = try await texts(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = \(SQLQuoting.literal(stateSchema + "_backups")) AND table_name = \(SQLQuoting.literal(URL(fileURLWithPath: path).lastPathComponent)) ORDER BY ordinal_position")
        let definitions = columns.map { $0 == "name" ? "name text PRIMARY KEY" : "\($0) text" }
        try await execute(
            [
                "DROP TABLE \(table)",
                "CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))",
                "INSERT INTO \(table) SELECT * FROM \(backup.table)",
            ] + (dataOnly ? [] : backup.triggers))
        fields = (["title", "rank"] + historyOptionalColumns).filter(columns.contains)
    }

    func restore(from path: String) async throws {
        try await restore(from: path, dataOnly: false)
    }
}
