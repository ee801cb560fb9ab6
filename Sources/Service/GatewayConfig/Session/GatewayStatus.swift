import Foundation
import GatewayCore

/// What `gateway status` reports: whether each adapter has local changes the cloud has not seen,
/// read from the stores themselves, so it works without the service.
public struct GatewayStatus: Sendable, Codable, Equatable {
    /// Whether any adapter has changes to upload.
    public var hasChanges: Bool
    /// One line per adapter, in the config's order.
    public var adapters: [AdapterStatus]

    /// A status of these lines.
    public init(adapters: [AdapterStatus]) {
        self.hasChanges = adapters.contains(where: \.hasChanges)
        self.adapters = adapters
    }

    /// Whether some adapter's store could not be opened or read.
    public var hasUnreadableStores: Bool { adapters.contains { $0.error != nil } }

    /// Reads the status of opened adapters.
    /// - Parameter tolerant: report an adapter whose store cannot be read with its ``AdapterStatus/error``
    ///   (and `hasChanges`, since nothing shows it is synced) instead of failing the whole status.
    public static func read(_ adapters: [OpenedAdapter], configuration: GatewayConfiguration, tolerant: Bool = false) async throws
        -> GatewayStatus
    {
        var statuses: [AdapterStatus] = []
        for opened in adapters {
            do {
                statuses.append(try await AdapterStatus.read(opened, configuration: configuration))
            } catch let error as SyncError where !tolerant {
                throw error
            } catch {
                let failure = GatewayError(.storeUnavailable, "adapter \(opened.name): cannot read its status: \(error)", underlying: error)
                guard tolerant else { throw failure }
                statuses.append(AdapterStatus(unreadable: opened, error: failure.message))
            }
        }
        return GatewayStatus(adapters: statuses)
    }
}

/// One adapter's line of ``GatewayStatus``.
public struct AdapterStatus: Sendable, Codable, Equatable {
    public var name: String
    public var kind: String
    public var zone: String
    /// Whether the store has changes to upload.
    public var hasChanges: Bool
    /// How many records have local changes the cloud has not seen (failed records included,
    /// as `ModelAdapter.pendingChangeCount()` counts them).
    public var pendingChanges: Int
    /// Records that failed permanently; `gateway retry` sends them again.
    public var failedRecords: Int
    /// The upload batch size the next sync starts with.
    public var batchSize: Int
    /// Whether the adapter has downloaded from its zone at least once.
    public var hasSynced: Bool
    /// Why the adapter is paused, when it is.
    public var pausedReason: String?
    /// Why the store could not be read (the service's status only; the counts are then unknown).
    public var error: String?

    init(unreadable opened: OpenedAdapter, error: String) {
        self.init(unreadable: opened.configuration, error: error)
    }

    /// The line of an adapter whose store could not be opened or read: its counts are unknown,
    /// and `hasChanges` is true since nothing shows it is synced.
    public init(unreadable configuration: AdapterConfiguration, error: String) {
        name = configuration.name
        kind = configuration.settings.kind.value
        zone = configuration.settings.zoneID.zoneName
        hasChanges = true
        pendingChanges = 0
        failedRecords = 0
        batchSize = 0
        hasSynced = false
        self.error = error
    }

    /// A line with every count known (``error`` unset).
    public init(
        name: String, kind: String, zone: String, hasChanges: Bool, pendingChanges: Int, failedRecords: Int, batchSize: Int, hasSynced: Bool,
        pausedReason: String?
    ) {
        self.name = name
        self.kind = kind
        self.zone = zone
        self.hasChanges = hasChanges
        self.pendingChanges = pendingChanges
        self.failedRecords = failedRecords
        self.batchSize = batchSize
        self.hasSynced = hasSynced
        self.pausedReason = pausedReason
    }

    static func read(_ opened: OpenedAdapter, configuration: GatewayConfiguration) async throws -> AdapterStatus {
        let adapter = opened.adapter
        let options = configuration.syncOptions(for: opened.configuration)
        let state = try ZoneSyncState(decoding: try await adapter.loadZoneState())
        return AdapterStatus(
            name: opened.name, kind: opened.configuration.settings.kind.value, zone: adapter.zoneID.zoneName,
            hasChanges: try await adapter.hasChanges(), pendingChanges: try await adapter.pendingChangeCount(),
            failedRecords: try await adapter.failedRecords().count,
            batchSize: state.effectiveBatchSize(configured: options.batchSize), hasSynced: state.token != nil,
            pausedReason: state.pausedReason)
    }
}
