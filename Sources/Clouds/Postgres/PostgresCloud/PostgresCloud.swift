import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

/// CloudKit semantics in a PostgreSQL database, shared by many gateway processes on many
/// machines.
///
/// The same model as the embedded cloud: each zone has a generation (new on every creation) and
/// a commit sequence; every saved or deleted record takes the next sequence number, and a change
/// token is (generation, sequence). Writers of a zone serialize on its row (`SELECT … FOR
/// UPDATE`), so sequence numbers commit in order and a reader never skips one. Commits `NOTIFY`
/// the zone, which drives ``changeSignals(in:)``. Tables live in their own schema
/// (``Configuration/schema``) and are keyed by zone first.
public final class PostgresCloud: CloudDatabase {
    /// The database holding the cloud.
    public let endpoint: PostgresEndpoint
    /// The behaviour settings.
    public let configuration: Configuration
    let pool: PostgresConnectionPool
    let tables: Tables
    private let purgeSchedule: PurgeSchedule

    public var limits: CloudLimits { configuration.limits }

    /// The schema-qualified, quoted table names, and the notification channel.
    struct Tables: Sendable {
        var zones: String
        var records: String
        var assets: String
        var subscriptions: String
        var channel: String

        init(schema: String) {
            let s = SQLQuoting.identifier(schema)
            zones = "\(s).zones"
            records = "\(s).records"
            assets = "\(s).assets"
            subscriptions = "\(s).subscriptions"
            channel = "\(schema)_changes"
        }
    }

    private init(endpoint: PostgresEndpoint, configuration: Configuration) {
        self.endpoint = endpoint
        self.configuration = configuration
        purgeSchedule = PurgeSchedule(retention: configuration.tombstoneRetention)
        pool = PostgresConnectionPool(
            endpoint: endpoint, maximumConnections: configuration.maximumConnections, requestTimeout: configuration.requestTimeout)
        tables = Tables(schema: configuration.schema)
    }

    /// Connects to the database and creates or upgrades the cloud's schema.
    /// - Throws: ``CloudError`` (``CloudError/Code/networkFailure`` when the server cannot be
    ///   reached, ``CloudError/Code/notAuthenticated`` for a refused login,
    ///   ``CloudError/Code/internalError`` when the schema is newer than this gateway).
    public static func open(_ endpoint: PostgresEndpoint, configuration: Configuration = Configuration()) async throws -> PostgresCloud {
        let cloud = PostgresCloud(endpoint: endpoint, configuration: configuration)
        do {
            try await cloud.pool.transaction(doing: "creating the cloud schema \(configuration.schema)") { connection in
                try await PostgresCloudSchema.migrate(connection, schema: configuration.schema)
            }
        } catch {
            await cloud.close()
            throw Self.cloudError(error, endpoint: endpoint)
        }
        return cloud
    }

    /// Checks the server can be reached and the login works, without creating anything.
    public static func check(_ endpoint: PostgresEndpoint) async throws {
        do {
            try await PostgresConnectionPool.execute(["SELECT 1"], on: endpoint, doing: "connecting to the cloud")
        } catch {
            throw Self.cloudError(error, endpoint: endpoint)
        }
    }

    /// Closes the pooled connections. Calls after this fail.
    public func close() async {
        await pool.close()
    }

    // MARK: Zones

    public func zones() async throws -> [ZoneID] {
        try await run("listing zones") { [tables] connection in
            let rows = try await connection.query(
                "SELECT zone_name, owner_name FROM \(unescaped: tables.zones) ORDER BY created_at, owner_name, zone_name",
                logger: connection.logger)
            var zones: [ZoneID] = []
            for try await (name, owner) in rows.decode((String, String).self) {
                zones.append(ZoneID(zoneName: name, ownerName: owner))
            }
            return zones
        }
    }

    public func createZone(_ zone: ZoneID) async throws {
        if let problem = ModifyRules.nameProblem(zone.zoneName, what: "zone name") {
            throw CloudError(.invalidArguments, problem)
        }
        let now = nowMilliseconds()
        let generation = SequenceChangeToken.newGeneration()
        try await run("creating zone \(zone)") { [tables] connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: tables.zones) (owner_name, zone_name, generation, created_at)
                VALUES (\(zone.ownerName), \(zone.zoneName), \(generation), \(now))
                ON CONFLICT (owner_name, zone_name) DO NOTHING
                """, logger: connection.logger)
        }
    }

    public func deleteZone(_ zone: ZoneID) async throws {
        try await transaction("deleting zone \(zone)") { [tables] connection in
            let zoneRow = try await Self.lockZone(zone, tables: tables, connection: connection)!
            try await connection.query("DELETE FROM \(unescaped: tables.records) WHERE zone_key = \(zoneRow.key)", logger: connection.logger)
            try await connection.query(
                "DELETE FROM \(unescaped: tables.zones) WHERE owner_name = \(zone.ownerName) AND zone_name = \(zone.zoneName)",
                logger: connection.logger)
            try await Self.notify(zone, tables: tables, connection: connection)
        }
    }

    // MARK: Change signals

    public func changeSignals(in zone: ZoneID) -> ChangeSignals {
        let (pool, tables, retry) = (pool, tables, configuration.signalRetryInterval)
        return ChangeSignals {
            PostgresNotificationSource(pool: pool, channel: tables.channel, key: Self.signalKey(zone), retryInterval: retry) { connection in
                // The zone's generation and sequence ("absent" when it does not exist).
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
    }

    // MARK: Tombstones

    /// Removes tombstones older than ``Configuration/tombstoneRetention`` and returns how many
    /// were removed. Tokens that needed them expire. Runs on its own about once an hour while the
    /// cloud is written to; call it to run it now.
    @discardableResult
    public func purgeExpiredTombstones() async throws -> Int {
        let horizon = nowMilliseconds() - configuration.tombstoneRetention.milliseconds
        var removed = 0
        for zone in try await zones() {
            removed += try await transaction("purging tombstones of zone \(zone)") { [tables] connection in
                guard let zoneRow = try await Self.lockZone(zone, tables: tables, connection: connection, missingIsError: false) else { return 0 }
                let rows = try await connection.query(
                    """
                    WITH removed AS (
                        DELETE FROM \(unescaped: tables.records)
                        WHERE zone_key = \(zoneRow.key) AND deleted AND modified_at < \(horizon)
                        RETURNING seq
                    )
                    SELECT count(*)::bigint, max(seq) FROM removed
                    """, logger: connection.logger)
                var count: Int64 = 0
                var newest: Int64?
                for try await (c, n) in rows.decode((Int64, Int64?).self) {
                    count = c
                    newest = n
                }
                if let newest {
                    try await connection.query(
                        """
                        UPDATE \(unescaped: tables.zones) SET purged_seq = GREATEST(purged_seq, \(newest)) WHERE zone_key = \(zoneRow.key)
                        """, logger: connection.logger)
                }
                return Int(count)
            }
        }
        return removed
    }

    func purgeIfDue() async {
        // A failed purge is retried at the next interval; it never fails the write that triggered it.
        if purgeSchedule.takeIfDue() { _ = try? await purgeExpiredTombstones() }
    }

    // MARK: Plumbing

    struct ZoneRow: Sendable {
        /// The number keying the zone's records.
        var key: Int64
        var generation: Data
        var lastSequence: Int64
        var purgedSequence: Int64
    }

    /// Reads the zone's row; with `lock`, holds it until the transaction ends, serializing writers.
    static func zoneRow(
        _ zone: ZoneID, tables: Tables, connection: PooledConnection, lock: Bool = false, missingIsError: Bool = true
    ) async throws -> ZoneRow? {
        let rows = try await connection.query(
            """
            SELECT zone_key, generation, last_seq, purged_seq FROM \(unescaped: tables.zones)
            WHERE owner_name = \(zone.ownerName) AND zone_name = \(zone.zoneName)\(unescaped: lock ? " FOR UPDATE" : "")
            """, logger: connection.logger)
        for try await (key, generation, last, purged) in rows.decode((Int64, ByteBuffer, Int64, Int64).self) {
            return ZoneRow(key: key, generation: Data(buffer: generation), lastSequence: last, purgedSequence: purged)
        }
        if missingIsError { throw CloudError(.zoneNotFound, "zone \(zone) does not exist; create it first") }
        return nil
    }

    @discardableResult
    static func lockZone(
        _ zone: ZoneID, tables: Tables, connection: PooledConnection, missingIsError: Bool = true
    ) async throws -> ZoneRow? {
        try await zoneRow(zone, tables: tables, connection: connection, lock: true, missingIsError: missingIsError)
    }

    /// Tells listeners the zone changed; delivered when the transaction commits.
    static func notify(_ zone: ZoneID, tables: Tables, connection: PooledConnection) async throws {
        try await connection.query("SELECT pg_notify(\(tables.channel), \(Self.signalKey(zone)))", logger: connection.logger)
    }

    static func signalKey(_ zone: ZoneID) -> String {
        "\(zone.ownerName)/\(zone.zoneName)"
    }

    func nowMilliseconds() -> Int64 {
        Timestamp(configuration.now()).millisecondsSince1970
    }

    @discardableResult
    func run<T: Sendable>(_ what: String, _ body: @Sendable (PooledConnection) async throws -> T) async throws -> T {
        do {
            return try await pool.withConnection(doing: what, body)
        } catch {
            throw Self.cloudError(error, endpoint: endpoint)
        }
    }

    @discardableResult
    func transaction<T: Sendable>(
        _ what: String, isolation: String = "READ COMMITTED", _ body: @Sendable (PooledConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await pool.transaction(doing: what, isolation: isolation, body)
        } catch {
            throw Self.cloudError(error, endpoint: endpoint)
        }
    }

    /// Maps database failures to cloud errors; cloud errors thrown inside transactions pass through.
    static func cloudError(_ error: any Error, endpoint: PostgresEndpoint) -> CloudError {
        if let error = error as? CloudError { return error }
        if let failure = error as? PostgresFailure { return failure.cloudError }
        return PostgresFailure.from(error, doing: "a cloud request", on: endpoint).cloudError
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
