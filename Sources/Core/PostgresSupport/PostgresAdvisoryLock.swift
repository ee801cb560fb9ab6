import Foundation
import PostgresNIO

/// A session-level advisory lock held on a connection of its own.
///
/// The server releases it when the connection ends, so a gateway that crashes never leaves it
/// stuck. The key is hashed by the server (`hashtextextended`) from a text name.
public final class PostgresAdvisoryLock: Sendable {
    /// The lock's name.
    public let name: String
    private let connection: PooledConnection

    private init(name: String, connection: PooledConnection) {
        self.name = name
        self.connection = connection
    }

    deinit {
        connection.closeWithoutWaiting()
    }

    /// Takes the lock named `name` without waiting; `nil` when another session holds it.
    public static func tryAcquire(_ name: String, on endpoint: PostgresEndpoint) async throws -> PostgresAdvisoryLock? {
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        let connection = try await pool.openDedicatedConnection(doing: "taking the lock \(name)")
        do {
            let rows = try await connection.query("SELECT pg_try_advisory_lock(hashtextextended(\(name), 0))", logger: connection.logger)
            var acquired = false
            for try await (value) in rows.decode(Bool.self) { acquired = value }
            guard acquired else {
                try? await connection.close()
                return nil
            }
            return PostgresAdvisoryLock(name: name, connection: connection)
        } catch {
            try? await connection.close()
            throw PostgresFailure.from(error, doing: "taking the lock \(name)", on: endpoint)
        }
    }

    /// Releases the lock and closes its connection.
    public func release() async {
        try? await connection.close()
    }
}
