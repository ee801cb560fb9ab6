/// An error reported by a cloud database, shaped like CloudKit's `CKError`.
///
/// Whole-request failures are thrown; per-record failures come back as
/// ``RecordOperationResult/failed(_:_:)`` (CloudKit's partial failure). Messages name records and
/// zones but never contain field values or credentials.
public struct CloudError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable code callers branch on.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// A request or record exceeded a size or count limit.
        case limitExceeded
        /// The record changed on the server since the change tag the client sent;
        /// ``CloudError/serverRecord`` holds the server's version when the cloud returns it.
        case serverRecordChanged
        /// The zone does not exist.
        case zoneNotFound
        /// The user deleted the zone (through another client or the iCloud settings).
        case userDeletedZone
        /// The change token is older than the tombstones kept, or from before the zone was
        /// recreated when the cloud cannot tell (CloudKit).
        case changeTokenExpired
        /// The change token is from before the zone was deleted and created again: the records it
        /// had seen went with the zone, not one by one. The embedded and PostgreSQL clouds (and
        /// the endpoint serving them) tell it from ``changeTokenExpired``; CloudKit answers that.
        case zoneRecreated
        /// The change token is ahead of the zone's history: the cloud (its file or database) was
        /// put back to an older copy since the token was issued. Fetching again would take the
        /// copy's older values for newer ones and delete every record made since, in every store,
        /// so the adapter stops instead; `gateway reset` then decides which side is the truth.
        /// The embedded and PostgreSQL clouds tell it; CloudKit's history never goes back.
        case changeTokenAhead
        /// Too many requests; wait ``CloudError/retryAfter``.
        case requestRateLimited
        /// The zone is busy with other writes; retry.
        case zoneBusy
        /// The service is temporarily unavailable; retry.
        case serviceUnavailable
        /// The request did not reach the service or its answer was lost; it may or may not have been applied.
        case networkFailure
        /// The account or container is out of storage.
        case quotaExceeded
        /// The credentials are missing, wrong or expired.
        case notAuthenticated
        /// The credentials do not allow this operation.
        case permissionFailure
        /// The record (or asset) does not exist.
        case unknownItem
        /// The request is malformed: a bad name, a duplicated record, a corrupt token.
        case invalidArguments
        /// This record was fine, but another record of the same atomic request failed.
        case batchRequestFailed
        /// The asset's bytes are missing or do not match the checksum.
        case assetNotAvailable
        /// The cloud failed internally.
        case internalError


        /// Whether waiting and sending the same request again may succeed.
        public var isTransient: Bool {
            self == .requestRateLimited || self == .zoneBusy || self == .serviceUnavailable
                || self == .networkFailure
        }

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    /// The error's code.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String
    /// How long the server asks the client to wait before retrying, when it says.
    public var retryAfter: Duration?
    /// The record the error is about, for per-record errors.
    public var recordID: RecordID?
    /// The server's current record, for ``Code/serverRecordChanged`` when the cloud returns it.
    public var serverRecord: Record?
    /// The error that caused this one, such as a database or network error.
    public var underlying: (any Error)?

    /// An error with a code, a message naming records and zones, and what the code needs: when to
    /// retry, which record failed, the server's record of a conflict.
    public init(
        _ code: Code, _ message: String, retryAfter: Duration? = nil, recordID: RecordID? = nil,
        serverRecord: Record? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.recordID = recordID
        self.serverRecord = serverRecord
        self.underlying = underlying
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let retryAfter { text += " (retry after \(retryAfter))" }
        if let underlying { text += " [underlying: \(underlying)]" }
        return text
    }
}
