/// The rules of a modify request that do not depend on how a cloud stores records: request
/// validation, size limits, change-tag checks and atomic outcomes. Every cloud implementation
/// applies them, so all clouds answer the same request the same way.
package enum ModifyRules {
    /// Longest record name, record type or field name, in UTF-8 bytes (CloudKit's limit).
    package static let maximumNameLength = 255

    /// One operation after validation, with its fields already encoded.
    package struct Prepared: Sendable {
        package var operation: RecordOperation
        /// The encoded fields of a save, `nil` for deletes.
        package var encodedFields: [UInt8]?
        /// A failure found before touching the store (bad name, record too large).
        package var failure: CloudError?

        package var recordID: RecordID { operation.recordID }
    }

    /// What the store holds for a record when the operation is decided.
    package struct StoredState: Sendable {
        package var changeTag: String?
        package var isDeleted: Bool
        /// The stored record's type (`nil`: not known to the caller).
        package var recordType: String?

        package init(changeTag: String?, isDeleted: Bool, recordType: String? = nil) {
            self.changeTag = changeTag
            self.isDeleted = isDeleted
            self.recordType = recordType
        }

        var isLive: Bool { !isDeleted }
    }

    /// What to do with one operation once the stored state is known.
    package enum Decision: Sendable, Equatable {
        /// Write the record with a new change tag.
        case save
        /// Turn the record into a tombstone.
        case delete
        /// Report the record deleted without writing (it was already absent).
        case alreadyDeleted
        /// Fail with a conflict; the caller attaches the server record.
        case conflict(String)
        /// Fail with this code and message.
        case fail(CloudError.Code, String)
    }

    /// Checks the request as a whole and each operation on its own.
    /// - Throws: ``CloudError/Code/limitExceeded`` for too many operations or too many bytes;
    ///   ``CloudError/Code/invalidArguments`` for a record outside `zone` or named twice.
    package static func prepare(
        _ operations: [RecordOperation], in zone: ZoneID, limits: CloudLimits
    ) throws(CloudError) -> [Prepared] {
        guard operations.count <= limits.maxOperationsPerRequest else {
            throw CloudError(
                .limitExceeded,
                "the request has \(operations.count) operations, more than the limit of \(limits.maxOperationsPerRequest); send smaller batches"
            )
        }
        // By bytes: canonically equivalent names are two records (see RecordName).
        var seen = Set<RecordName>(minimumCapacity: operations.count)
        var prepared: [Prepared] = []
        prepared.reserveCapacity(operations.count)
        var requestSize = 0
        // Layouts whose every field name was checked: records of one shape are checked once.
        var validLayouts = Set<ObjectIdentifier>()
        // By index, here and in ``decideAll(_:stored:missingAsset:)``: iterating copied every
        // operation and its record once more.
        for index in operations.indices {
            let id = operations[index].recordID
            guard id.zoneID == zone else {
                throw CloudError(
                    .invalidArguments, "record \(id) is not in zone \(zone.zoneName), the zone of the request",
                    recordID: id)
            }
            guard seen.insert(id.name).inserted else {
                throw CloudError(
                    .invalidArguments, "record \(id) appears more than once in one request", recordID: id)
            }
            var item = Prepared(operation: operations[index], encodedFields: nil, failure: nil)
            if let problem = nameProblem(id.recordName, what: "record name") {
                item.failure = CloudError(.invalidArguments, problem, recordID: id)
            } else if let record = item.operation.record {
                if let problem = recordProblem(record, validLayouts: &validLayouts) {
                    item.failure = CloudError(.invalidArguments, problem, recordID: id)
                } else {
                    let encoded = FieldCoding.encode(record)
                    let size = chargedSize(record, encodedFields: encoded.count)
                    requestSize += size
                    if size > limits.maxRecordSize {
                        item.failure = CloudError(
                            .limitExceeded,
                            "record \(id) is \(size) bytes, over the record limit of \(limits.maxRecordSize) bytes; make it smaller (large binary fields can travel as assets)",
                            recordID: id)
                    } else {
                        item.encodedFields = encoded
                    }
                }
            }
            prepared.append(item)
        }
        guard requestSize <= limits.maxRequestSize else {
            // One record alone over the request limit: smaller batches cannot help it.
            if operations.count == 1 {
                throw CloudError(
                    .limitExceeded,
                    "record \(operations[0].recordID) is \(requestSize) bytes, more than a request may carry (\(limits.maxRequestSize) bytes); make it smaller (large binary fields can travel as assets)",
                    recordID: operations[0].recordID)
            }
            throw CloudError(
                .limitExceeded,
                "the request carries \(requestSize) bytes of records, more than the limit of \(limits.maxRequestSize); send smaller batches"
            )
        }
        return prepared
    }

    /// What a saved record counts against ``CloudLimits/maxRecordSize`` and
    /// ``CloudLimits/maxRequestSize``: its encoded fields (`encodedFields` bytes), name and type.
    package static func chargedSize(_ record: Record, encodedFields: Int) -> Int {
        encodedFields + record.id.recordName.utf8.count + record.recordType.utf8.count
    }

    /// What `operation` counts against ``CloudLimits/maxRequestSize``, known without encoding
    /// it: the same bytes ``prepare(_:in:limits:)`` adds up (deletes count nothing).
    package static func chargedSize(of operation: RecordOperation) -> Int {
        guard let record = operation.record else { return 0 }
        return chargedSize(record, encodedFields: FieldCoding.encodedSize(of: record))
    }

    /// Decides one operation against what the store holds (`nil`: the record never existed).
    package static func decide(_ operation: RecordOperation, stored: StoredState?) -> Decision {
        let live = stored?.isLive == true
        // A live record keeps its type, as in CloudKit: a save under another type would leave the
        // stores that hold it under the old type with a record they can no longer place.
        if live, let record = operation.record, !record.recordType.isEmpty, let storedType = stored?.recordType, storedType != record.recordType {
            return .fail(
                .invalidArguments,
                "record \(record.id) is of type \(storedType); a record cannot change its type (delete it and save the new one, or use another name)")
        }
        switch operation {
        case .create:
            return live ? .conflict("record already exists") : .save
        case .replace(let record), .update(let record):
            guard live, let stored else {
                return .fail(.unknownItem, "record \(record.id) does not exist; create it instead")
            }
            guard let tag = record.changeTag, tag == stored.changeTag else {
                let kind = isPartial(operation) ? "update" : "replace"
                return .conflict(record.changeTag == nil ? "\(kind) without a change tag" : "change tag is stale")
            }
            return .save
        case .forceReplace, .forceUpdate:
            return .save
        case .delete(let id, let tag):
            guard live, let stored else { return .fail(.unknownItem, "record \(id) does not exist") }
            guard let tag, tag == stored.changeTag else {
                return .conflict(tag == nil ? "delete without a change tag" : "change tag is stale")
            }
            return .delete
        case .forceDelete:
            return live ? .delete : .alreadyDeleted
        }
    }

    /// Whether the operation changes only the fields its layout names.
    package static func isPartial(_ operation: RecordOperation) -> Bool {
        switch operation {
        case .update, .forceUpdate: true
        default: false
        }
    }

    /// Completes a partial save of a live record: the stored record's fields that the sent layout
    /// does not name are added with their stored values, and the fields are encoded again. An
    /// update that names every stored field is written as sent. Returns a problem when the
    /// completed record passes the record size limit.
    static func completeUpdate(_ item: inout Prepared, stored: Record?, limits: CloudLimits) -> String? {
        guard let stored, let sent = item.operation.record else { return nil }
        guard var record = sent.completed(withFieldsOf: stored) else {
            if sent.recordType.isEmpty, var typed = item.operation.record {
                typed.recordType = stored.recordType
                item.operation = item.operation.replacingRecord(with: typed)
            }
            return nil
        }
        if record.recordType.isEmpty { record.recordType = stored.recordType }
        let encoded = FieldCoding.encode(record)
        let size = chargedSize(record, encodedFields: encoded.count)
        if size > limits.maxRecordSize {
            return "record \(record.id) would be \(size) bytes with the fields it keeps, over the record limit of \(limits.maxRecordSize) bytes; make it smaller (large binary fields can travel as assets)"
        }
        item.encodedFields = encoded
        item.operation = item.operation.replacingRecord(with: record)
        return nil
    }

    /// Turns per-operation failures into the request's failures by index: in an atomic request
    /// with any failure, every other operation fails with ``CloudError/Code/batchRequestFailed``.
    /// What a stored record is when an operation is decided: its state, and the record itself,
    /// built only when a conflict needs it.
    package struct Stored {
        package var state: StoredState
        package var record: () throws -> Record?

        package init(state: StoredState, record: @escaping () throws -> Record?) {
            self.state = state
            self.record = record
        }
    }

    /// Decides every prepared operation of a request: refused ones keep their failure, saves that
    /// name assets the cloud does not hold fail, and conflicts carry the server's record.
    /// - Parameters:
    ///   - stored: what the cloud holds for a record (`nil` when it never held it).
    ///   - missingAsset: an asset of a record to save that the cloud does not hold.
    ///
    /// An `update` or `forceUpdate` of a live record becomes the whole record to write: the stored
    /// record's fields that the update's layout does not name are kept (``completeUpdate(_:stored:limits:)``).
    package static func decideAll(
        _ prepared: inout [Prepared], limits: CloudLimits, stored: (RecordID) throws -> Stored?,
        missingAsset: (Record) throws -> AssetReference?
    ) throws -> (decisions: [Decision], failures: [Int: CloudError]) {
        var decisions: [Decision] = []
        decisions.reserveCapacity(prepared.count)
        var failures: [Int: CloudError] = [:]
        for index in prepared.indices {
            if let failure = prepared[index].failure {
                failures[index] = failure
                decisions.append(.fail(failure.code, failure.message))
                continue
            }
            let id = prepared[index].recordID
            let current = try stored(id)
            var decision = decide(prepared[index].operation, stored: current?.state)
            if decision == .save, let current, current.state.isLive, isPartial(prepared[index].operation) {
                if let problem = try completeUpdate(&prepared[index], stored: current.record(), limits: limits) {
                    decision = .fail(.limitExceeded, problem)
                }
            }
            if decision == .save, let missing = try missingAsset(prepared[index].operation.record!) {
                decision = .fail(
                    .invalidArguments, "record \(id) references \(missing), which was never uploaded; upload assets before saving")
            }
            switch decision {
            case .conflict(let reason):
                failures[index] = CloudError(
                    .serverRecordChanged,
                    "record \(id) changed on the server (\(reason)); merge with the server record and retry",
                    recordID: id, serverRecord: try current?.record())
            case .fail(let code, let message):
                failures[index] = CloudError(code, message, recordID: id)
            case .save, .delete, .alreadyDeleted:
                break
            }
            decisions.append(decision)
        }
        return (decisions, failures)
    }

    /// Walks a decided request in order and gives every operation its outcome: failures as
    /// decided, saves stamped with the zone's next sequence number (change tag from it and the
    /// zone generation's `tagSuffix`, modified `now`, created `now` unless the record lives on:
    /// `storedCreatedAt` of a live stored record; a tombstone saved again is created anew) and
    /// handed to `save`, deletes with their sequence number to `delete`. The store writes in
    /// those two closures; the answer and the zone's new last sequence come back.
    package static func outcomes(
        of prepared: [Prepared], failures: [Int: CloudError], decisions: [Decision], lastSequence: Int64, tagSuffix: String, now: Int64,
        storedCreatedAt: (RecordID) -> Int64?, save: (_ item: Prepared, _ record: Record, _ sequence: Int64) throws -> Void,
        delete: (_ id: RecordID, _ sequence: Int64) throws -> Void
    ) rethrows -> (results: [RecordOperationResult], lastSequence: Int64) {
        var results: [RecordOperationResult] = []
        results.reserveCapacity(prepared.count)
        var sequence = lastSequence
        for index in prepared.indices {
            let id = prepared[index].recordID
            if let failure = failures[index] {
                results.append(.failed(id, failure))
                continue
            }
            switch decisions[index] {
            case .save:
                sequence += 1
                var record = prepared[index].operation.record!
                record.changeTag = String(sequence, radix: 36) + tagSuffix
                record.modifiedAt = Timestamp(millisecondsSince1970: now)
                record.createdAt = Timestamp(millisecondsSince1970: storedCreatedAt(id) ?? now)
                try save(prepared[index], record, sequence)
                results.append(.saved(record))
            case .delete:
                sequence += 1
                try delete(id, sequence)
                results.append(.deleted(id))
            case .alreadyDeleted:
                results.append(.deleted(id))
            case .conflict, .fail:
                preconditionFailure("failed operations carry their failure in failures")
            }
        }
        return (results, sequence)
    }

    /// The failures of a request: `failures` as they are, or, when an atomic request has any,
    /// every operation failed (`ids` is read only then: listing a page's names is not free).
    package static func failedResults(
        ids: @autoclosure () -> [RecordID], failures: [Int: CloudError], atomic: Bool
    ) -> [Int: CloudError] {
        guard atomic, !failures.isEmpty else { return failures }
        let ids = ids()
        var all = failures
        for index in ids.indices where all[index] == nil {
            all[index] = CloudError(
                .batchRequestFailed, "record \(ids[index]) was not saved because another record of the atomic request failed",
                recordID: ids[index])
        }
        return all
    }

    /// Why a record name, record type or field name is unacceptable, or `nil` when it is fine.
    /// `what` is only built for a problem: it names the record, and every field of every saved
    /// record passes through here.
    package static func nameProblem(_ name: String, what: @autoclosure () -> String) -> String? {
        if name.isEmpty { return "the \(what()) is empty" }
        if name.utf8.count > maximumNameLength {
            return "the \(what()) is \(name.utf8.count) bytes long, more than \(maximumNameLength)"
        }
        if name.utf8.contains(0) { return "the \(what()) contains a NUL character" }
        return nil
    }

    private static func recordProblem(_ record: Record, validLayouts: inout Set<ObjectIdentifier>) -> String? {
        if let problem = nameProblem(record.recordType, what: "record type of \(record.id)") { return problem }
        if validLayouts.contains(ObjectIdentifier(record.layout)) { return nil }
        var problem: String?
        record.forEachField { name, _ in
            if problem == nil { problem = nameProblem(name, what: "field name in \(record.id)") }
        }
        if problem == nil, record.layout.fieldNames.allSatisfy({ nameProblem($0, what: "") == nil }) {
            validLayouts.insert(ObjectIdentifier(record.layout))
        }
        return problem
    }
}
