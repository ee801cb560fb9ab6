import Foundation
import GatewayCore
import PostgresNIO

/// Change signals from PostgreSQL's `LISTEN`/`NOTIFY`, on a connection of their own.
///
/// Writers notify `channel` with a payload naming what changed; the source wakes for
/// notifications whose payload is `key`. Before each wait it compares a stamp (a query whose
/// result changes with every change, such as a sequence number) with the last one it reported, so
/// a change committed while it was not listening (before the first `LISTEN`, or while the
/// connection was down) is still reported, and a notification for a change already reported is
/// not reported twice. The connection listens from when it opens until it closes: see
/// ``PooledConnection/subscribe(to:payload:logger:)`` for why it never stops and starts again.
/// All waiting happens in the iterating task; cancelling it ends the signals and closes the
/// connection.
public struct PostgresNotificationSource: ChangeSignalSource {
    let pool: PostgresConnectionPool
    let channel: String
    let key: String
    let retryInterval: Duration
    let stamp: @Sendable (PooledConnection) async throws -> String
    /// The listening connection and its notifications, closed when the last copy of the source goes.
    private final class Subscription {
        var connection: PooledConnection?
        var notifications: AsyncStream<Void>.Iterator?
        deinit { connection?.closeWithoutWaiting() }
    }
    private let subscription = Subscription()
    private var lastStamp: String?
    private var hasBaseline = false

    public init(
        pool: PostgresConnectionPool, channel: String, key: String, retryInterval: Duration = .seconds(1),
        stamp: @escaping @Sendable (PooledConnection) async throws -> String
    ) {
        self.pool = pool
        self.channel = channel
        self.key = key
        self.retryInterval = retryInterval
        self.stamp = stamp
    }

    public mutating func start() async {
        guard !hasBaseline else { return }
        lastStamp = try? await stamp(try await listeningConnection())
        hasBaseline = true
    }

    public mutating func waitForChange() async -> Bool {
        await start()
        while !Task.isCancelled {
            do {
                let connection = try await listeningConnection()
                let now = try await stamp(connection)
                if now != lastStamp {
                    lastStamp = now
                    return true
                }
                guard await nextNotification() else {
                    throw PostgresFailure(.connectionFailed, "the connection listening on \(channel) closed")
                }
            } catch {
                await closeConnection()
                do {
                    try await Task.sleep(for: retryInterval)
                } catch {
                    break
                }
            }
        }
        await closeConnection()
        return false
    }

    /// The open connection that listens on the channel, opening and subscribing one when needed.
    private func listeningConnection() async throws -> PooledConnection {
        if let connection = subscription.connection, !connection.isClosed, subscription.notifications != nil { return connection }
        await closeConnection()
        let opened = try await pool.openDedicatedConnection(doing: "listening on \(channel)")
        subscription.connection = opened
        let notifications = try await opened.subscribe(to: channel, payload: key, logger: opened.logger)
        subscription.notifications = notifications.makeAsyncIterator()
        return opened
    }

    /// Waits for a notification; `false` when the connection closed or the task was cancelled
    /// (either ends the stream, so the next wait opens a new connection).
    private func nextNotification() async -> Bool {
        guard var iterator = subscription.notifications else { return false }
        let received = await iterator.next() != nil
        subscription.notifications = received ? iterator : nil
        return received
    }

    private func closeConnection() async {
        let connection = subscription.connection
        subscription.connection = nil
        subscription.notifications = nil
        try? await connection?.close()
    }
}
