import FaultProxy
import Foundation
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// `LISTEN`/`NOTIFY` change signals against a real server: every change is reported, under a
/// writer that never pauses and across a connection the server ends.
@Suite("PostgreSQL change signals", .heavy)
struct NotificationSourceTests {
    static let channel = "gateway_test_changes"

    static func source(_ pool: PostgresConnectionPool, retry: Duration = .milliseconds(50)) -> PostgresNotificationSource {
        PostgresNotificationSource(pool: pool, channel: channel, key: "counter", retryInterval: retry) { connection in
            let rows = try await connection.query("SELECT n FROM counter", logger: connection.logger)
            var value: Int64 = 0
            for try await (number) in rows.decode(Int64.self) { value = number }
            return String(value)
        }
    }

    /// A new database with the table whose one row the stamp reads.
    static func counterDatabase(_ label: String) async throws -> PostgresEndpoint {
        let endpoint = try await PostgresTestServer.freshDatabase(label)
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE counter (n int8 NOT NULL)", "INSERT INTO counter VALUES (0)"], on: endpoint, doing: "setup")
        return endpoint
    }

    static func bump(_ connection: PooledConnection) async throws {
        try await connection.query(
            "WITH bumped AS (UPDATE counter SET n = n + 1 RETURNING n) SELECT pg_notify(\(channel), 'counter') FROM bumped",
            logger: connection.logger)
    }

    // Each wait returns at once here, since the stamp moved: the source must go on listening on
    // the same connection rather than stop and start per change (stopping and starting made
    // PostgresNIO trap in the reliability harness's `network` scenario, 2 runs of 8).
    @Test(
        "a writer that notifies without pause: every wait reports a change, and the process survives", .timeLimit(.minutes(2)),
        arguments: [0, 3])
    func steadyWriter(delayMilliseconds: Int) async throws {
        let endpoint = try await Self.counterDatabase("signals")
        // The listener's packets delayed, as on a slow network, and not the writer's.
        let proxy = try await FaultProxy.start(forwardingTo: endpoint.host, port: endpoint.port)
        proxy.delay(.milliseconds(delayMilliseconds))
        var listenerEndpoint = endpoint
        listenerEndpoint.port = proxy.port
        let pool = PostgresConnectionPool(endpoint: listenerEndpoint, maximumConnections: 2)
        var source = Self.source(pool)
        await source.start()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                let writer = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
                // Ends when the test cancels it (the cancelled statement throws).
                while !Task.isCancelled {
                    do {
                        try await writer.withConnection(doing: "writing") { try await Self.bump($0) }
                    } catch {
                        break
                    }
                }
                await writer.close()
            }
            for _ in 0..<400 {
                #expect(await source.waitForChange())
            }
            group.cancelAll()
        }
        await pool.close()
        await proxy.close()
    }

    @Test("a change made while the server had ended the listening connection is reported after it reconnects", .timeLimit(.minutes(1)))
    func changeWhileDisconnected() async throws {
        let endpoint = try await Self.counterDatabase("signals-cut")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 2)
        var source = Self.source(pool)
        await source.start()
        // End every backend that listens, then change the table without a notification: only
        // the stamp, read again on the new connection, can tell.
        try await PostgresConnectionPool.execute(
            [
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()",
                "UPDATE counter SET n = n + 1",
            ], on: endpoint, doing: "cutting")
        #expect(await source.waitForChange())
        // And a notified change after that, on the new connection.
        try await pool.withConnection(doing: "writing") { try await Self.bump($0) }
        #expect(await source.waitForChange())
        await pool.close()
    }

    @Test("cancelling the waiting task ends the signals", .timeLimit(.minutes(1)))
    func cancellation() async throws {
        let endpoint = try await Self.counterDatabase("signals-cancel")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 2)
        let waiting = Task {
            var source = Self.source(pool)
            await source.start()
            return await source.waitForChange()
        }
        // Wait until the source listens, so the cancellation lands in the wait itself.
        let observer = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        for _ in 0..<500 {
            let listening = try await observer.withConnection(doing: "observing") { connection in
                let rows = try await connection.query(
                    "SELECT count(*)::int8 FROM pg_stat_activity WHERE query LIKE 'SELECT n FROM counter%' AND state = 'idle'",
                    logger: connection.logger)
                var count: Int64 = 0
                for try await (number) in rows.decode(Int64.self) { count = number }
                return count > 0
            }
            if listening { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        await observer.close()
        waiting.cancel()
        #expect(await waiting.value == false)
        await pool.close()
    }
}
