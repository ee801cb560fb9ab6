import Foundation
import GatewayCore

/// A `ModelAdapter` over an in-memory store: an honest implementation of the contract for tests
/// of the synchronizer, and the reference the adapter conformance suite is checked against.
///
/// Every write is a transaction over a copy of the store that replaces it only when it completes,
/// so a failure leaves nothing behind. Records of type ``failingRecordType`` fail to apply, and
/// ``failNextTransaction(with:)`` makes the next write fail, to test atomicity.
public actor InMemoryAdapter: ModelAdapter {
    /// Writes of records of this type throw in the middle of ``apply(_:)``.
    public static let failingRecordType = "FailsToApply"

    public nonisolated let name: String
    public nonisolated let zoneID: ZoneID
    private let signalInterval: Duration

    private struct Storage {
        /// Current values, without change tags.
        var rows: [RecordID: Record] = [:]
        /// The pending change-log version per record; a pending record absent from `rows` is a delete.
        var changeLog: [RecordID: Int64] = [:]
        var nextVersion: Int64 = 1
        var metadata: [RecordID: Data] = [:]
        var zoneState: Data?
        var failures: [RecordID: RecordFailure] = [:]
        /// Every field ever stored per record type: the store's schema, like a table's columns.
        var columns: [String: Set<String>] = [:]

        mutating func store(_ record: Record) {
            rows[record.id] = record
            record.forEachField { name, _ in columns[record.recordType, default: []].insert(name) }
        }

        /// A stored record as the store presents it: every column of its type named, a field it
        /// does not hold null (the store knows its schema, as a table does).
        func presented(_ id: RecordID) -> Record? {
            guard let record = rows[id] else { return nil }
            let fields = record.fields
            var named: [String: FieldValue?] = [:]
            for column in columns[record.recordType] ?? [] { named[column] = .some(fields[column]) }
            return Record(id: record.id, recordType: record.recordType, changeTag: record.changeTag, namedFields: named)
        }
    }

    private var storage = Storage()
    /// Moves with every local change (and a reset that keeps data), which the signals poll.
    private var localChanges = 0
    private var injectedFailure: (any Error)?
    private var applyDelay: Duration?
    private var pendingReadDelay: Duration?
    /// Runs at the start of every read of pending changes (``runBeforePendingReads(_:)``).
    private var beforePendingRead: (@Sendable () async -> Void)?
    /// The writer ``keepRewriting(_:)`` stands for: records rewritten before each read.
    private var rewritten: [RecordID] = []
    private var rewrites = 0
    /// The records applied with the `DownloadedChanges/absentLocally` hint, in order.
    public private(set) var appliedAsAbsent: [RecordID] = []

    /// An empty store bound to `zoneID`; `signalInterval` is how often its change signal is
    /// checked.
    public init(name: String = "memory", zoneID: ZoneID, signalInterval: Duration = .milliseconds(10)) {
        self.name = name
        self.zoneID = zoneID
        self.signalInterval = signalInterval
    }

    // MARK: Local edits, as another program would make them

    /// Saves a record (inserting or replacing it) and logs the change.
    public func save(_ record: Record) {
        var record = record
        record.changeTag = nil
        record.modifiedAt = nil
        record.createdAt = nil
        storage.store(record)
        logLocalChange(record.id)
    }

    /// Deletes a record and logs the change; deleting a missing record does nothing.
    public func delete(_ id: RecordID) {
        guard storage.rows.removeValue(forKey: id) != nil else { return }
        logLocalChange(id)
    }

    /// The records the store holds.
    public var records: [RecordID: Record] { storage.rows }

    /// Makes the next transaction (``apply(_:)``, ``commit(_:)``) fail with `error`.
    public func failNextTransaction(with error: any Error) {
        injectedFailure = error
    }

    private func logLocalChange(_ id: RecordID) {
        localChanges += 1
        storage.changeLog[id] = storage.nextVersion
        storage.nextVersion += 1
        storage.failures[id] = nil
    }

    // MARK: ModelAdapter

    public func loadZoneState() -> Data? { storage.zoneState }

    public func hasChanges() async throws -> Bool { !storage.changeLog.isEmpty }

    public func pendingChangeCount() async throws -> Int { storage.changeLog.count }

    public func pendingChanges(limit: Int, after: Int64?) async throws -> PendingChanges {
        if let pendingReadDelay { try await Task.sleep(for: pendingReadDelay) }
        if let beforePendingRead { await beforePendingRead() }
        for id in rewritten {
            guard var record = storage.rows[id] else { continue }
            rewrites += 1
            record.fields["rewrite"] = .int64(Int64(rewrites))
            save(record)
        }
        let entries = storage.changeLog
            .filter { id, version in storage.failures[id]?.version != version && version > (after ?? 0) }
            .sorted { $0.value < $1.value }
            .prefix(max(0, limit))
        var pending = PendingChanges()
        for (id, version) in entries {
            if let record = storage.presented(id) {
                pending.saves.append(PendingSave(record: record, metadata: storage.metadata[id], version: version))
            } else {
                pending.deletes.append(PendingDelete(recordID: id, metadata: storage.metadata[id], version: version))
            }
        }
        return pending
    }

    public func localState(for recordIDs: [RecordID]) -> [RecordID: LocalRecordState] {
        var states: [RecordID: LocalRecordState] = [:]
        for id in recordIDs {
            let record = storage.presented(id)
            let metadata = storage.metadata[id]
            let pending = storage.changeLog[id]
            if record != nil || metadata != nil || pending != nil {
                states[id] = LocalRecordState(record: record, metadata: metadata, pendingVersion: pending)
            }
        }
        return states
    }

    public func syncedRecordIDs() -> [RecordID] { Array(storage.metadata.keys) }

    /// Stands for a program that rewrites these records without pause: before every read of
    /// pending changes, each of them gets a new value (field `rewrite`) and a new change.
    /// An empty list stops it.
    public func keepRewriting(_ ids: [RecordID]) {
        rewritten = ids
    }

    /// Makes every ``apply(_:)`` wait `delay` before its transaction, as a store at the other end
    /// of a network does; the adapter's other calls run meanwhile.
    public func delayApplies(by delay: Duration?) {
        applyDelay = delay
    }

    /// Makes every ``pendingChanges(limit:after:)`` wait `delay` first, so that an upload of many
    /// batches takes a while and another adapter can work meanwhile.
    public func delayPendingReads(by delay: Duration?) {
        pendingReadDelay = delay
    }

    /// Runs `hook` at the start of every read of pending changes (`nil`: nothing), such as a
    /// step of a test's clock that stands for a slow read.
    public func runBeforePendingReads(_ hook: (@Sendable () async -> Void)?) {
        beforePendingRead = hook
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        if let applyDelay { try await Task.sleep(for: applyDelay) }
        try transaction { storage in
            let skipped = Set(
                changes.expectedPendingVersions.compactMap { id, expected in
                    (storage.changeLog[id] ?? 0) == expected ? nil : id
                })
            for record in changes.writes where !skipped.contains(record.id) {
                guard record.recordType != Self.failingRecordType else {
                    throw InMemoryAdapterError(message: "record type \(record.recordType) cannot be stored")
                }
                var row = record
                row.changeTag = nil
                row.modifiedAt = nil
                row.createdAt = nil
                storage.store(row)
            }
            for id in changes.deletes where !skipped.contains(id) {
                storage.rows[id] = nil
            }
            Self.commit(changes.state, skipping: skipped, into: &storage)
        }
        appliedAsAbsent += changes.writes.map(\.id).filter { changes.absentLocally.contains($0) }
    }

    public func commit(_ update: SyncStateUpdate) throws {
        try transaction { storage in Self.commit(update, skipping: [], into: &storage) }
    }

    public func failedRecords() async throws -> [FailedRecord] {
        storage.failures.map { FailedRecord(recordID: $0.key, failure: $0.value) }.sorted { $0.recordID.recordName < $1.recordID.recordName }
    }

    public func retryFailedRecords() async throws {
        storage.failures.removeAll()
    }

    public func resetSyncState(keepData: Bool) throws {
        try transaction { storage in
            storage.metadata.removeAll()
            storage.zoneState = nil
            storage.failures.removeAll()
            if keepData {
                for id in storage.rows.keys.sorted(by: { $0.recordName < $1.recordName }) {
                    storage.changeLog[id] = storage.nextVersion
                    storage.nextVersion += 1
                }
            } else {
                storage.rows.removeAll()
                storage.changeLog.removeAll()
            }
        }
        if keepData && !storage.changeLog.isEmpty { localChanges += 1 }
    }

    public nonisolated func changeSignals() -> ChangeSignals {
        .polling(every: signalInterval) { [self] in await self.localChanges }
    }

    // MARK: Transactions

    private func transaction(_ body: (inout Storage) throws -> Void) throws {
        var copy = storage
        try body(&copy)
        if let failure = injectedFailure {
            injectedFailure = nil
            throw failure
        }
        storage = copy
    }

    private static func commit(_ update: SyncStateUpdate, skipping skipped: Set<RecordID>, into storage: inout Storage) {
        for (id, data) in update.metadata where !skipped.contains(id) { storage.metadata[id] = data }
        for id in update.removedMetadata where !skipped.contains(id) { storage.metadata[id] = nil }
        for (id, version) in update.settled where !skipped.contains(id) {
            if let current = storage.changeLog[id], current <= version {
                storage.changeLog[id] = nil
                storage.failures[id] = nil
            }
        }
        for (id, failure) in update.failures where storage.changeLog[id] == failure.version {
            storage.failures[id] = failure
        }
        storage.zoneState = update.zoneState
    }
}

/// A write the in-memory store refuses.
public struct InMemoryAdapterError: Error, CustomStringConvertible {
    /// The only failure: the store refused a write (`writeRefused`), as tests arrange.
    public let code = "writeRefused"
    /// Why the write was refused.
    public var message: String

    /// A refusal saying `message`.
    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}
