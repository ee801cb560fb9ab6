import GatewayCore

/// One sync of a config's adapters, as `gateway sync` and `gateway retry` run it: prepare the
/// state folder, take the process lock, open the cloud and the adapters, sync, release.
public enum ManualSync {
    /// Syncs the named adapters (all when `names` is empty).
    /// - Parameters:
    ///   - beforeSync: runs on the opened adapters while the lock is held, before the sync
    ///     (`gateway retry` clears failure marks here).
    /// - Throws: ``GatewayError`` (lock held, store or cloud unavailable, unknown adapter) or
    ///   ``ConfigError`` (a store that does not match the config). Sync failures are in the report.
    public static func run(
        _ configuration: GatewayConfiguration, adapters names: [String] = [],
        beforeSync: @Sendable ([OpenedAdapter]) async throws -> Void = { _ in },
        observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) async throws -> SyncReport {
        let selected = try GatewayStores.select(names, in: configuration)
        try await GatewayStores.check(configuration, adapters: selected, cloud: true)
        try GatewayStores.prepareStateDirectory(configuration)
        let lock = try ProcessLock(stateDirectory: configuration.context.stateDirectory)
        let deviceID = try DeviceIdentity.load(
            configured: configuration.settings.deviceID?.value, stateDirectory: configuration.context.stateDirectory)
        let stateLock = try await GatewayStores.lockGatewayState(configuration, deviceID: deviceID)
        let cloud = try await GatewayStores.openCloud(configuration)
        let adapters = try await GatewayStores.open(selected)
        try await beforeSync(adapters)
        let synchronizer = Synchronizer(
            cloud: cloud,
            adapters: adapters.map { SyncedAdapter($0.adapter, options: configuration.syncOptions(for: $0.configuration)) },
            configuration: configuration.syncConfiguration(deviceID: deviceID), observer: observer)
        let report: SyncReport
        do {
            report = try await synchronizer.sync()
        } catch {
            await stateLock?.release()
            throw error
        }
        await stateLock?.release()
        withExtendedLifetime(lock) {}
        return report
    }
}
