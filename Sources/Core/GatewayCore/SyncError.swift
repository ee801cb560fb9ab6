/// A sync that could not finish, or could not finish for one adapter.
///
/// Messages say what to do and name adapters, zones and records, never field values.
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String

        private init(_ name: String) { self.name = name }

        /// Another sync of the same gateway is running.
        public static let alreadySyncing = Code("alreadySyncing")
        /// A downloaded record needs a newer model version than this gateway's.
        public static let higherModelVersionFound = Code("higherModelVersionFound")
        /// The cloud kept failing transiently until the retry attempts ran out.
        public static let retriesExhausted = Code("retriesExhausted")
        /// The cloud rejected the credentials.
        public static let notAuthenticated = Code("notAuthenticated")
        /// The cloud is out of storage; uploads stopped.
        public static let quotaExceeded = Code("quotaExceeded")
        /// The adapter is paused because its zone was deleted (`on_zone_deleted: pause`).
        public static let zonePaused = Code("zonePaused")
        /// Sync metadata or zone state in the store is damaged.
        public static let corruptSyncState = Code("corruptSyncState")
        /// The adapter's store failed.
        public static let adapterFailed = Code("adapterFailed")
        /// The cloud failed in a way retrying does not fix.
        public static let cloudFailed = Code("cloudFailed")
        /// A custom merge policy names a resolver that is not registered.
        public static let unknownResolver = Code("unknownResolver")
        /// A sync was asked for an adapter the gateway does not have.
        public static let unknownAdapter = Code("unknownAdapter")
        /// A downloaded field is encrypted with a key this gateway does not have, or was tampered
        /// with; the adapter stops, and nothing of the page is applied.
        public static let undecryptableField = Code("undecryptableField")
        /// A local value could not be encrypted.
        public static let encryptionFailed = Code("encryptionFailed")
        /// The sync was stopped (the service shutting down) between two pages or batches.
        public static let interrupted = Code("interrupted")
        /// Records kept conflicting with concurrent writers; they stay pending for the next sync.
        public static let conflictsUnresolved = Code("conflictsUnresolved")
        /// The adapter's sync made no progress for `stall_timeout`: a store or cloud call never
        /// returned. The message names the call.
        public static let stalled = Code("stalled")

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    /// The adapter the error is about, when it is about one.
    public var adapter: String?
    public var underlying: (any Error)?

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
