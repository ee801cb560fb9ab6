import Foundation

/// A downloaded record whose values the store refused (a type, a length, a range, a check
/// constraint, a trigger's veto), or whose encrypted field does not open with the key it names,
/// kept in the zone state so that one record cannot stop the zone: the page is applied without
/// it, the store keeps the record as it was (its local edit, if any, stays pending and waits), and
/// every later sync looks the record up and tries again until the store takes it or the cloud
/// deletes it.
///
/// A zone holds at most ``ZoneSyncState/maximumRefusedDownloads`` of them: past that, the refusal
/// is the store's shape, not a record's, and the page fails as a whole, naming the record.
public struct RefusedDownload: Sendable, Equatable, Codable {
    /// The record's type.
    public var recordType: String
    /// The most precise code of the store's refusal (``mostPreciseFailureCode(of:)``).
    public var code: String
    /// The store's message: it names the table and, where the database says, the column or
    /// constraint, never a value.
    public var message: String
    /// When the store first refused the record.
    public var since: Date

    /// A refusal of a record of type `recordType`, first met at `since`.
    public init(recordType: String, code: String, message: String, since: Date) {
        self.recordType = recordType
        self.code = code
        self.message = message
        self.since = since
    }

    /// The code failed records show for a download the store refused.
    public static let failureCode = "storeRefused"

    /// Whether the record could not be opened (``SyncError/Code/undecryptableField``), rather
    /// than written.
    public var isUndecryptable: Bool { code == SyncError.Code.undecryptableField.rawValue }

    /// The refusal as a failed record of `zone`, for `gateway status --failed`, the sync summary
    /// and `/status`: code ``failureCode``, or `undecryptableField` for a record that could not
    /// be opened.
    public func failedRecord(named name: String, in zone: ZoneID) -> FailedRecord {
        FailedRecord(
            recordID: RecordID(recordName: name, zoneID: zone),
            failure: RecordFailure(
                version: 0, code: isUndecryptable ? code : Self.failureCode,
                message: isUndecryptable
                    ? "the cloud's version cannot be opened: \(message); the store keeps its own and every sync tries again"
                    : "the store refused the cloud's version (\(code): \(message)); it keeps its own and every sync tries again"))
    }
}

/// An adapter's error that says its store refused the values of one downloaded record, and
/// which: the download leaves that record out of the page (``RefusedDownload``). An error that
/// is not one record's values (a full disk, a lost connection, a missing table) answers `nil`.
public protocol StoreRefusal: Error {
    /// The name of the one record of the page whose values the store refused, if that is what failed.
    var refusedRecordName: String? { get }
}

/// Whether `error`, from opening a downloaded record, is that record's alone: a field that
/// does not open with the key it names (altered, or sealed under another key of the same id).
/// A key this gateway lacks is its configuration's, and stops the adapter.
func isRecordsOwnOpeningFailure(_ error: any Error) -> Bool {
    guard let error = error as? SyncError, error.code == .undecryptableField,
        let cause = error.underlying as? FieldEncryptionError
    else { return false }
    return cause.code != .unknownKey
}

/// The record a store refused, found in `error` or the errors that caused it.
public func refusedRecordName(in error: any Error) -> String? {
    storeRefusal(in: error)?.refusedRecordName
}

/// The error in `error`'s chain of causes that names a refused record.
func storeRefusal(in error: any Error) -> (any StoreRefusal)? {
    var current: (any Error)? = error
    var depth = 0
    while let error = current, depth < 16 {
        if let refusal = error as? any StoreRefusal, refusal.refusedRecordName != nil { return refusal }
        current = (error as? any FailureCoded)?.underlyingFailure
        depth += 1
    }
    return nil
}

extension ModelAdapter {
    /// ``failedRecords()`` and the downloads the store refused (from the zone state): every
    /// record that stays unsynced, as the status page lists them. It reads the zone state, which
    /// a kit adapter lists its store for.
    public func unsyncedRecords() async throws -> [FailedRecord] {
        let zone = zoneID
        let refused = (try? ZoneSyncState(decoding: try await loadZoneState()))?.refused ?? [:]
        return try await failedRecords() + refused.map { $0.value.failedRecord(named: $0.key, in: zone) }
    }
}
