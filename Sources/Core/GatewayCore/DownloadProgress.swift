import Foundation

/// Where a download stands, as a value the download's loop drives: which token the next fetch
/// asks from, which zone state each applied page commits, what an expired token does, and
/// whether the pass ends by reconciling. No store or cloud: its rules are tested alone.
///
/// While refetching (after `changeTokenExpired`, or resuming one that was interrupted), pages are
/// fetched from ``cursor`` but committed with no token (``ZoneSyncState/refetching``), so an
/// interruption starts the refetch again; the records it returned are collected, and at its end
/// synced records it did not return are reconciled as deleted remotely, then the last token is
/// committed.
struct DownloadProgress {
    /// The zone state as last committed (and the base of the next page's).
    private(set) var state: ZoneSyncState
    /// The token the next fetch asks from; `nil`: from the start.
    private(set) var cursor: ChangeToken?
    /// Records a refetch returned so far (only while refetching).
    private(set) var seen = Set<RecordID>()
    /// How many tokens expired in this pass.
    private(set) var expiries = 0

    /// How many expired tokens a pass accepts before it gives up on the zone.
    static let maximumExpiries = 3

    /// A download from `state`: from its token, or from the start when it was refetching.
    init(from state: ZoneSyncState) {
        self.state = state
        cursor = state.refetching ? nil : state.token
    }

    /// Whether the download is a full refetch.
    var isRefetching: Bool { state.refetching }

    /// The cloud said the cursor's token expired: the download starts again from the start, as
    /// a refetch. Throws once tokens expired more than ``maximumExpiries`` times in the pass.
    mutating func tokenExpired(in zone: ZoneID, adapter: String, underlying: CloudError) throws {
        expiries += 1
        guard expiries <= Self.maximumExpiries else {
            throw SyncError(.cloudFailed, "the cloud keeps expiring change tokens of zone \(zone)", adapter: adapter, underlying: underlying)
        }
        cursor = nil
        state.token = nil
        state.refetching = true
        seen.removeAll()
    }

    /// A page arrived, holding `records` (saved ones; deletes are not counted as seen) and
    /// `token`: the next fetch asks from it. Returns the zone state the page commits.
    mutating func received(records: some Sequence<RecordID>, token: ChangeToken?) -> ZoneSyncState {
        if state.refetching { seen.formUnion(records) }
        cursor = token
        return Self.committing(token, after: state)
    }

    /// The page committing `next` was applied.
    mutating func applied(_ next: ZoneSyncState) {
        state = next
    }

    /// The refetch's last page was applied and its missing records reconciled: the state with
    /// the last token, to commit. `nil` when the download was not a refetch.
    mutating func finishRefetch() -> ZoneSyncState? {
        guard state.refetching else { return nil }
        state.token = cursor
        state.refetching = false
        seen.removeAll()
        return state
    }

    /// The zone state a page commits: the previous one with the page's token, or with none while
    /// refetching.
    static func committing(_ token: ChangeToken?, after previous: ZoneSyncState) -> ZoneSyncState {
        var next = previous
        next.token = previous.refetching ? nil : token
        return next
    }
}
