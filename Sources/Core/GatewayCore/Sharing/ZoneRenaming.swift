/// Moving records, operations and their results between the zone names a caller uses and those
/// the store keeps (``UserCloudDatabase``, ``PublicCloudDatabase``): only the zone changes.
extension RecordID {
    /// This record's name in `zone`.
    func moved(to zone: ZoneID) -> RecordID { RecordID(recordName: recordName, zoneID: zone) }
}

extension Record {
    /// This record in `zone`.
    func moved(to zone: ZoneID) -> Record {
        var record = self
        record.id.zoneID = zone
        return record
    }
}

extension RecordOperation {
    /// The same operation on the record of the same name in `zone`.
    func moved(to zone: ZoneID) -> RecordOperation {
        switch self {
        case .delete(let id, let tag): .delete(id.moved(to: zone), changeTag: tag)
        case .forceDelete(let id): .forceDelete(id.moved(to: zone))
        default: replacingRecord(with: record!.moved(to: zone))
        }
    }
}

extension RecordOperationResult {
    /// The same result about the record of the same name in `zone` (the error's record and
    /// server record too).
    func moved(to zone: ZoneID) -> RecordOperationResult {
        switch self {
        case .saved(let record): .saved(record.moved(to: zone))
        case .deleted(let id): .deleted(id.moved(to: zone))
        case .failed(let id, var error):
            {
                error.recordID = error.recordID?.moved(to: zone)
                error.serverRecord = error.serverRecord?.moved(to: zone)
                return .failed(id.moved(to: zone), error)
            }()
        }
    }
}
