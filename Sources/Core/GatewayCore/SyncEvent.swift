/// What a sync reports as it goes, for progress bars, logs and metrics.
public enum SyncEvent: Sendable {
    /// The adapter's sync started.
    case adapterStarted(adapter: String)
    /// A page of changes is being fetched.
    case willFetch(adapter: String)
    /// Merged changes are about to be written to the store with the new change token.
    case willApply(adapter: String, records: Int)
    /// A page was applied: how many records it wrote and deleted locally.
    case didFetch(adapter: String, written: Int, deleted: Int)
    /// Uploading starts with this many pending changes.
    case willUpload(adapter: String, pending: Int)
    /// The cloud answered a batch; its outcome is about to be committed to the store.
    case willCommit(adapter: String, records: Int)
    /// A batch was uploaded.
    case didUpload(adapter: String, saved: Int, deleted: Int, failed: Int)
    /// Upload progress: changes done and the total known at the start.
    case progress(adapter: String, done: Int, total: Int)
    /// A conflict was resolved.
    case conflict(adapter: String, recordID: RecordID, policy: MergePolicy, resolution: ConflictOutcome)
    /// The upload batch size changed (halved on a limit, or grown back).
    case batchSizeChanged(adapter: String, size: Int)
    /// A transient cloud error; the call is retried after `delay`.
    case retrying(adapter: String, error: CloudError, attempt: Int, delay: Duration)
    /// The adapter's sync ended.
    case adapterFinished(AdapterSyncReport)

    /// The adapter the event is about: adapters of a parallel sync interleave their events.
    public var adapterName: String {
        switch self {
        case .adapterStarted(let adapter), .willFetch(let adapter), .willApply(let adapter, _), .didFetch(let adapter, _, _),
            .willUpload(let adapter, _), .willCommit(let adapter, _), .didUpload(let adapter, _, _, _), .progress(let adapter, _, _),
            .conflict(let adapter, _, _, _), .batchSizeChanged(let adapter, _), .retrying(let adapter, _, _, _):
            adapter
        case .adapterFinished(let report): report.adapter
        }
    }
}

/// How a conflict ended, for reports and metrics.
public enum ConflictOutcome: String, Sendable, Codable, CaseIterable {
    /// The server's version was kept.
    case serverWon
    /// The local version was kept and uploaded.
    case localWon
    /// Fields of both were combined.
    case merged
    /// The resolver gave no valid answer: the record was left as it was on both sides, its
    /// change pending (`resolverFailed`), and the next sync asks again.
    case unresolved
}
