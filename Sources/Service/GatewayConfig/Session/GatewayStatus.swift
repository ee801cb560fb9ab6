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
    /// What the counts cannot show, when they were not read live (``StoreStatusSnapshot/note``).
    public var note: String?
    /// Why the store could not be opened or read (the counts are then unknown).
    public var error: String? {
        didSet { healthState = health() }
    }
    /// ``health(consecutiveFailures:lastFailureCode:)`` from the store alone (`health` in JSON).
    public private(set) var healthState: AdapterHealthState?
    /// The failed records with their errors, in name order (at most
    /// `StoreStatusSnapshot.failuresListed`); `nil` unless asked for (`gateway status --failed`).
    public var failures: [FailedRecordStatus]?

    enum CodingKeys: String, CodingKey {
        case name, kind, zone, hasChanges, pendingChanges, failedRecords, batchSize, hasSynced, pausedReason, note, error, failures
        case healthState = "health"
    }

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
        healthState = health()
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
        healthState = health()
    }

    static func read(_ opened: OpenedAdapter, configuration: GatewayConfiguration) async throws -> AdapterStatus {
        try AdapterStatus(opened.configuration, snapshot: try await StoreStatusSnapshot.reading(opened.adapter), configuration: configuration)
    }

    /// The line of an adapter from what its store says.
    /// - Throws: ``SyncError`` when the zone state cannot be decoded.
    public init(_ adapter: AdapterConfiguration, snapshot: StoreStatusSnapshot, configuration: GatewayConfiguration) throws {
        let state = try ZoneSyncState(decoding: snapshot.zoneState)
        // Downloads the store refused are failed records too: kept in the zone state, not as marks.
        let refused = state.refused.map { $0.value.failedRecord(named: $0.key, in: adapter.settings.zoneID) }
        self.init(
            name: adapter.name, kind: adapter.settings.kind.value, zone: adapter.settings.zoneID.zoneName, hasChanges: snapshot.hasChanges,
            pendingChanges: snapshot.pendingChanges, failedRecords: snapshot.failedRecords + refused.count,
            batchSize: state.effectiveBatchSize(configured: configuration.syncOptions(for: adapter).batchSize), hasSynced: state.token != nil,
            pausedReason: state.pausedReason)
        note = snapshot.note
        failures = (refused.isEmpty ? snapshot.failures : StoreStatusSnapshot.listed(snapshot.failures + refused)).map(FailedRecordStatus.init)
    }
}

/// A failed record as `gateway status --failed` shows it.
public struct FailedRecordStatus: Sendable, Codable, Equatable {
    /// The record's name.
    public var recordName: String
    /// The error code, such as `limitExceeded` or `invalidJSON`.
    public var code: String
    /// What went wrong (never field values).
    public var message: String

    /// The line of `failed`.
    public init(_ failed: FailedRecord) {
        recordName = failed.recordID.recordName
        code = failed.failure.code
        message = failed.failure.message
    }
}

/// An adapter's health in one word, computed once (``AdapterStatus/health(consecutiveFailures:lastFailureCode:)``)
/// and shown the same way by `gateway status --json`, `/status` and the status page.
public enum AdapterHealthState: String, Sendable, Codable, CaseIterable {
    /// Synced, nothing waiting.
    case ok
    /// Changes wait to be sent, or the adapter has not synced yet.
    case pending
    /// Its last syncs failed, or some of its records failed.
    case failing
    /// Its store cannot be opened or read now.
    case unreachable
    /// Its last sync made no progress for `stall_timeout`.
    case stalled
    /// Paused (its zone was deleted, `on_zone_deleted: pause`) until it is reset.
    case paused
}

extension AdapterStatus {
    /// The adapter's health from what its store says and, under `gateway run`, from its last
    /// syncs (`consecutiveFailures` failed in a row, the last with `lastFailureCode`). The first
    /// that applies: unreachable, paused, stalled or failing (failed syncs), failing (failed
    /// records), pending, ok.
    public func health(consecutiveFailures: Int = 0, lastFailureCode: String? = nil) -> AdapterHealthState {
        if error != nil { return .unreachable }
        if pausedReason != nil { return .paused }
        if consecutiveFailures > 0 { return lastFailureCode == "stalled" ? .stalled : .failing }
        if failedRecords > 0 { return .failing }
        if hasChanges || pendingChanges > 0 || !hasSynced { return .pending }
        return .ok
    }
}
