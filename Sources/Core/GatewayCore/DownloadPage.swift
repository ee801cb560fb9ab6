import Foundation

/// One page of a zone's changes on its way into the store: the one page type between the
/// cloud's answer (``ZoneChanges``) and the store's write (``DownloadedChanges``).
///
/// A page is **opened** (its records decrypted, assets fetched, reserved fields taken out:
/// ``incoming``), then **merged** with the store's state of its records
/// (``SyncContext/merge(_:local:zoneState:)``: ``changes`` and the conflicts), then its
/// deferred conflicts are **resolved** by batch resolvers, and its changes are applied with its
/// token. Conflicts met by an upload, and records a full refetch did not return, take the same
/// way as a page without a token.
struct DownloadPage: Sendable {
    /// The page's records in the store's form: the modified ones in the feed's order, then the
    /// deletions.
    var incoming: [IncomingRecord]
    /// The token after this page; `nil` for conflicts and reconciliation, which move no cursor.
    var token: ChangeToken?
    var moreComing: Bool

    /// Whether the page is merged: until then ``changes`` is empty.
    private(set) var isMerged = false
    /// What the store writes and commits.
    var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: Data()))
    /// The conflicts merging resolved, counted into the report when the page is applied.
    var conflicts: [(id: RecordID, policy: MergePolicy, outcome: ConflictOutcome)] = []
    /// Records both sides held alike, adopted as synced.
    var matched = 0
    /// Conflicts for a ``BatchConflictResolver``, asked once the page is merged
    /// (``SyncContext/resolvingDeferred(_:)``); until then their records are left out of the changes.
    var deferred: [DeferredConflict] = []
    /// Records whose conflict got no valid answer, with why: left as they were.
    var unresolved: [FailedRecord] = []
    /// Records of the page that could not be opened, for a reason of their own
    /// (``isRecordsOwnOpeningFailure(_:)``): left out of ``incoming``, refused as the store's
    /// refusals are.
    var unopened: [(id: RecordID, refusal: RefusedDownload)] = []
    /// Whether the page comes from a download from the start (a store joining the zone, or a
    /// refetch after an expired token), where a deletion of a record the store never synced is
    /// the zone's state to join. From a token, such a deletion was made by a store that never saw
    /// this store's record, which is uploaded as new.
    var joining = true

    init(incoming: [IncomingRecord], token: ChangeToken? = nil, moreComing: Bool = false) {
        self.incoming = incoming
        self.token = token
        self.moreComing = moreComing
    }

    var ids: [RecordID] { incoming.map(\.id) }

    /// Marks the page merged (``SyncContext/merge(_:local:zoneState:)``).
    mutating func markMerged() { isMerged = true }

    /// Whether the page holds one of `records`: then it cannot be merged while a page with
    /// them is being applied, whose write could change what the merge reads.
    func sharesRecords(with records: Set<RecordID>) -> Bool {
        incoming.contains { records.contains($0.id) }
    }
}
