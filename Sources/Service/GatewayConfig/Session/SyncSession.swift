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
    ///   - tolerateUnavailableStores: when a store cannot be reached (its server is down), open
    ///     the others and give that adapter a ``ReopeningAdapter``, which fails its syncs until the
    ///     store can be opened, instead of failing the whole session. A store that does not match
    ///     the config, and an unreachable cloud, still fail it.
    public static func open(
        _ configuration: GatewayConfiguration, adapters: [AdapterConfiguration], tolerateUnavailableStores: Bool = false
    ) async throws -> SyncSession {
        try await GatewayStores.check(configuration, adapters: [], cloud: true)
        var unreachable: Set<String> = []
        for adapter in adapters {
            do {
                try await GatewayStores.check(configuration, adapters: [adapter], cloud: false)
            } catch let error as GatewayError where tolerateUnavailableStores && error.code == .storeUnavailable {
                unreachable.insert(adapter.name)
            }
        }
        try GatewayStores.prepareStateDirectory(configuration)
        let processLock = try ProcessLock(stateDirectory: configuration.context.stateDirectory)
        let deviceID = try DeviceIdentity.load(
            configured: configuration.settings.deviceID?.value, stateDirectory: configuration.context.stateDirectory)
        let stateLock = try await GatewayStores.lockGatewayState(configuration, deviceID: deviceID)
        do {
            let cloud = try await GatewayStores.openCloud(configuration)
            var opened: [OpenedAdapter] = []
            for adapter in adapters {
                if unreachable.contains(adapter.name) {
                    opened.append(OpenedAdapter(configuration: adapter, adapter: ReopeningAdapter(adapter)))
                    continue
                }
                do {
                    opened += try await GatewayStores.open([adapter])
                } catch let error as GatewayError where tolerateUnavailableStores && error.code == .storeUnavailable {
                    opened.append(OpenedAdapter(configuration: adapter, adapter: ReopeningAdapter(adapter)))
                }
            }
            return SyncSession(deviceID: deviceID, cloud: cloud, adapters: opened, processLock: processLock, stateLock: stateLock)
        } catch {
            await stateLock?.release()
            throw error
        }
    }

    /// The adapters whose stores could not be opened yet.
    public var unopenedAdapters: [String] {
        adapters.compactMap { ($0.adapter as? ReopeningAdapter).flatMap { $0.isOpen ? nil : $0.name } }
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
