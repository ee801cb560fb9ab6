import Foundation
import Logging
import PostgresNIO

/// A few reusable connections to one database, opened on demand.
///
/// Kept instead of PostgresNIO's `PostgresClient` for what that client does not do: a deadline
/// per operation that closes the connection of an overrunning statement (below), and a session
/// setup on every new connection (``connect(id:)``). It needs no background task, and measured on
/// short transactions it is as fast or 5–8% faster (`gateway-bench postgres-pool`). A connection
/// that failed for any reason other than a server error is closed rather than lent again.
///
/// Every operation has a deadline (``requestTimeout``): when it passes, the operation's
/// connection is closed, which fails the statement in flight, and the operation throws
/// ``PostgresFailure/Code/timedOut``. A stalled server or network therefore costs at most that
/// long, never a sync that waits forever.
public actor PostgresConnectionPool {
    public nonisolated let endpoint: PostgresEndpoint
    public nonisolated let maximumConnections: Int
    /// How long one operation (taking a connection and running its statements) may take.
    public nonisolated let requestTimeout: Duration
    private let logger: Logger
    private var idle: [PostgresConnection] = []
    private var openCount = 0
    private var nextID = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isClosed = false

    /// - Parameter maximumConnections: at most this many connections are open at once; further
    ///   callers wait for one to be returned.
    ///   - requestTimeout: how long one operation may take before its connection is closed.
    public init(
        endpoint: PostgresEndpoint, maximumConnections: Int = 4, requestTimeout: Duration = PostgresConnectionPool.defaultRequestTimeout,
        logger: Logger? = nil
    ) {
        self.endpoint = endpoint
        self.maximumConnections = max(1, maximumConnections)
        self.requestTimeout = requestTimeout
        self.logger = logger ?? Logger(label: "gateway.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    deinit {
        idle.forEach { $0.closeWithoutWaiting() }
    }

    /// The default of ``requestTimeout``: long enough for the largest statements the gateway
    /// sends (a first install copying a big table into the change log), short enough that a
    /// stalled server is noticed.
    public static let defaultRequestTimeout: Duration = .seconds(60)

    /// Runs `body` with a connection of its own, within ``requestTimeout``.
    ///
    /// `body` runs on the connection's event loop, the thread that reads the server's replies: a
    /// statement's reply then resumes it without waking another thread. On a busy machine each
    /// such wake waited for a free core, and an operation of several statements paid it twice
    /// per statement (measured on the PostgreSQL cloud's saves: beginning a transaction took
    /// 2.7 ms, 0.9 ms on the event loop; a whole sync 15% faster). Work between statements is
    /// short (deciding a page, encoding its values), so holding the loop for it costs the
    /// loop's other connections little.
    @discardableResult
    public nonisolated func withConnection<T: Sendable>(
        doing what: String, _ body: @Sendable (PooledConnection) async throws -> T
    ) async throws -> T {
        // Taking a connection is bounded already: connecting has its own timeout, and waiting for
        // a free one waits for operations that have deadlines of their own.
        let connection = try await checkOut(doing: what)
        let deadline = RequestDeadline(after: requestTimeout)
        let timer = deadline.arm(closing: connection)
        defer { timer.cancel() }
        do {
            let pooled = PooledConnection(connection)
            let value = try await withTaskExecutorPreference(pooled.loop) { try await body(pooled) }
            timer.cancel()
            await checkIn(connection, reusable: !deadline.hasPassed)
            if deadline.hasPassed { throw deadline.failure(doing: what, on: endpoint) }
            return value
        } catch {
            timer.cancel()
            if deadline.hasPassed {
                await checkIn(connection, reusable: false)
                throw deadline.failure(doing: what, on: endpoint, underlying: error)
            }
            if let error = error as? PSQLError {
                await checkIn(connection, reusable: error.code == .server && !connection.isClosed)
                throw PostgresFailure.from(error, doing: what, on: endpoint)
            }
            // The caller's own error (such as a refused request), or a statement refused because
            // the connection had closed: reuse the connection only if it is still open.
            await checkIn(connection, reusable: !connection.isClosed)
            if let failure = error as? PostgresFailure, failure.code == .connectionFailed, failure.sqlState == nil {
                throw PostgresFailure(.connectionFailed, "\(what) on \(endpoint) failed: \(failure.message); is the server running and reachable?")
            }
            throw error
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    /// - Parameter isolation: the SQL isolation level, such as `REPEATABLE READ READ ONLY`.
    @discardableResult
    public nonisolated func transaction<T: Sendable>(
        doing what: String, isolation: String = "READ COMMITTED", _ body: @Sendable (PooledConnection) async throws -> T
    ) async throws -> T {
        try await withConnection(doing: what) { connection in
            let logger = connection.logger
            try await connection.query(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation)"), logger: logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: logger)
                return value
            } catch {
                // A closed connection has rolled back on its own; a failed rollback means a
                // broken connection, which the pool then closes.
                if !connection.isClosed { _ = try? await connection.query("ROLLBACK", logger: logger) }
                throw error
            }
        }
    }

    /// Opens a connection that is not pooled (for `LISTEN`); the caller closes it.
    public nonisolated func openDedicatedConnection(doing what: String) async throws -> PooledConnection {
        do {
            let id = await takeID()
            return PooledConnection(try await connect(id: id))
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
                    return try await connect(id: id)
                } catch {
                    openCount -= 1
                    wakeOne()
                    throw PostgresFailure.from(error, doing: what, on: endpoint)
                }
            }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    /// Opens a connection and prepares its session for the gateway's statements.
    ///
    /// JIT compilation is turned off: the gateway sends index lookups over a page of names and
    /// bulk writes, whose planned cost crosses `jit_above_cost` at pages of a few thousand names
    /// although they run in milliseconds, and compiling them took about as long as running them
    /// (measured: 133 of 269 ms of a 100,000-record download's lookups). The setting is made only
    /// where the server has it (PostgreSQL 11 and later), so older servers and poolers that refuse
    /// unknown startup parameters still connect.
    private func connect(id: Int) async throws -> PostgresConnection {
        let connection = try await PostgresConnection.connect(configuration: try endpoint.connectionConfiguration(), id: id, logger: logger)
        do {
            try await connection.query(
                "SELECT set_config('jit', 'off', false) WHERE EXISTS (SELECT 1 FROM pg_settings WHERE name = 'jit')", logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        return connection
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
        to endpoint: PostgresEndpoint, doing what: String, requestTimeout: Duration = defaultRequestTimeout,
        _ body: @Sendable (PooledConnection) async throws -> T
    ) async throws -> T {
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1, requestTimeout: requestTimeout)
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
    public static func execute(
        _ statements: [String], on endpoint: PostgresEndpoint, doing what: String, requestTimeout: Duration = defaultRequestTimeout
    ) async throws {
        try await withOneConnection(to: endpoint, doing: what, requestTimeout: requestTimeout) { connection in
            for statement in statements {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
            }
        }
    }
}
