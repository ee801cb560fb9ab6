import Foundation

/// What one round of the upload collects before it commits: the batch sent, the state update
/// its answers make, and the conflicts to merge.
struct UploadRound {
    let batch: UploadBatch
    let size: Int
    var update: SyncStateUpdate
    /// Records whose change is settled: saved, deleted, or failed for good.
    var settled = 0
    var conflicts: [(RecordID, Record?)] = []
    var lookups: [RecordID] = []
    var quotaError: CloudError?
    /// Edits of a zone shared read-only that the cloud refused, to replace with its versions.
    var refused: [(RecordID, CloudError)] = []
    /// The next batch, read and prepared while the cloud saved this one; a failure to prepare
    /// it surfaces after this round's outcome is committed.
    var upcoming: Result<UploadBatch, any Error>?

    /// Whether reading or preparing the next batch failed.
    var failedToPrepareNext: Bool {
        if case .failure = upcoming { return true }
        return false
    }

    init(batch: UploadBatch, size: Int) {
        self.batch = batch
        self.size = size
        update = SyncStateUpdate(settled: batch.settledLocally, zoneState: Data())
        // Room for this batch's outcome and the next batch's intents.
        update.metadata.reserveCapacity(2 * size)
        update.settled.reserveCapacity(size)
        update.removedMetadata = batch.settledLocallyWithMetadata
        settled = batch.settledLocally.count
    }

    /// Whether the cloud's saved version holds a value for a field the sent record does not name:
    /// one its store never had (a JSON document without the key, a table without the column),
    /// which the partial save kept.
    static func cloudKeptUnnamedField(_ saved: Record, sent operation: RecordOperation) -> Bool {
        // Only an update is completed: a create had nothing stored to keep (most of a first upload).
        guard ModifyRules.isPartial(operation), let sent = operation.record, saved.layout != sent.layout else { return false }
        var kept = false
        saved.forEachField { name, _ in
            if !kept && sent.layout.position(of: name) == nil { kept = true }
        }
        return kept
    }

    /// Sorts the cloud's answers: saved and deleted records settle, conflicts wait to be merged,
    /// transient failures stay pending, permanent ones are marked failed (and not read again in
    /// this pass). `results` are the answers to ``batch``'s operations, in order.
    mutating func sort(
        _ results: [RecordOperationResult], progress: inout UploadProgress, report: inout AdapterSyncReport, configuration: SyncConfiguration
    ) throws {
        // The operation is not copied out (it holds its record): its ID and kind are read in place.
        for (position, result) in results.enumerated() {
            let id = batch.operations[position].recordID
            let version = batch.versions[position]
            switch result {
            case .saved(let saved):
                // A save that replaced nothing left the cloud's superseded values as they were.
                var superseded = batch.superseded[position]
                if superseded.isEmpty, case .bytes(let data)? = saved[configuration.supersededValuesField] {
                    superseded = SyncContext.supersededValues(data)
                }
                update.metadata[id] = RecordMetadata.encoded(
                    changeTag: saved.changeTag, recordType: saved.recordType, sortedFingerprints: batch.fingerprints[position], sent: [],
                    superseded: superseded)
                update.settled[id] = version
                report.uploaded += 1
                if Self.cloudKeptUnnamedField(saved, sent: batch.operations[position]) { report.savesTheCloudCompleted += 1 }
                settled += 1
            case .deleted:
                update.metadata[id] = RecordMetadata.encodedDeletion()
                update.settled[id] = version
                report.deletedRemotely += 1
                settled += 1
            case .failed(_, let error):
                switch error.code {
                case .serverRecordChanged:
                    if let server = error.serverRecord { conflicts.append((id, server)) } else { lookups.append(id) }
                case .unknownItem:
                    if case .delete = batch.operations[position] {
                        update.metadata[id] = RecordMetadata.encodedDeletion()
                        update.settled[id] = version
                        settled += 1
                    } else {
                        conflicts.append((id, nil))
                    }
                case .quotaExceeded:
                    quotaError = error
                case .zoneNotFound, .userDeletedZone, .notAuthenticated:
                    throw error
                case .permissionFailure where configuration.refusedEditsDirectory != nil && id.zoneID.ownerName != ZoneID.defaultOwnerName:
                    // Another user's zone the share lets this one only read: the edit can never
                    // be sent, so the zone's version replaces it once it is kept aside.
                    refused.append((id, error))
                    settled += 1
                    progress.failed.insert(id)
                case let code where code.isTransient || code == .batchRequestFailed:
                    break  // stays pending; the next round sends it again
                default:
                    update.failures[id] = RecordFailure(
                        version: version, code: error.code.name, message: error.message + UploadPass.sizeHint(error, sent: batch.operations[position].record))
                    report.failedRecords += 1
                    settled += 1
                    progress.failed.insert(id)
                }
            }
        }
    }
}

/// The upload pass's counts, as a value the pass drives: how many operations it has sent and may
/// send, how many rounds in a row settled nothing, and which records the cloud refused for good.
struct UploadProgress {
    /// How many operations the pass may send (``budget(pendingAtStart:batchSize:)``).
    let budget: Int
    /// Operations sent so far: changes keep arriving while a program writes, and a sync must end.
    private(set) var sent = 0
    /// Rounds in a row that settled nothing and met only conflicts over records that had met
    /// one before in this pass.
    private(set) var idleRounds = 0
    /// Records that met a conflict in this pass: a record's first conflict is progress (its
    /// merge settles it or sends it once more), a second is another writer still changing it.
    private var conflictedBefore = Set<RecordID>()
    /// Records the cloud refused for good during this pass. They are not read again in it: an
    /// adapter that keeps failure marks leaves them out anyway, one without marks offers them
    /// again, and they wait for the next sync.
    var failed = Set<RecordID>()

    /// How many upload rounds in a row may settle nothing (every record met a new conflict)
    /// before the sync gives up on this adapter for now.
    static let maximumIdleRounds = 10

    /// How many operations a pass may send: what was pending when it began, and as much again
    /// (at least a batch) of what arrives meanwhile or comes back from conflicts.
    static func budget(pendingAtStart pending: Int, batchSize: Int) -> Int {
        max(2 * pending, pending + batchSize)
    }

    /// A pass that may send `budget` operations.
    init(budget: Int) {
        self.budget = budget
    }

    /// Whether the pass may send (or read) another batch.
    var maySend: Bool { sent < budget }

    /// Whether the batch after a next one of `operations` may be read ahead.
    func mayReadAhead(after operations: Int) -> Bool { sent + operations < budget }

    /// A batch of `operations` is taken to be sent.
    mutating func took(_ operations: Int) { sent += operations }

    /// A batch of `operations` went back unsent (too large: the same changes go again, smaller).
    mutating func tookBack(_ operations: Int) { sent -= operations }

    /// A round's outcome was committed and its conflicts merged. Throws once
    /// ``maximumIdleRounds`` rounds in a row settled nothing and merged no record's first
    /// conflict. A store joining a zone that another store filled with the same records at the
    /// same time meets a conflict on every record of every batch, each settled by its merge: that
    /// is progress, not a tug of war.
    mutating func settled(_ round: UploadRound, adapter: String) throws {
        var firstConflicts = 0
        for (id, _) in round.conflicts where conflictedBefore.insert(id).inserted { firstConflicts += 1 }
        for id in round.lookups where conflictedBefore.insert(id).inserted { firstConflicts += 1 }
        idleRounds = round.settled > 0 || firstConflicts > 0 ? 0 : idleRounds + 1
        guard idleRounds < Self.maximumIdleRounds else {
            throw SyncError(
                .conflictsUnresolved,
                "\(round.batch.recordIDs.count) records kept meeting concurrent changes for \(idleRounds) rounds; they stay pending for the next sync",
                adapter: adapter)
        }
    }
}
