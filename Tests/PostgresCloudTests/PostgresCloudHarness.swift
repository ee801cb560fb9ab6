import Foundation
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// Runs the cloud conformance suite against a real PostgreSQL server: each cloud gets a schema of
/// its own in the test's database.
final class PostgresCloudHarness: CloudConformanceHarness {
    let endpoint: PostgresEndpoint
    /// Each cloud's wall clock, by schema, so tombstones can be aged.
    private let clocks = LockedValue<[String: LockedValue<Date>]>([:])
    private let opened = LockedValue<[PostgresCloud]>([])

    init(label: String) async throws {
        endpoint = try await PostgresTestServer.freshDatabase(label)
    }

    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase {
        let schema = "cloud_" + UUID().uuidString.prefix(8).lowercased()
        let clock = LockedValue(Date())
        clocks.withLock { $0[schema] = clock }
        return try await open(
            PostgresCloud.Configuration(schema: schema, limits: limits, maximumConnections: 2, now: { clock.get() }))
    }

    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase {
        try await open(try postgres(cloud).configuration)
    }

    func purgeAllTombstones(of cloud: any CloudDatabase) async throws {
        let cloud = try postgres(cloud)
        let clock = clocks.withLock { $0[cloud.configuration.schema] }!
        clock.withLock { $0 += Double(cloud.configuration.tombstoneRetention.components.seconds) + 1 }
        try await cloud.purgeExpiredTombstones()
    }

    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws {
        let schema = try postgres(cloud).configuration.schema
        try await withConnection { connection in
            try await connection.query(
                "UPDATE \(unescaped: schema).assets SET data = decode(repeat('00', length(data)), 'hex') WHERE checksum = \(reference.checksum)",
                logger: connection.logger)
        }
    }

    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int {
        let schema = try postgres(cloud).configuration.schema
        return try await withConnection { connection in
            let rows = try await connection.query("SELECT count(*)::bigint FROM \(unescaped: schema).assets", logger: connection.logger)
            var count = 0
            for try await (value) in rows.decode(Int64.self) { count = Int(value) }
            return count
        }
    }

    /// Closes every cloud the harness opened.
    func closeAll() async {
        for cloud in opened.withLock({ $0 }) { await cloud.close() }
    }

    private func open(_ configuration: PostgresCloud.Configuration) async throws -> PostgresCloud {
        let cloud = try await PostgresCloud.open(endpoint, configuration: configuration)
        opened.withLock { $0.append(cloud) }
        return cloud
    }

    @discardableResult
    private func withConnection<T: Sendable>(_ body: @Sendable (PooledConnection) async throws -> T) async throws -> T {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "a test query", body)
    }

    private func postgres(_ cloud: any CloudDatabase) throws -> PostgresCloud {
        try unwrap(cloud as? PostgresCloud, "the harness only handles PostgreSQL clouds")
    }
}
