import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting

/// Runs the cloud conformance suite against real embedded-cloud files in a temporary folder.
struct EmbeddedCloudHarness: CloudConformanceHarness {
    let directory: TemporaryDirectory
    /// Each cloud's wall clock, by file path, so tombstones can be aged.
    private let clocks = LockedValue<[String: LockedValue<Date>]>([:])

    init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase {
        let path = directory.path("cloud-\(UUID().uuidString).sqlite")
        let clock = LockedValue(Date())
        clocks.withLock { $0[path] = clock }
        return try EmbeddedCloud(path: path, configuration: configuration(limits: limits, clock: clock))
    }

    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase {
        let cloud = try embedded(cloud)
        return try EmbeddedCloud(path: cloud.path, configuration: cloud.configuration)
    }

    func purgeAllTombstones(of cloud: any CloudDatabase) async throws {
        let cloud = try embedded(cloud)
        let clock = clocks.withLock { $0[cloud.path] }!
        clock.withLock { $0 += cloud.configuration.tombstoneRetention.timeInterval + 1 }
        try await cloud.purgeExpiredTombstones()
    }

    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws {
        let database = try DatabaseQueue(path: try embedded(cloud).path)
        try await database.write { db in
            try db.execute(
                sql: "UPDATE assets SET data = zeroblob(length(data)) WHERE checksum = ?", arguments: [reference.checksum])
        }
    }

    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int {
        let database = try DatabaseQueue(path: try embedded(cloud).path)
        return try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assets") ?? 0 }
    }

    private func configuration(limits: CloudLimits, clock: LockedValue<Date>) -> EmbeddedCloud.Configuration {
        EmbeddedCloud.Configuration(limits: limits, signalPollInterval: .milliseconds(20), now: { clock.get() })
    }

    private func embedded(_ cloud: any CloudDatabase) throws -> EmbeddedCloud {
        try unwrap(cloud as? EmbeddedCloud, "the harness only handles embedded clouds")
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
