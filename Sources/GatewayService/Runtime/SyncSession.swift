import GatewayCore

/// What a process that syncs a config holds: the state folder's lock, the cloud's lock on this
/// gateway's state, and the opened cloud and adapters. `gateway sync`, `gateway retry` and
/// `gateway run` all open one the same way.
public struct SyncSession: Sendable {
    public let deviceID: String
    public let cloud: any CloudDatabase
    public let adapters: [OpenedAdapter]
    private let processLock: ProcessLock
    private let stateLock: (any GatewayStateLock)?

    /// Checks the config's stores and cloud without writing, then prepares the state folder,
    /// takes both locks and opens the cloud and `adapters`, in that order.
    /// - Throws: ``GatewayError`` (lock held, store or cloud unavailable) or ``ConfigError`` (a
    ///   store that does not match the config).
    public static func open(_ configuration: GatewayConfiguration, adapters: [AdapterConfiguration]) async throws -> SyncSession {
        try await GatewayStores.check(configuration, adapters: adapters, cloud: true)
        try GatewayStores.prepareStateDirectory(configuration)
        let processLock = try ProcessLock(stateDirectory: configuration.context.stateDirectory)
        let deviceID = try DeviceIdentity.load(
            configured: configuration.settings.deviceID?.value, stateDirectory: configuration.context.stateDirectory)
        let stateLock = try await GatewayStores.lockGatewayState(configuration, deviceID: deviceID)
        do {
            return SyncSession(
                deviceID: deviceID, cloud: try await GatewayStores.openCloud(configuration),
                adapters: try await GatewayStores.open(adapters), processLock: processLock, stateLock: stateLock)
        } catch {
            await stateLock?.release()
            throw error
        }
    }

    /// The synchronizer over the session's adapters, with each adapter's configured options.
    public func synchronizer(
        _ configuration: GatewayConfiguration, observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) -> Synchronizer {
        Synchronizer(
            cloud: cloud,
            adapters: adapters.map { SyncedAdapter($0.adapter, options: configuration.syncOptions(for: $0.configuration)) },
            configuration: configuration.syncConfiguration(deviceID: deviceID), observer: observer)
    }

    /// Releases the cloud's lock; the state folder's lock goes with the last copy of the session.
    public func end() async {
        await stateLock?.release()
        withExtendedLifetime(processLock) {}
    }
}
