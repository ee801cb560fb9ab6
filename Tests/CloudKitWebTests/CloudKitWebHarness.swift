import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresSupport
import PostgresTesting

/// Runs the cloud conformance suite through `CloudKitWebDatabase` → HTTP → the endpoint →
/// an embedded cloud in a temporary folder, or a PostgreSQL cloud in a schema of its own.
final class CloudKitWebHarness: CloudConformanceHarness {
    /// The cloud behind the endpoint.
    enum Backing: String, Sendable, CaseIterable {
        case embedded, postgres
    }

    /// One endpoint and the cloud behind it, with what the suite needs to reach past the endpoint.
    private struct Served {
        let server: EndpointServer
        let purgeAllTombstones: @Sendable () async throws -> Void
        let corruptAsset: @Sendable (AssetReference) async throws -> Void
        let storedAssetCount: @Sendable () async throws -> Int
        let close: @Sendable () async -> Void
    }

    let directory: TemporaryDirectory
    let backing: Backing
    /// Whether the endpoint serves `changes/zone`; without it the client must fall back to `records/changes`.
    let servesZoneChanges: Bool
    let writerKey = TestKey(id: "writer-key", user: CloudUsers.defaultUser)
    let readerKey = TestKey(id: "reader-key", user: CloudUsers.defaultUser)
    /// A key for each user the sharing cases act as.
    let userKeys: [String: TestKey] = Dictionary(
        uniqueKeysWithValues: [CloudUsers.defaultUser, "_alice", "_bob", "_carol", "_dave", "_mallory", "_eve"].map { ($0, TestKey(id: "key\($0)", user: $0)) })
    private let served = LockedValue<[ObjectIdentifier: Served]>([:])
    private let database = LockedValue<PostgresEndpoint?>(nil)

    init(directory: TemporaryDirectory, backing: Backing = .embedded, servesZoneChanges: Bool = true) {
        self.directory = directory
        self.backing = backing
        self.servesZoneChanges = servesZoneChanges
    }

    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase {
        let clock = LockedValue(Date())
        let retention = Duration.seconds(30 * 86_400)
        let cloud: any CloudDatabase
        let purge: @Sendable () async throws -> Void
        let corrupt: @Sendable (AssetReference) async throws -> Void
        let count: @Sendable () async throws -> Int
        let close: @Sendable () async -> Void
        switch backing {
        case .embedded:
            let embedded = try EmbeddedCloud(
                path: directory.path("cloud-\(UUID().uuidString).sqlite"),
                configuration: EmbeddedCloud.Configuration(
                    limits: limits, tombstoneRetention: retention, signalPollInterval: .milliseconds(20), now: { clock.get() }))
            cloud = embedded
            purge = {
                clock.withLock { $0 += 31 * 86_400 }
                try await embedded.purgeExpiredTombstones()
            }
            corrupt = { reference in
                try await DatabaseQueue(path: embedded.path).write { db in
                    try db.execute(sql: "UPDATE assets SET data = zeroblob(length(data)) WHERE checksum = ?", arguments: [reference.checksum])
                }
            }
            count = { try await DatabaseQueue(path: embedded.path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assets") ?? 0 } }
            close = {}
        case .postgres:
            let endpoint = try await postgresDatabase()
            let schema = "cloud_" + UUID().uuidString.prefix(8).lowercased()
            let postgres = try await PostgresCloud.open(
                endpoint,
                configuration: PostgresCloud.Configuration(
                    schema: schema, limits: limits, tombstoneRetention: retention, maximumConnections: 2, now: { clock.get() }))
            cloud = postgres
            purge = {
                clock.withLock { $0 += 31 * 86_400 }
                _ = try await postgres.purgeExpiredTombstones()
            }
            corrupt = { reference in
                try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "corrupting an asset") { connection in
                    _ = try await connection.query(
                        "UPDATE \(unescaped: schema).assets SET data = decode(repeat('00', length(data)), 'hex') WHERE checksum = \(reference.checksum)",
                        logger: connection.logger)
                }
            }
            count = {
                try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting assets") { connection in
                    let rows = try await connection.query("SELECT count(*)::bigint FROM \(unescaped: schema).assets", logger: connection.logger)
                    var count = 0
                    for try await value in rows.decode(Int64.self) { count = Int(value) }
                    return count
                }
            }
            close = { await postgres.close() }
        }
        let server = try await EndpointServer(
            cloud: cloud,
            configuration: CloudKitEndpointConfiguration(
                container: EndpointServer.container, keys: [readerKey.registered, writerKey.registered] + userKeys.values.map(\.registered),
                servesZoneChanges: servesZoneChanges))
        let client = try server.client(key: readerKey, limits: limits)
        served.withLock {
            $0[ObjectIdentifier(client)] = Served(
                server: server, purgeAllTombstones: purge, corruptAsset: corrupt, storedAssetCount: count, close: close)
        }
        return client
    }

    /// One database for the harness, each cloud in a schema of its own.
    private func postgresDatabase() async throws -> PostgresEndpoint {
        if let known = database.get() { return known }
        let fresh = try await PostgresTestServer.freshDatabase("cloudkit_web")
        database.set(fresh)
        return fresh
    }

    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase {
        let entry = try entry(cloud)
        let client = try entry.server.client(key: writerKey, limits: cloud.limits)
        served.withLock { $0[ObjectIdentifier(client)] = entry }
        return client
    }

    /// A client signed with `user`'s key: the private database (another user's zones asked in
    /// the shared one) for `nil`, or only the database `scope` names.
    func client(of cloud: any CloudDatabase, asUser user: String, scope: CloudScope?) async throws -> any CloudDatabase & ShareManaging {
        let entry = try entry(cloud)
        guard let key = userKeys[user] else { throw ConformanceFailure("the harness has no key for \(user)") }
        var configuration = try entry.server.client(key: key, limits: cloud.limits).configuration
        if let scope {
            configuration.database = scope == .shared ? .shared : .private
            configuration.routesSharedZones = false
        }
        let client = try CloudKitWebDatabase(configuration: configuration)
        served.withLock { $0[ObjectIdentifier(client)] = entry }
        return client
    }

    func purgeAllTombstones(of cloud: any CloudDatabase) async throws {
        try await entry(cloud).purgeAllTombstones()
    }

    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws {
        try await entry(cloud).corruptAsset(reference)
    }

    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int {
        try await entry(cloud).storedAssetCount()
    }

    /// Stops every endpoint this harness started and closes the clouds behind them.
    func stop() async {
        let entries = served.withLock { entries in Array(entries.values) }
        var stopped = Set<ObjectIdentifier>()
        for entry in entries where stopped.insert(ObjectIdentifier(entry.server)).inserted {
            await entry.server.stop()
            await entry.close()
        }
    }

    private func entry(_ cloud: any CloudDatabase) throws -> Served {
        guard let client = cloud as? CloudKitWebDatabase, let entry = served.withLock({ $0[ObjectIdentifier(client)] }) else {
            throw ConformanceFailure("the harness only handles clients it made")
        }
        return entry
    }
}
