import Foundation
import GatewayCore
import PostgresNIO

/// Change signals from PostgreSQL's `LISTEN`/`NOTIFY`, on a connection of their own.
///
/// Writers notify `channel` with a payload naming what changed; the source yields for
/// notifications whose payload is `key`. Right after each `LISTEN` it compares a stamp (a query
/// whose result changes with every change, such as a sequence number) with the last one it saw,
/// so a change committed while it was not listening is still reported. All waiting happens in the
/// iterating task; cancelling it ends the signals and closes the connection.
public struct PostgresNotificationSource: ChangeSignalSource {
    let pool: PostgresConnectionPool
    let channel: String
    let key: String
    let retryInterval: Duration
    let stamp: @Sendable (PooledConnection) async throws -> String
    /// The listening connection, closed when the last copy of the source goes.
    private final class Holder {
        var connection: PooledConnection?
        deinit { connection?.closeWithoutWaiting() }
    }
    private let holder = Holder()
    private var connection: PooledConnection? {
        get { holder.connection }
        nonmutating set { holder.connection = newValue }
    }
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
        lastStamp = try? await stamp(try await openConnection())
        hasBaseline = true
    }

    public mutating func waitForChange() async -> Bool {
        await start()
        while !Task.isCancelled {
            do {
                let connection = try await openConnection()
                let (seen, key, stamp) = (lastStamp, key, stamp)
                let changedStamp: String? = try await connection.listen(on: channel) { notifications in
                    let now = try await stamp(connection)
                    if now != seen { return now }
                    for try await notification in notifications where notification.payload == key {
                        let now = try await stamp(connection)
                        if now != seen { return now }
                    }
                    return nil
                }
                if let changedStamp {
                    lastStamp = changedStamp
                    return true
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

    private mutating func openConnection() async throws -> PooledConnection {
        if let connection, !connection.isClosed { return connection }
        let opened = try await pool.openDedicatedConnection(doing: "listening on \(channel)")
        connection = opened
        return opened
    }

    private mutating func closeConnection() async {
        try? await connection?.close()
        connection = nil
    }
}
