import Foundation
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// Runs the adapter conformance suite on a real PostgreSQL server: each adapter syncs a schema of
/// its own in the test's database, edited through another connection as another program would.
final class PostgresAdapterHarness: AdapterConformanceHarness {
    static let schema = """
        CREATE TABLE "Note" (name text PRIMARY KEY, title text, rank bigint CHECK (rank IS NULL OR rank >= 0))
        """
    let endpoint: PostgresEndpoint
    let pool: PostgresConnectionPool
    private let opened = LockedValue<[PostgresAdapter]>([])

    init(label: String) async throws {
        endpoint = try await PostgresTestServer.freshDatabase(label)
        pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 2)
    }

    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        let schema = "s_" + UUID().uuidString.prefix(8).lowercased()
        try await execute("CREATE SCHEMA \(schema)")
        try await execute(Self.schema.replacingOccurrences(of: "CREATE TABLE \"Note\"", with: "CREATE TABLE \(schema).\"Note\""))
        let adapter = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: "conformance", endpoint: endpoint, schema: schema, zoneID: zone, tables: [PostgresTableMapping(table: "Note")]))
        opened.withLock { $0.append(adapter) }
        return adapter
    }

    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        var title: String?
        if case .string(let value)? = record["title"] { title = value }
        var rank: Int64?
        if case .int64(let value)? = record["rank"] { rank = value }
        let table = try table(of: adapter)
        try await pool.withConnection(doing: "a local save") { [title, rank] connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (name, title, rank) VALUES (\(record.id.recordName), \(title), \(rank))
                ON CONFLICT (name) DO UPDATE SET title = excluded.title, rank = excluded.rank
                """, logger: connection.logger)
        }
    }

    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        let table = try table(of: adapter)
        try await pool.withConnection(doing: "a local delete") { connection in
            try await connection.query("DELETE FROM \(unescaped: table) WHERE name = \(id.recordName)", logger: connection.logger)
        }
    }

    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        let table = try table(of: adapter)
        let zone = adapter.zoneID
        return try await pool.withConnection(doing: "reading the table") { connection in
            let rows = try await connection.query("SELECT name, title, rank FROM \(unescaped: table)", logger: connection.logger)
            var records: [RecordID: Record] = [:]
            for try await (name, title, rank) in rows.decode((String, String?, Int64?).self) {
                var fields: [String: FieldValue] = [:]
                if let title { fields["title"] = .string(title) }
                if let rank { fields["rank"] = .int64(rank) }
                let id = RecordID(recordName: name, zoneID: zone)
                records[id] = Record(id: id, recordType: "Note", fields: fields)
            }
            return records
        }
    }

    func recordThatFailsToApply(zone: ZoneID) -> Record {
        Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: "Note", fields: ["rank": .int64(-1)])
    }

    /// Closes every adapter and the harness's own connections.
    func closeAll() async {
        for adapter in opened.withLock({ $0 }) { await adapter.close() }
        await pool.close()
    }

    func execute(_ sql: String) async throws {
        try await pool.withConnection(doing: "a test statement") { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
        }
    }

    private func table(of adapter: any ModelAdapter) throws -> String {
        let adapter = try unwrap(adapter as? PostgresAdapter, "the harness only handles PostgreSQL adapters")
        return "\(adapter.configuration.schema).\"Note\""
    }
}
