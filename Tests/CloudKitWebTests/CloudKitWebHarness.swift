import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting

/// Runs the cloud conformance suite through `CloudKitWebDatabase` → HTTP → the endpoint →
/// an embedded cloud in a temporary folder.
final class CloudKitWebHarness: CloudConformanceHarness {
    private struct Served {
        let server: EndpointServer
        let embedded: EmbeddedCloud
        let clock: LockedValue<Date>
    }

    let directory: TemporaryDirectory
    /// Whether the endpoint serves `changes/zone`; without it the client must fall back to `records/changes`.
    let servesZoneChanges: Bool
    let writerKey = TestKey(id: "writer-key", user: "_writer")
    let readerKey = TestKey(id: "reader-key", user: "_reader")
    private let served = LockedValue<[ObjectIdentifier: Served]>([:])

    init(directory: TemporaryDirectory, servesZoneChanges: Bool = true) {
        self.directory = directory
        self.servesZoneChanges = servesZoneChanges
    }

    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase {
        let clock = LockedValue(Date())
        let embedded = try EmbeddedCloud(
            path: directory.path("cloud-\(UUID().uuidString).sqlite"),
            configuration: EmbeddedCloud.Configuration(limits: limits, signalPollInterval: .milliseconds(20), now: { clock.get() }))
        let server = try await EndpointServer(
            cloud: embedded,
            configuration: CloudKitEndpointConfiguration(
                container: EndpointServer.container, keys: [readerKey.registered, writerKey.registered],
                servesZoneChanges: servesZoneChanges))
        let client = try server.client(key: readerKey, limits: limits)
        served.withLock { $0[ObjectIdentifier(client)] = Served(server: server, embedded: embedded, clock: clock) }
        return client
    }

    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase {
        let entry = try entry(cloud)
        let client = try entry.server.client(key: writerKey, limits: cloud.limits)
        served.withLock { $0[ObjectIdentifier(client)] = entry }
        return client
    }

    func purgeAllTombstones(of cloud: any CloudDatabase) async throws {
        let entry = try entry(cloud)
        entry.clock.withLock { $0 += 31 * 86_400 }
        try await entry.embedded.purgeExpiredTombstones()
    }

    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws {
        let database = try DatabaseQueue(path: try entry(cloud).embedded.path)
        try await database.write { db in
            try db.execute(sql: "UPDATE assets SET data = zeroblob(length(data)) WHERE checksum = ?", arguments: [reference.checksum])
        }
    }

    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int {
        let database = try DatabaseQueue(path: try entry(cloud).embedded.path)
        return try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assets") ?? 0 }
    }

    /// Stops every endpoint this harness started.
    func stop() async {
        let servers = served.withLock { entries in entries.values.map(\.server) }
        var stopped = Set<ObjectIdentifier>()
        for server in servers where stopped.insert(ObjectIdentifier(server)).inserted { await server.stop() }
    }

    private func entry(_ cloud: any CloudDatabase) throws -> Served {
        guard let client = cloud as? CloudKitWebDatabase, let entry = served.withLock({ $0[ObjectIdentifier(client)] }) else {
            throw ConformanceFailure("the harness only handles clients it made")
        }
        return entry
    }
}
