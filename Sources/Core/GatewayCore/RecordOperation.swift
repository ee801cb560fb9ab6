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
    /// Changes the fields of the record's layout if its ``Record/changeTag`` is the server's
    /// current one, and keeps the stored record's other fields (CloudKit's `update`). A field of
    /// the layout without a value becomes null; a field the layout does not name is unknown to
    /// the writer, so it is left as stored. This is how the synchronizer saves existing records:
    /// a store whose schema lacks a field never erases it.
    case update(Record)
    /// Changes the fields of the record's layout unconditionally, keeping the stored record's
    /// other fields, and creates the record when missing (CloudKit's `forceUpdate`).
    case forceUpdate(Record)
    /// Deletes the record if `changeTag` is the server's current one.
    case delete(RecordID, changeTag: String?)
    /// Deletes the record unconditionally. Deleting a missing record succeeds.
    case forceDelete(RecordID)

    /// The record this operation writes.
    public var recordID: RecordID {
        switch self {
        case .create(let record), .replace(let record), .forceReplace(let record), .update(let record), .forceUpdate(let record): record.id
        case .delete(let id, _), .forceDelete(let id): id
        }
    }

    /// The same kind of operation on `record` (for the save operations; deletes stay as they are).
    package func replacingRecord(with record: Record) -> RecordOperation {
        switch self {
        case .create: .create(record)
        case .replace: .replace(record)
        case .forceReplace: .forceReplace(record)
        case .update: .update(record)
        case .forceUpdate: .forceUpdate(record)
        case .delete, .forceDelete: self
        }
    }

    /// The record to save, for the save operations.
    public var record: Record? {
        switch self {
        case .create(let record), .replace(let record), .forceReplace(let record), .update(let record), .forceUpdate(let record): record
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
