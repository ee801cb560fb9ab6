import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

/// Change signals of one zone from PostgreSQL's `LISTEN`/`NOTIFY`, on a connection of its own.
///
/// Every commit that changes a zone notifies the cloud's channel with the zone as payload. The
/// source listens, and right after each `LISTEN` compares the zone's (generation, sequence) with
/// the last one it saw, so a commit made while it was not listening is still reported. All
/// waiting happens in the iterating task; cancelling it ends the signals and closes the connection.
struct NotificationChangeSource: ChangeSignalSource {
    let pool: PostgresConnectionPool
    let tables: PostgresCloud.Tables
    let zone: ZoneID
    let retryInterval: Duration
    /// The listening connection, closed when the last copy of the source goes.
    private final class Holder {
        var connection: PostgresConnection?
        deinit { connection?.closeWithoutWaiting() }
    }
    private let holder = Holder()
    private var connection: PostgresConnection? {
        get { holder.connection }
        nonmutating set { holder.connection = newValue }
    }
    private var lastStamp: String?
    private var hasBaseline = false

    init(pool: PostgresConnectionPool, tables: PostgresCloud.Tables, zone: ZoneID, retryInterval: Duration) {
        self.pool = pool
        self.tables = tables
        self.zone = zone
        self.retryInterval = retryInterval
    }

    mutating func start() async {
        guard !hasBaseline else { return }
        lastStamp = try? await Self.stamp(of: zone, tables: tables, on: try await openConnection())
        hasBaseline = true
    }

    mutating func waitForChange() async -> Bool {
        await start()
        while !Task.isCancelled {
            do {
                let connection = try await openConnection()
                let key = PostgresCloud.signalKey(zone)
                let seen = lastStamp
                let (zone, tables) = (zone, tables)
                let changedStamp: String? = try await connection.listen(on: tables.channel) { notifications in
                    let now = try await Self.stamp(of: zone, tables: tables, on: connection)
                    if now != seen { return now }
                    for try await notification in notifications where notification.payload == key {
                        let now = try await Self.stamp(of: zone, tables: tables, on: connection)
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

    private mutating func openConnection() async throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        let opened = try await pool.openDedicatedConnection(doing: "listening for changes of zone \(zone)")
        connection = opened
        return opened
    }

    private mutating func closeConnection() async {
        try? await connection?.close()
        connection = nil
    }

    /// The zone's generation and sequence ("absent" when it does not exist).
    private static func stamp(of zone: ZoneID, tables: PostgresCloud.Tables, on connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query(
            """
            SELECT generation, last_seq FROM \(unescaped: tables.zones)
            WHERE owner_name = \(zone.ownerName) AND zone_name = \(zone.zoneName)
            """, logger: connection.logger)
        for try await (generation, sequence) in rows.decode((ByteBuffer, Int64).self) {
            return "\(Data(buffer: generation).base64EncodedString()):\(sequence)"
        }
        return "absent"
    }
}
