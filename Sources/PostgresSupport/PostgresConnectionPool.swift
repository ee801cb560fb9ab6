import Foundation
import Logging
import PostgresNIO

/// A few reusable connections to one database, opened on demand.
///
/// PostgresNIO's own `PostgresClient` needs a `run()` task for its lifetime; the gateway's clouds
/// and adapters are plain values opened by a command, so this pool lends connections directly
/// and needs no background task. A connection that failed for any reason other than a server
/// error is closed rather than lent again.
public actor PostgresConnectionPool {
    public nonisolated let endpoint: PostgresEndpoint
    public nonisolated let maximumConnections: Int
    private let logger: Logger
    private var idle: [PostgresConnection] = []
    private var openCount = 0
    private var nextID = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isClosed = false

    /// - Parameter maximumConnections: at most this many connections are open at once; further
    ///   callers wait for one to be returned.
    public init(endpoint: PostgresEndpoint, maximumConnections: Int = 4, logger: Logger? = nil) {
        self.endpoint = endpoint
        self.maximumConnections = max(1, maximumConnections)
        self.logger = logger ?? Logger(label: "gateway.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    deinit {
        idle.forEach { $0.closeWithoutWaiting() }
    }

    /// Runs `body` with a connection of its own.
    @discardableResult
    public nonisolated func withConnection<T: Sendable>(
        doing what: String, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await checkOut(doing: what)
        do {
            let value = try await body(connection)
            await checkIn(connection, reusable: true)
            return value
        } catch let error as PSQLError {
            await checkIn(connection, reusable: error.code == .server && !connection.isClosed)
            throw PostgresFailure.from(error, doing: what, on: endpoint)
        } catch {
            // The caller's own error (such as a refused request); the connection is fine.
            await checkIn(connection, reusable: !connection.isClosed)
            throw error
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    /// - Parameter isolation: the SQL isolation level, such as `REPEATABLE READ READ ONLY`.
    @discardableResult
    public nonisolated func transaction<T: Sendable>(
        doing what: String, isolation: String = "READ COMMITTED", _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection(doing: what) { connection in
            let logger = connection.logger
            try await connection.query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation)"), logger: logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: logger)
                return value
            } catch {
                // A failed rollback means a broken connection; the pool then closes it.
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    /// Opens a connection that is not pooled (for `LISTEN`); the caller closes it.
    public nonisolated func openDedicatedConnection(doing what: String) async throws -> PostgresConnection {
        do {
            let id = await takeID()
            return try await PostgresConnection.connect(
                configuration: try endpoint.connectionConfiguration(), id: id, logger: logger)
        } catch {
            throw PostgresFailure.from(error, doing: what, on: endpoint)
        }
    }

    /// Closes every idle connection; connections in use close when returned.
    public func close() async {
        isClosed = true
        let connections = idle
        idle = []
        openCount -= connections.count
        for connection in connections { try? await connection.close() }
        let waiting = waiters
        waiters = []
        waiting.forEach { $0.resume() }
    }

    private func takeID() -> Int {
        nextID += 1
        return nextID
    }

    private func checkOut(doing what: String) async throws -> PostgresConnection {
        while true {
            guard !isClosed else {
                throw PostgresFailure(.connectionFailed, "\(what) on \(endpoint) failed: the connection pool was closed")
            }
            if let connection = idle.popLast() {
                if connection.isClosed {
                    openCount -= 1
                    continue
                }
                return connection
            }
            if openCount < maximumConnections {
                openCount += 1
                let id = takeID()
                do {
                    return try await PostgresConnection.connect(
                        configuration: try endpoint.connectionConfiguration(), id: id, logger: logger)
                } catch {
                    openCount -= 1
                    wakeOne()
                    throw PostgresFailure.from(error, doing: what, on: endpoint)
                }
            }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    private func checkIn(_ connection: PostgresConnection, reusable: Bool) async {
        if reusable && !isClosed && !connection.isClosed {
            idle.append(connection)
        } else {
            openCount -= 1
            try? await connection.close()
        }
        wakeOne()
    }

    private func wakeOne() {
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }
}

extension PostgresConnection {
    /// Starts closing the connection without waiting, for `deinit`s. The connection keeps itself
    /// alive until it is closed (PostgresNIO checks that a connection is closed when it goes).
    public func closeWithoutWaiting() {
        close().whenComplete { _ in withExtendedLifetime(self) {} }
    }
}

extension PostgresConnectionPool {
    /// Runs `body` on one new connection to `endpoint` and closes it, whatever happens: for
    /// checks and one-off statements.
    @discardableResult
    public static func withOneConnection<T: Sendable>(
        to endpoint: PostgresEndpoint, doing what: String, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        do {
            let value = try await pool.withConnection(doing: what, body)
            await pool.close()
            return value
        } catch {
            await pool.close()
            throw error
        }
    }

    /// Runs each SQL statement in order on one new connection (setup scripts of tests and
    /// benchmarks).
    public static func execute(_ statements: [String], on endpoint: PostgresEndpoint, doing what: String) async throws {
        try await withOneConnection(to: endpoint, doing: what) { connection in
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
            }
        }
    }
}
