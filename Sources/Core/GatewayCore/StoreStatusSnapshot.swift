import Foundation

/// What `gateway status` shows of one store: read without changing the store or the gateway's
/// state where the adapter kind can (SQLite, PostgreSQL, and kit stores whose state folder the
/// reader may not write), so a monitoring account with read access only can run it.
public struct StoreStatusSnapshot: Sendable, Equatable {
    /// The synchronizer's zone state (as ``ModelAdapter/loadZoneState()`` returns it), `nil`
    /// before the first sync or after a reset.
    public var zoneState: Data?
    /// Whether the store has changes to upload.
    public var hasChanges: Bool
    /// How many records have changes the cloud has not seen (failed ones included).
    public var pendingChanges: Int
    /// Records that failed permanently.
    public var failedRecords: Int
    /// What the counts cannot show, when they are not read live: a store the gateway has not
    /// set up yet, or counts as of the gateway's last look at the store.
    public var note: String?
    /// The failed records with their errors, in name order: the first ``failuresListed`` of the
    /// ``failedRecords``.
    public var failures: [FailedRecord]

    /// How many failed records a snapshot lists at most.
    public static let failuresListed = 1_000

    /// A snapshot of these values.
    public init(zoneState: Data?, hasChanges: Bool, pendingChanges: Int, failedRecords: Int, note: String? = nil, failures: [FailedRecord] = []) {
        self.zoneState = zoneState
        self.hasChanges = hasChanges
        self.pendingChanges = pendingChanges
        self.failedRecords = failedRecords
        self.note = note
        self.failures = failures
    }

    /// The snapshot of a store the gateway has not opened yet: nothing is synced, so everything
    /// it holds waits to be uploaded, but nothing counted it yet.
    public static func notSetUp(_ note: String) -> StoreStatusSnapshot {
        StoreStatusSnapshot(zoneState: nil, hasChanges: true, pendingChanges: 0, failedRecords: 0, note: note)
    }

    /// Reads the snapshot through an opened adapter, whose reads may write (a kit adapter lists
    /// its store into its state first).
    public static func reading(_ adapter: any ModelAdapter) async throws -> StoreStatusSnapshot {
        // The failures last: reading the zone state lists a kit store first, which finds a file
        // that stopped parsing (or was fixed) since the last look.
        let zoneState = try await adapter.loadZoneState()
        let hasChanges = try await adapter.hasChanges()
        let pending = try await adapter.pendingChangeCount()
        let failed = try await adapter.failedRecords()
        return StoreStatusSnapshot(
            zoneState: zoneState, hasChanges: hasChanges, pendingChanges: pending, failedRecords: failed.count, failures: listed(failed))
    }

    /// The first ``failuresListed`` of `failed`, in name order (by bytes).
    public static func listed(_ failed: [FailedRecord]) -> [FailedRecord] {
        Array(failed.sorted { Array($0.recordID.recordName.utf8).lexicographicallyPrecedes($1.recordID.recordName.utf8) }.prefix(failuresListed))
    }

    /// The notes a SQL store's status gives tables whose changes no trigger captured: tables
    /// created again since the last sync (`recreated`) and tables configured since (`added`),
    /// for the adapter named `adapter`. Empty when both are.
    public static func uncapturedTableNotes(recreated: [String], added: [String], adapter: String) -> [String] {
        var notes: [String] = []
        if !recreated.isEmpty {
            notes.append(
                "table \(recreated.joined(separator: ", ")) was created again since the last sync, so its changes were not captured: the next sync compares it with the zone as a store joining it, where the cloud's version wins a row both hold unless you sync it with --store-wins \(adapter)"
            )
        }
        if !added.isEmpty {
            notes.append("table \(added.joined(separator: ", ")) is configured but not synced yet: the next sync installs its change capture and syncs every row")
        }
        return notes
    }
}
