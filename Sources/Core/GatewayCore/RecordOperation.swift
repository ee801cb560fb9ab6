/// One write in a ``CloudDatabase/modify(_:in:atomic:)`` request.
///
/// Conditional operations compare the record's change tag with the server's and fail with
/// ``CloudError/Code/serverRecordChanged`` (carrying the server's record) when they differ.
public enum RecordOperation: Hashable, Sendable {
    /// Inserts a record that must not exist yet.
    case create(Record)
    /// Replaces the whole record if its ``Record/changeTag`` is the server's current one.
    /// Fields missing from the record become null.
    case replace(Record)
    /// Replaces the whole record unconditionally, creating it when missing.
    case forceReplace(Record)
    /// Deletes the record if `changeTag` is the server's current one.
    case delete(RecordID, changeTag: String?)
    /// Deletes the record unconditionally. Deleting a missing record succeeds.
    case forceDelete(RecordID)

    /// The record this operation writes.
    public var recordID: RecordID {
        switch self {
        case .create(let record), .replace(let record), .forceReplace(let record): record.id
        case .delete(let id, _), .forceDelete(let id): id
        }
    }

    /// The record to save, for the save operations.
    public var record: Record? {
        switch self {
        case .create(let record), .replace(let record), .forceReplace(let record): record
        case .delete, .forceDelete: nil
        }
    }
}

/// The outcome of one ``RecordOperation``: CloudKit's per-record result inside a partial failure.
public enum RecordOperationResult: Sendable {
    /// The record was saved; this is the record as the server now holds it (new change tag).
    case saved(Record)
    /// The record was deleted (or was already absent, for a force delete).
    case deleted(RecordID)
    /// The operation failed for this record only. In an atomic request that failed, the records
    /// that were fine fail with ``CloudError/Code/batchRequestFailed``.
    case failed(RecordID, CloudError)

    /// The record the result is about.
    public var recordID: RecordID {
        switch self {
        case .saved(let record): record.id
        case .deleted(let id), .failed(let id, _): id
        }
    }

    /// The error, when the operation failed.
    public var error: CloudError? {
        if case .failed(_, let error) = self { return error }
        return nil
    }
}
