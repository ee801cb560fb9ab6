import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting

/// A cloud file in a temporary folder behind a fault-injecting wrapper, plus in-memory adapters
/// and synchronizers over it, on an instant clock that records every wait.
final class SyncFixture: Sendable {
    static let zone = ZoneID(zoneName: "Notes")

    let directory: TemporaryDirectory
    let embedded: EmbeddedCloud
    let cloud: FaultInjectingCloud
    /// Every wait the synchronizers asked for, in order.
    let sleeps = LockedValue<[Duration]>([])
    /// The synchronizers' wall clock.
    let clock = LockedValue(Date(timeIntervalSince1970: 1_800_000_000))

    init(plan: FaultInjectingCloud.Plan = .none, seed: UInt64 = 1, limits: CloudLimits = .cloudKit) throws {
        directory = try TemporaryDirectory(prefix: "sync")
        let clock = clock
        embedded = try EmbeddedCloud(
            path: directory.path("cloud.sqlite"),
            configuration: EmbeddedCloud.Configuration(limits: limits, signalPollInterval: .milliseconds(10), now: { clock.get() }))
        cloud = FaultInjectingCloud(wrapping: embedded, plan: plan, seed: seed)
    }

    deinit { directory.remove() }

    var environment: SyncEnvironment {
        let sleeps = sleeps
        let clock = clock
        return SyncEnvironment(sleep: { duration in sleeps.withLock { $0.append(duration) } }, now: { clock.get() }, jitter: { 0 })
    }

    func adapter(_ name: String, zone: ZoneID = SyncFixture.zone) -> InMemoryAdapter {
        InMemoryAdapter(name: name, zoneID: zone)
    }

    func synchronizer(
        _ adapters: [InMemoryAdapter], options: AdapterSyncOptions = AdapterSyncOptions(),
        configuration: SyncConfiguration = SyncConfiguration(deviceID: "test"),
        observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) -> Synchronizer {
        Synchronizer(
            cloud: cloud, adapters: adapters.map { SyncedAdapter($0, options: options) }, configuration: configuration,
            environment: environment, observer: observer)
    }

    /// Syncs `adapter` alone and returns its report.
    @discardableResult
    func sync(
        _ adapter: InMemoryAdapter, options: AdapterSyncOptions = AdapterSyncOptions(),
        configuration: SyncConfiguration = SyncConfiguration(deviceID: "test")
    ) async throws -> AdapterSyncReport {
        try await synchronizer([adapter], options: options, configuration: configuration).sync().adapters[0]
    }

    /// The zone's records as the cloud holds them, user fields only.
    func cloudRecords(zone: ZoneID = SyncFixture.zone) async throws -> [String: [String: FieldValue]] {
        try await zoneContents(of: embedded, zone: zone)
    }

    static func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: fields)
    }
}

extension InMemoryAdapter {
    /// The store's records by name, fields only.
    var values: [String: [String: FieldValue]] {
        Dictionary(uniqueKeysWithValues: records.map { ($0.key.recordName, $0.value.fields) })
    }
}
