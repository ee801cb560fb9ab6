/// What one sync did, per adapter.
public struct SyncReport: Sendable {
    /// One report per adapter, in configuration order.
    public var adapters: [AdapterSyncReport]

    /// A report of a whole sync.
    public init(adapters: [AdapterSyncReport]) {
        self.adapters = adapters
    }

    /// Whether every adapter synced (paused adapters count as not synced).
    public var succeeded: Bool { adapters.allSatisfy { $0.outcome == .synced } }
}

/// What one sync did for one adapter.
public struct AdapterSyncReport: Sendable {
    /// How the adapter's sync ended.
    public enum Outcome: Sendable, Equatable {
        /// Downloads and uploads completed (failed records may remain; see ``AdapterSyncReport/failedRecords``).
        case synced
        /// The adapter is paused because its zone was deleted; reset it to resume.
        case paused(reason: String)
        /// The sync of this adapter stopped with this error; everything unsent stays pending.
        case failed(code: SyncError.Code, message: String)
    }

    /// The adapter's name.
    public var adapter: String
    /// How its pass ended.
    public var outcome: Outcome
    /// Records written locally from the cloud.
    public var downloaded = 0
    /// Records deleted locally because they were deleted in the cloud.
    public var deletedLocally = 0
    /// Records the store and the cloud both held with the same values and no common ancestor (a
    /// reset, two stores seeded alike): adopted as synced, with nothing written either way.
    public var matched = 0
    /// Records saved to the cloud.
    public var uploaded = 0
    /// Records deleted in the cloud.
    public var deletedRemotely = 0
    /// Conflicts resolved, by outcome.
    public var conflicts: [ConflictOutcome: Int] = [:]
    /// Records whose conflict no resolver answered in this sync, each counted once.
    var unresolvedRecords: Set<RecordID> = []
    /// Downloaded records the store refused in this sync (``RefusedDownload``), each counted
    /// once in ``failedRecords``.
    public internal(set) var refusedDownloads: Set<RecordID> = []
    /// The downloads the store still refuses when the pass ends, this sync's and earlier ones'
    /// (``RefusedDownload``): they stay unsynced until the store takes them.
    public internal(set) var refusedAtEnd: [FailedRecord] = []
    /// Records this pass saved whose cloud version holds a field the upload did not name (a
    /// partial save kept it): the store lacks that value until it downloads the version, which a
    /// follow-up pass of the same sync does.
    var savesTheCloudCompleted = 0
    /// Those records, with why (code `resolverFailed`): they stay pending, left as they were on
    /// both sides, and the next sync asks again.
    public var unresolvedFailures: [FailedRecord] = []
    /// Records that failed permanently in this sync.
    public var failedRecords = 0
    /// Of ``failedRecords``, those that carry a failure mark in the store (the rest are
    /// ``unresolvedFailures``, which stay pending without one): what `gateway status` counts.
    public var markedFailedRecords: Int { max(0, failedRecords - unresolvedFailures.count) }
    /// Local edits of a read-only shared zone that the cloud refused: kept in the refused-edits
    /// journal and replaced in the store by the zone's versions.
    public var refusedEdits = 0
    /// Records of the store that stay unsynced after this sync, failed in it or before (a
    /// failure mark, a document that does not parse), as the store lists them: the first few, for
    /// the summary (the count is ``failingRecordCount``). Filled by callers that ask the store
    /// after the sync (`gateway sync`); empty otherwise.
    public var failingRecords: [FailedRecord] = []
    /// How many records stay unsynced after this sync (see ``failingRecords``).
    public var failingRecordCount = 0
    /// The upload batch size at the end.
    public var batchSize = 0
    /// The zone the adapter synced, when its pass began (`nil` for a report of an adapter that
    /// did not get its turn).
    public var zone: ZoneID?
    /// Whether the upload stopped at its bound (twice what was pending when it began) while
    /// local changes kept arriving: the rest wait for the next sync.
    public var uploadBounded = false
    /// What became of the adapter's zone when this sync found it deleted in the cloud and
    /// `on_zone_deleted` recreated it (or mirrored it); `nil` otherwise. Logged as a warning and
    /// shown under the summary: someone deleted every record of the zone, and the gateway put
    /// them back (or removed them locally).
    public var zoneRecovery: String?
    /// The full error, for logs, when the outcome is failed.
    public var error: SyncError?

    /// The code every surface shows for a failed outcome: the most precise one in the error's
    /// chain of causes (a plugin's `pluginExited` rather than `adapterFailed`); `nil` unless failed.
    public var failureCode: String? {
        guard case .failed(let code, _) = outcome else { return nil }
        return error.flatMap { mostPreciseFailureCode(of: $0) } ?? code.rawValue
    }

    /// A report of one adapter's pass.
    public init(adapter: String, outcome: Outcome = .synced) {
        self.adapter = adapter
        self.outcome = outcome
    }

    /// This report followed by a later pass of the same adapter in the same sync: the counts add
    /// up, and the outcome, error and batch size are the later pass's.
    func adding(_ later: AdapterSyncReport) -> AdapterSyncReport {
        var total = later
        total.downloaded += downloaded
        total.deletedLocally += deletedLocally
        total.matched += matched
        total.uploaded += uploaded
        total.deletedRemotely += deletedRemotely
        // A record no resolver answered in both passes is one failed record, one unresolved conflict.
        let repeated = later.unresolvedRecords.intersection(unresolvedRecords).count
        let refusedAgain = later.refusedDownloads.intersection(refusedDownloads).count
        total.refusedDownloads.formUnion(refusedDownloads)
        total.unresolvedFailures = unresolvedFailures + later.unresolvedFailures.filter { !unresolvedRecords.contains($0.recordID) }
        total.unresolvedRecords.formUnion(unresolvedRecords)
        total.failedRecords += failedRecords - repeated - refusedAgain
        total.refusedEdits += refusedEdits
        total.conflicts.merge(conflicts, uniquingKeysWith: +)
        if repeated > 0 { total.conflicts[.unresolved, default: repeated] -= repeated }
        return total
    }

    /// How many conflicts were resolved.
    public var conflictCount: Int { conflicts.values.reduce(0, +) }
}
