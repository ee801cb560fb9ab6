import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// The settings every connection of the pool starts with.
@Suite("PostgreSQL connection pool sessions", .heavy)
struct PoolSessionSettingsTests {
    static func setting(_ name: String, _ connection: PooledConnection) async throws -> String {
        let rows = try await connection.query("SELECT current_setting(\(name))", logger: connection.logger)
        for try await (value) in rows.decode(String.self) { return value }
        return ""
    }

    @Test("pooled and dedicated connections run with JIT compilation off, where the server's default has it on")
    func jitOff() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("jit")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 2)
        let serverDefault = try await pool.withConnection(doing: "reading the default") { connection in
            let rows = try await connection.query("SELECT boot_val FROM pg_settings WHERE name = 'jit'", logger: connection.logger)
            for try await (value) in rows.decode(String.self) { return value }
            return ""
        }
        #expect(serverDefault == "on", "the test server must default to JIT on for this test to mean anything")
        let pooled = try await pool.withConnection(doing: "reading jit") { try await Self.setting("jit", $0) }
        #expect(pooled == "off")
        let inTransaction = try await pool.transaction(doing: "reading jit") { try await Self.setting("jit", $0) }
        #expect(inTransaction == "off")
        let dedicated = try await pool.openDedicatedConnection(doing: "listening")
        #expect(try await Self.setting("jit", dedicated) == "off")
        try await dedicated.close()
        await pool.close()
    }
}
