import Foundation

/// A local store kept in sync with one record zone.
///
/// An adapter maps its store to records and keeps the sync state **in the same store, committed
/// in the same transactions as the data**: a change log of local edits (with a version that only
/// grows), one opaque metadata blob per synced record, and one opaque zone-state blob. The blobs
/// belong to the synchronizer; the adapter stores them and hands them back unchanged.
///
/// The contract is small: nine members are required (the store's identity, reading what is
/// pending and what the store holds, writing downloads, committing sync state, and reset). The
/// rest are capabilities with defaults that an adapter overrides where its store can do better:
/// counting pending changes without reading them, keeping failure marks, signalling changes,
/// and releasing what it holds. Decorators conform to ``ForwardingAdapter`` and override only what
/// they change.
///
/// An adapter does not merge, encrypt, batch or retry: the ``Synchronizer`` does. Every method
/// that writes is one transaction. Calls may overlap: ``localState(for:)`` of the next page runs
/// while ``apply(_:)`` writes the current one (never for the same records), and
/// ``pendingChanges(limit:after:)`` runs while ``commit(_:)`` commits an upload's outcome
/// (and conflicts it met are applied) for other records, so an adapter either serializes them or
/// lets its store run them side by side. Prove an adapter with the adapter conformance suite
/// (`AdapterConformance`, which `GatewayTesting` re-exports).
public protocol ModelAdapter: Sendable {
    // MARK: Required

    /// The adapter's name from the configuration, used in logs, errors and status.
    var name: String { get }
    /// The zone this adapter syncs.
    var zoneID: ZoneID { get }

    /// The zone-state blob last committed, `nil` before the first sync or after a reset.
    func loadZoneState() async throws -> Data?

    /// Up to `limit` local changes to upload, saves and deletes together, oldest version first,
    /// only those with a version above `after` when it is given (the synchronizer reads the next
    /// batch while one is in flight). Records marked failed are left out until they change again
    /// or failures are cleared.
    func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges

    /// What the store holds for each record: metadata, pending version, and the current values of
    /// records with pending changes (the only ones the synchronizer merges; adapters may leave
    /// the values of other records out). Records the store knows nothing about are absent.
    func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState]

    /// Every record that has sync metadata, i.e. that the store has seen in the cloud.
    func syncedRecordIDs() async throws -> [RecordID]

    /// Writes remote changes without creating change-log entries, and commits the state update
    /// (metadata, settled versions, zone state and its token) in the same transaction. If any
    /// part fails, nothing is written. Records edited locally since the synchronizer read them
    /// (see ``DownloadedChanges/expectedPendingVersions``) are left alone.
    func apply(_ changes: DownloadedChanges) async throws

    /// Commits sync state without data, in one transaction: an upload's outcome (new metadata,
    /// change-log entries cleared up to the version that was read, so an edit made during the
    /// upload stays pending), upload intents before a request, failure marks, and the zone state.
    func commit(_ update: SyncStateUpdate) async throws

    /// Forgets the zone state and every record's metadata. With `keepData`, every record becomes
    /// a pending change (to be uploaded again); without it, the local data is deleted too, without
    /// creating change-log entries.
    func resetSyncState(keepData: Bool) async throws

    // MARK: Capabilities with defaults

    /// Whether the store holds local changes not yet in the cloud (failed records included).
    /// The default reads one pending change and the failure marks.
    func hasChanges() async throws -> Bool

    /// How many records have local changes not yet in the cloud (failed records included).
    /// The default reads every pending change a page at a time; a store that can count
    /// overrides it.
    func pendingChangeCount() async throws -> Int

    /// Records whose upload failed permanently, with the error, until they change or are retried.
    ///
    /// Failure bookkeeping: an adapter that stores ``SyncStateUpdate/failures`` (and leaves the
    /// marked records out of ``pendingChanges(limit:after:)`` until they change) reports them
    /// here. The default reports none: an adapter that ignores failure marks keeps failed
    /// records pending, and every sync tries them again.
    func failedRecords() async throws -> [FailedRecord]

    /// Clears every failure mark, so failed records are uploaded again. The default does
    /// nothing (an adapter without failure marks retries every sync anyway).
    func retryFailedRecords() async throws

    /// Fires after local changes: each new change signals (several may coalesce into one signal),
    /// also while earlier changes are still pending, since a change made during a sync finds the
    /// store already changed. The adapter's own writes (``apply(_:)``) need not fire. The default
    /// never fires: local changes then wait for the service's `sync_interval`.
    func changeSignals() -> ChangeSignals

    /// Releases what the adapter holds (connections, files, processes) when the process is done
    /// with it: a SQLite store's WAL is checkpointed and removed, a plugin stops. Calls after it
    /// may fail. The default does nothing.
    func close() async
}

extension ModelAdapter {
    public func hasChanges() async throws -> Bool {
        if !(try await pendingChanges(limit: 1, after: nil)).isEmpty { return true }
        return !(try await failedRecords()).isEmpty
    }

    public func pendingChangeCount() async throws -> Int {
        let page = 1_000
        var count = 0
        var after: Int64?
        while true {
            let changes = try await pendingChanges(limit: page, after: after)
            count += changes.count
            guard changes.count >= page, let last = (changes.saves.map(\.version) + changes.deletes.map(\.version)).max() else { break }
            after = last
        }
        return count + (try await failedRecords()).count
    }

    public func failedRecords() async throws -> [FailedRecord] { [] }

    public func retryFailedRecords() async throws {}

    public func changeSignals() -> ChangeSignals { .never }

    /// Does nothing: the adapter holds nothing that its last reference does not release.
    public func close() async {}

    /// Up to `limit` local changes to upload, oldest first.
    public func pendingChanges(limit: Int) async throws -> PendingChanges {
        try await pendingChanges(limit: limit, after: nil)
    }
}

/// Local changes waiting to be uploaded.
public struct PendingChanges: Sendable, Equatable {
    /// Records saved locally, with their current values.
    public var saves: [PendingSave]
    /// Records deleted locally.
    public var deletes: [PendingDelete]

    /// Changes to upload, oldest first.
    public init(saves: [PendingSave] = [], deletes: [PendingDelete] = []) {
        self.saves = saves
        self.deletes = deletes
    }

    /// Whether nothing is pending.
    public var isEmpty: Bool { saves.isEmpty && deletes.isEmpty }

    /// The changes of records not in `excluded`, the oldest `limit` of them. Consuming, so that
    /// the records kept are moved rather than shared with the original.
    public consuming func excluding(_ excluded: Set<RecordID>, limit: Int) -> PendingChanges {
        excluding(where: excluded.contains, limit: limit)
    }

    /// The changes of records `excluded` does not match, the oldest `limit` of them.
    package consuming func excluding(where excluded: (RecordID) -> Bool, limit: Int) -> PendingChanges {
        guard limit > 0 else { return PendingChanges() }
        saves.removeAll { excluded($0.record.id) }
        deletes.removeAll { excluded($0.recordID) }
        let versions = (saves.map(\.version) + deletes.map(\.version)).sorted()
        if versions.count > limit {
            let cutoff = versions[limit - 1]
            saves.removeAll { $0.version > cutoff }
            deletes.removeAll { $0.version > cutoff }
        }
        return self
    }
    /// How many changes there are.
    public var count: Int { saves.count + deletes.count }
}

/// A record saved locally and not yet uploaded.
public struct PendingSave: Sendable, Equatable {
    /// The record's current values (no change tag).
    public var record: Record
    /// The record's sync metadata, `nil` if it was never synced.
    public var metadata: Data?
    /// The change-log version that was read; only entries up to it are cleared after upload.
    public var version: Int64

    /// A save of `record` at change-log `version`, with the metadata of its last synced version.
    public init(record: Record, metadata: Data?, version: Int64) {
        self.record = record
        self.metadata = metadata
        self.version = version
    }
}

/// A record deleted locally and not yet deleted in the cloud.
public struct PendingDelete: Sendable, Equatable {
    /// The deleted record.
    public var recordID: RecordID
    /// The record's sync metadata, `nil` if it was never synced.
    public var metadata: Data?
    /// The change-log version that was read.
    public var version: Int64

    /// A delete of `recordID` at change-log `version`, with the metadata of its last synced
    /// version.
    public init(recordID: RecordID, metadata: Data?, version: Int64) {
        self.recordID = recordID
        self.metadata = metadata
        self.version = version
    }
}

/// What the store holds for one record.
public struct LocalRecordState: Sendable, Equatable {
    /// The current values; `nil` when the record does not exist locally (deleted or never seen).
    /// May also be `nil` for a record without pending changes: adapters need not read it.
    public var record: Record?
    /// The record's sync metadata, `nil` if it was never synced.
    public var metadata: Data?
    /// The change-log version when the record has local changes not yet uploaded.
    ///
    /// Versions of one store only grow. Where a store can, they keep growing across a restore of
    /// it (the SQLite adapter numbers its log from the clock): a pending delete of a record this
    /// adapter uploaded from a change with a higher version is taken for older than that upload.
    public var pendingVersion: Int64?

    /// What the store holds for a record: the record (`nil` if absent), its metadata and its
    /// pending change's version.
    public init(record: Record?, metadata: Data?, pendingVersion: Int64?) {
        self.record = record
        self.metadata = metadata
        self.pendingVersion = pendingVersion
    }

    /// Whether the record has local changes not yet uploaded.
    public var hasPendingChanges: Bool { pendingVersion != nil }

    /// Whether the store knows nothing of the record: no values, no metadata, no pending change.
    public var isEmpty: Bool { record == nil && metadata == nil && pendingVersion == nil }
}

/// A sync-state change an adapter commits in one transaction (with downloaded data, or after an upload).
public struct SyncStateUpdate: Sendable, Equatable {
    /// New metadata per record.
    public var metadata: [RecordID: Data]
    /// Records whose metadata is removed.
    public var removedMetadata: Set<RecordID>
    /// Change-log entries to clear, per record, up to and including this version.
    public var settled: [RecordID: Int64]
    /// Records whose upload failed permanently; they stay pending but are not offered for upload
    /// until they change again.
    public var failures: [RecordID: RecordFailure]
    /// The new zone state.
    public var zoneState: Data
    /// Records of ``metadata`` whose entry is an upload intent: the values about to be sent,
    /// committed before the request so that a lost answer is recognised later. Storing them like
    /// any other metadata is always correct. An adapter may instead keep them aside more cheaply
    /// (the SQLite adapter writes them as one journal row), provided that every later read returns
    /// them until a later update writes or removes metadata for the same records, and that they
    /// survive a crash as the rest of the update does.
    public var sending: Set<RecordID>
    /// Records whose intents an earlier update committed and whose batch is still being sent
    /// while this update answers the batch before it. An adapter that keeps intents aside keeps
    /// these aside too; one that stores intents as metadata has nothing to do.
    public var stillSending: Set<RecordID>

    /// An update; every part is optional, and all of it commits in one transaction.
    public init(
        metadata: [RecordID: Data] = [:], removedMetadata: Set<RecordID> = [], settled: [RecordID: Int64] = [:],
        failures: [RecordID: RecordFailure] = [:], zoneState: Data, sending: Set<RecordID> = [], stillSending: Set<RecordID> = []
    ) {
        self.metadata = metadata
        self.removedMetadata = removedMetadata
        self.settled = settled
        self.failures = failures
        self.zoneState = zoneState
        self.sending = sending
        self.stillSending = stillSending
    }
}

/// Remote changes to write into the store with their sync state.
public struct DownloadedChanges: Sendable, Equatable {
    /// Records to write: each replaces the whole local record (absent fields become null).
    public var writes: [Record]
    /// Records to delete locally.
    public var deletes: [RecordID]
    /// The sync state committed with the data.
    public var state: SyncStateUpdate
    /// The pending version each record had when the synchronizer read it (0: no pending change).
    /// A record whose pending version differs when the transaction runs was edited locally in the
    /// meantime: the adapter leaves it alone (no write, no delete, no metadata, no settling), so
    /// the edit is kept and merged on a later sync. The zone state is committed regardless.
    public var expectedPendingVersions: [RecordID: Int64]
    /// Records of ``writes`` the store reported nothing for when the page was merged (no sync
    /// metadata, no pending change): new to this store as far as the gateway knows. A hint that
    /// lets an adapter insert them without the conflict handling an update needs; another program
    /// may still have created such a row since, so the adapter must cope with one existing.
    public var absentLocally: Set<RecordID>
    /// Whether the download that sent this page applies another one next. An adapter may then
    /// finish committing this page's state beside the next page's write, provided it completes
    /// that commit before any other operation, before a page that shares a record with this one,
    /// and when it closes; until then a crash must leave the page to be replayed.
    public var moreComing: Bool

    /// A page to apply: records to write and delete, the state to commit with them, and what the
    /// store must still hold for the writes to go ahead.
    public init(
        writes: [Record] = [], deletes: [RecordID] = [], state: SyncStateUpdate,
        expectedPendingVersions: [RecordID: Int64] = [:], absentLocally: Set<RecordID> = [], moreComing: Bool = false
    ) {
        self.writes = writes
        self.deletes = deletes
        self.state = state
        self.expectedPendingVersions = expectedPendingVersions
        self.absentLocally = absentLocally
        self.moreComing = moreComing
    }
}

/// Why a record could not be uploaded, kept until it changes or is retried.
public struct RecordFailure: Sendable, Equatable, Codable {
    /// The change-log version that failed; a later version is uploaded again.
    public var version: Int64
    /// The error code, such as `limitExceeded`.
    public var code: String
    /// The error message (never field values).
    public var message: String

    /// A failure of the change at `version`, with the cloud's code and message.
    public init(version: Int64, code: String, message: String) {
        self.version = version
        self.code = code
        self.message = message
    }
}

/// A failed record, for status and `gateway retry`.
public struct FailedRecord: Sendable, Equatable {
    /// The record that failed.
    public var recordID: RecordID
    /// Why, and which version of the change.
    public var failure: RecordFailure

    /// A failed record and its failure.
    public init(recordID: RecordID, failure: RecordFailure) {
        self.recordID = recordID
        self.failure = failure
    }
}
