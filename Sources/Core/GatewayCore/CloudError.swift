/// An error reported by a cloud database, shaped like CloudKit's `CKError`.
///
/// Whole-request failures are thrown; per-record failures come back as
/// ``RecordOperationResult/failed(_:_:)`` (CloudKit's partial failure). Messages name records and
/// zones but never contain field values or credentials.
public struct CloudError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable code callers branch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, as used in logs, metrics and JSON.
        public let name: String

        private init(_ name: String) { self.name = name }

        /// A request or record exceeded a size or count limit.
        public static let limitExceeded = Code("limitExceeded")
        /// The record changed on the server since the change tag the client sent;
        /// ``CloudError/serverRecord`` holds the server's version when the cloud returns it.
        public static let serverRecordChanged = Code("serverRecordChanged")
        /// The zone does not exist.
        public static let zoneNotFound = Code("zoneNotFound")
        /// The user deleted the zone (through another client or the iCloud settings).
        public static let userDeletedZone = Code("userDeletedZone")
        /// The change token is from before the zone was recreated, or older than the tombstones kept.
        public static let changeTokenExpired = Code("changeTokenExpired")
        /// Too many requests; wait ``CloudError/retryAfter``.
        public static let requestRateLimited = Code("requestRateLimited")
        /// The zone is busy with other writes; retry.
        public static let zoneBusy = Code("zoneBusy")
        /// The service is temporarily unavailable; retry.
        public static let serviceUnavailable = Code("serviceUnavailable")
        /// The request did not reach the service or its answer was lost; it may or may not have been applied.
        public static let networkFailure = Code("networkFailure")
        /// The account or container is out of storage.
        public static let quotaExceeded = Code("quotaExceeded")
        /// The credentials are missing, wrong or expired.
        public static let notAuthenticated = Code("notAuthenticated")
        /// The credentials do not allow this operation.
        public static let permissionFailure = Code("permissionFailure")
        /// The record (or asset) does not exist.
        public static let unknownItem = Code("unknownItem")
        /// The request is malformed: a bad name, a duplicated record, a corrupt token.
        public static let invalidArguments = Code("invalidArguments")
        /// This record was fine, but another record of the same atomic request failed.
        public static let batchRequestFailed = Code("batchRequestFailed")
        /// The asset's bytes are missing or do not match the checksum.
        public static let assetNotAvailable = Code("assetNotAvailable")
        /// The cloud failed internally.
        public static let internalError = Code("internalError")

        /// Every code, for exhaustive tests and documentation.
        public static let all: [Code] = [
            .limitExceeded, .serverRecordChanged, .zoneNotFound, .userDeletedZone, .changeTokenExpired,
            .requestRateLimited, .zoneBusy, .serviceUnavailable, .networkFailure, .quotaExceeded,
            .notAuthenticated, .permissionFailure, .unknownItem, .invalidArguments, .batchRequestFailed,
            .assetNotAvailable, .internalError,
        ]

        /// Whether waiting and sending the same request again may succeed.
        public var isTransient: Bool {
            self == .requestRateLimited || self == .zoneBusy || self == .serviceUnavailable
                || self == .networkFailure
        }

        public var description: String { name }
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
