import GatewayCore
import Logging

/// What a process that syncs a config holds: the state folder's lock, the cloud's lock on this
/// gateway's state, and the opened cloud and adapters. `gateway sync`, `gateway retry` and
/// `gateway run` all open one the same way.
public struct SyncSession: Sendable {
    public let deviceID: String
    public let cloud: any CloudDatabase
    public let adapters: [OpenedAdapter]
    /// The adapters made from the config's `database: shared` templates; `nil` without templates.
    public let shared: SharedZoneAdapters?
    /// The config's resolver processes, started when first asked about a conflict.
    public let batchResolvers: [String: any BatchConflictResolver]
    /// Why each adapter whose store could not be opened at the start could not, by name.
    public let startFailures: [String: String]
    private let processLock: ProcessLock
    private let stateLock: (any GatewayStateLock)?

    /// Checks the config's stores and cloud without writing, then prepares the state folder,
    /// takes both locks and opens the cloud and `adapters`, in that order. The adapters' stores
    /// are checked at once and opened at once; the first failure in config order is the one thrown.
    /// - Throws: ``GatewayError`` (lock held, store or cloud unavailable) or ``ConfigError`` (a
    ///   store that does not match the config).
    ///   - tolerateUnavailableStores: when a store cannot be reached (its server is down), open
    ///     the others and give that adapter a ``ReopeningAdapter``, which fails its syncs until the
    ///     store can be opened, instead of failing the whole session. A store that does not match
    ///     the config, and an unreachable cloud, still fail it.
    ///   - tolerateMismatchedStores: with `tolerateUnavailableStores`, a store that does not match
    ///     the config (a table renamed by a migration under way) fails only its adapter too, until
    ///     it matches again: for a service, where one application's migration must not stop the
    ///     others' stores.
    public static func open(
        _ configuration: GatewayConfiguration, adapters: [AdapterConfiguration], tolerateUnavailableStores: Bool = false,
        tolerateMismatchedStores: Bool = false, logger: Logger = Logger(label: "gateway")
    ) async throws -> SyncSession {
        try await GatewayStores.check(configuration, adapters: [], cloud: true)
        // Stores are checked, and then opened, all at once (a first sync's backfill of one store
        // overlaps another's connection and capture install); failures are reported in config order.
        let checks = await GatewayStores.forEach(adapters) { adapter in
            try await GatewayStores.check(configuration, adapters: [adapter], cloud: false, beforeOpening: true)
        }
        do {
            let tolerated: @Sendable (any Error) -> Bool = { error in
                guard tolerateUnavailableStores else { return false }
                if let error = error as? GatewayError { return error.code == .storeUnavailable }
                if let error = error as? ConfigError { return tolerateMismatchedStores && error.code == .storeMismatch }
                return false
            }
            return try await openChecked(configuration, adapters: adapters, checks: checks, tolerated: tolerated, logger: logger)
        } catch {
            // What a check kept for an open that did not happen (a plugin's process) stops now.
            for adapter in adapters { await adapter.plan.discardCheck() }
            throw error
        }
    }

    /// The rest of ``open(_:adapters:tolerateUnavailableStores:tolerateMismatchedStores:logger:)``,
    /// once the stores are checked; `tolerated` says which failures leave an adapter unopened.
    private static func openChecked(
        _ configuration: GatewayConfiguration, adapters: [AdapterConfiguration], checks: [Result<Void, any Error>],
        tolerated: @escaping @Sendable (any Error) -> Bool, logger: Logger
    ) async throws -> SyncSession {
        var startFailures: [String: String] = [:]
        for (adapter, check) in zip(adapters, checks) {
            do {
                try check.get()
            } catch where tolerated(error) {
                startFailures[adapter.name] = Self.reason(error)
            }
        }
        try GatewayStores.prepareStateDirectory(configuration)
        let processLock = try ProcessLock(stateDirectory: configuration.context.stateDirectory)
        try KeyFingerprints.check(configuration)
        let deviceID = try DeviceIdentity.load(
            configured: configuration.settings.deviceID?.value, stateDirectory: configuration.context.stateDirectory)
        let stateLock = try await GatewayStores.lockGatewayState(configuration, deviceID: deviceID)
        let cloud: any CloudDatabase
        do {
            cloud = try await GatewayStores.openCloud(configuration)
        } catch {
            await stateLock?.release()
            throw error
        }
        do {
            let checkFailures = startFailures
            let outcomes = await GatewayStores.forEach(adapters) { adapter -> (opened: OpenedAdapter, failure: String?) in
                if let failure = checkFailures[adapter.name] { return (OpenedAdapter(configuration: adapter, adapter: ReopeningAdapter(adapter)), failure) }
                do {
                    let opened = try await GatewayStores.open([adapter])[0]
                    return (OpenedAdapter(configuration: adapter, adapter: ReopeningAdapter(adapter, opened: opened.adapter)), nil)
                } catch where tolerated(error) {
                    return (OpenedAdapter(configuration: adapter, adapter: ReopeningAdapter(adapter)), Self.reason(error))
                }
            }
            guard let failure = outcomes.lazy.compactMap({ outcome -> (any Error)? in
                if case .failure(let error) = outcome { return error }
                return nil
            }).first
            else {
                let opened = try outcomes.map { try $0.get() }
                var failures: [String: String] = [:]
                for (adapter, failure) in opened { if let failure { failures[adapter.configuration.name] = failure } }
                return SyncSession(
                    deviceID: deviceID, cloud: cloud, adapters: opened.map(\.opened),
                    shared: configuration.sharedTemplates.isEmpty ? nil : SharedZoneAdapters(configuration: configuration, cloud: cloud, logger: logger),
                    batchResolvers: configuration.startResolverProcesses(), startFailures: failures, processLock: processLock, stateLock: stateLock)
            }
            // One store failed to open: close those that did (their plugin processes and
            // connections), so a failed start leaves nothing running.
            for case .success(let outcome) in outcomes { await outcome.opened.adapter.close() }
            throw failure
        } catch {
            await stateLock?.release()
            await cloud.close()
            throw error
        }
    }

    /// A start failure as its adapter's syncs will report it.
    private static func reason(_ error: any Error) -> String {
        (error as? GatewayError)?.message ?? (error as? ConfigError)?.description ?? "\(error)"
    }

    /// The adapters whose stores could not be opened yet.
    public var unopenedAdapters: [String] {
        adapters.compactMap { ($0.adapter as? ReopeningAdapter).flatMap { $0.isOpen ? nil : $0.name } }
    }

    /// The config's adapters and those made for shared zones so far.
    public func allAdapters() async -> [OpenedAdapter] {
        adapters + (await shared?.adapters ?? [])
    }

    /// The synchronizer over the session's adapters (or `adapters`), with each adapter's
    /// configured options.
    public func synchronizer(
        _ configuration: GatewayConfiguration, adapters: [OpenedAdapter]? = nil, observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) -> Synchronizer {
        Synchronizer(
            cloud: cloud,
            adapters: (adapters ?? self.adapters).map { SyncedAdapter($0.adapter, options: configuration.syncOptions(for: $0.configuration)) },
            configuration: configuration.syncConfiguration(deviceID: deviceID, batchResolvers: batchResolvers), observer: observer)
    }

    /// Closes the adapters (their files, connections and plugin processes) and the resolver
    /// processes, releases the cloud's lock and closes the cloud; the state folder's lock goes
    /// with the last copy of the session.
    public func end() async {
        for opened in adapters { await opened.adapter.close() }
        await shared?.closeAll()
        for resolver in batchResolvers.values { await resolver.close() }
        await stateLock?.release()
        await cloud.close()
        withExtendedLifetime(processLock) {}
    }
}
