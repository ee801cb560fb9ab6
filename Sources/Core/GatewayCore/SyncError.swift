/// A sync that could not finish, or could not finish for one adapter.
///
/// Messages say what to do and name adapters, zones and records, never field values.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// Another sync of the same gateway is running.
        case alreadySyncing
        /// A downloaded record needs a newer model version than this gateway's.
        case higherModelVersionFound
        /// The cloud kept failing transiently until the retry attempts ran out.
        case retriesExhausted
        /// The cloud rejected the credentials.
        case notAuthenticated
        /// The cloud is out of storage; uploads stopped.
        case quotaExceeded
        /// The adapter is paused because its zone was deleted (`on_zone_deleted: pause`).
        case zonePaused
        /// Sync metadata or zone state in the store is damaged.
        case corruptSyncState
        /// The adapter's store failed.
        case adapterFailed
        /// The cloud failed in a way retrying does not fix.
        case cloudFailed
        /// A custom merge policy names a resolver that is not registered.
        case unknownResolver
        /// A batch resolver (a resolver process) gave no valid answer for a record: it crashed,
        /// timed out, or answered something that does not fit the conflict. The record is left
        /// as it was on both sides, its change pending, and the next sync asks again.
        case resolverFailed
        /// A sync was asked for an adapter the gateway does not have.
        case unknownAdapter
        /// A downloaded field is encrypted with a key this gateway does not have (the adapter
        /// stops, and nothing of the page is applied), or does not open with the key it names
        /// (the record is left out of its page as a ``RefusedDownload``).
        case undecryptableField
        /// A local value could not be encrypted.
        case encryptionFailed
        /// The sync was stopped (the service shutting down) between two pages or batches.
        case interrupted
        /// Records kept conflicting with concurrent writers; they stay pending for the next sync.
        case conflictsUnresolved
        /// The adapter's sync made no progress for `stall_timeout`: a store or cloud call never
        /// returned. The message names the call.
        case stalled
        /// The store synced its zone through another cloud since it last synced through this
        /// one: two configurations with different clouds point at one store. Nothing was changed.
        case storeSyncedElsewhere

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// What happened, naming adapters, zones and records, never field values.
    public var message: String
    /// The adapter the error is about, when it is about one.
    public var adapter: String?
    /// The error that caused this one, when there is one.
    public var underlying: (any Error)?

    /// An error with a code, a message, the adapter it concerns and its cause.
    public init(_ code: Code, _ message: String, adapter: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.adapter = adapter
        self.underlying = underlying
    }

    public var description: String {
        var text = adapter.map { "adapter \($0): " } ?? ""
        text += "\(code): \(message)"
        if let underlying { text += " [\(underlying)]" }
        return text
    }
}
