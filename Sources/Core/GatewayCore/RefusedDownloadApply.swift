import Foundation

extension DownloadedChanges {
    /// These changes without record `id`: no write, no delete, no metadata, no settling of its
    /// pending change. The store keeps the record as it holds it.
    mutating func leaveOut(_ id: RecordID) {
        writes.removeAll { $0.id == id }
        deletes.removeAll { $0 == id }
        state.metadata[id] = nil
        state.removedMetadata.remove(id)
        state.settled[id] = nil
        state.failures[id] = nil
        state.sending.remove(id)
        state.stillSending.remove(id)
        expectedPendingVersions[id] = nil
        absentLocally.remove(id)
    }
}

extension SyncContext {
    /// Applies `changes`, which commit `zoneState`; when the store refuses one downloaded record's
    /// values (``StoreRefusal``), applies them again without it, recording it in the zone state
    /// (``RefusedDownload``), as long as the zone keeps fewer than
    /// ``ZoneSyncState/maximumRefusedDownloads``. `earlier` holds the refusals before this page,
    /// whose first dates a record refused again keeps.
    /// - Returns: the zone state committed and the changes applied.
    func applyLeavingOutRefused(
        _ changes: DownloadedChanges, committing zoneState: ZoneSyncState, earlier: [String: RefusedDownload], report: inout AdapterSyncReport
    ) async throws -> (committed: ZoneSyncState, applied: DownloadedChanges) {
        do {
            try await store("applying a downloaded page") { try await adapter.apply(changes) }
            return (zoneState, changes)
        } catch {
            return try await applyLeavingOutRefused(changes, after: error, committing: zoneState, earlier: earlier, report: &report)
        }
    }

    /// After `error` from applying `changes`: the same changes applied again without each record
    /// the store refuses, one at a time, each recorded in the zone state. An error that names no
    /// record of the page, or a zone already holding its maximum of refusals, is thrown as it is:
    /// nothing of the page is applied and the token does not move.
    func applyLeavingOutRefused(
        _ changes: DownloadedChanges, after error: any Error, committing zoneState: ZoneSyncState, earlier: [String: RefusedDownload],
        report: inout AdapterSyncReport
    ) async throws -> (committed: ZoneSyncState, applied: DownloadedChanges) {
        var (changes, zoneState, error) = (changes, zoneState, error)
        while true {
            guard let name = refusedRecordName(in: error), let refused = changes.writes.first(where: { $0.id.recordName == name }),
                zoneState.refused.count < ZoneSyncState.maximumRefusedDownloads
            else { throw error }
            changes.leaveOut(refused.id)
            let refusal = RefusedDownload(
                recordType: refused.recordType, code: mostPreciseFailureCode(of: error) ?? SyncError.Code.adapterFailed.rawValue,
                message: Self.refusalMessage(error), since: environment.now())
            Self.record(refusal, of: refused.id, in: &zoneState, earlier: earlier, report: &report)
            changes.state.zoneState = zoneState.encoded()
            do {
                try await store("applying a downloaded page") { try await adapter.apply(changes) }
                return (zoneState, changes)
            } catch let next {
                error = next
            }
        }
    }

    /// Opens `record` (``localForm(_:reserved:)``) into `incoming`; a record that cannot be
    /// opened for a reason of its own (``isRecordsOwnOpeningFailure(_:)``) goes into `unopened`.
    func open(
        _ record: consuming Record, reserved: inout ReservedPositions, into incoming: inout [IncomingRecord],
        unopened: inout [(id: RecordID, refusal: RefusedDownload)]
    ) async throws {
        let (id, recordType) = (record.id, record.recordType)
        do {
            incoming.append(try await localForm(record, reserved: &reserved))
        } catch where isRecordsOwnOpeningFailure(error) {
            unopened.append((id, refusal(of: recordType, error)))
        }
    }

    /// A record that could not be opened as a refusal of it, first met now.
    func refusal(of recordType: String, _ error: any Error) -> RefusedDownload {
        let message = (error as? SyncError)?.message ?? "\(error)"
        return RefusedDownload(
            recordType: recordType, code: mostPreciseFailureCode(of: error) ?? SyncError.Code.undecryptableField.rawValue, message: message,
            since: environment.now())
    }

    /// Records `unopened` in `zoneState` (each keeping the date of an `earlier` refusal) and counts
    /// them in `report`.
    /// - Throws: the opening failure of the first record past the zone's maximum of refusals.
    func refuse(
        _ unopened: [(id: RecordID, refusal: RefusedDownload)], in zoneState: inout ZoneSyncState, earlier: [String: RefusedDownload],
        report: inout AdapterSyncReport
    ) throws {
        for (id, refusal) in unopened {
            guard zoneState.refused.count < ZoneSyncState.maximumRefusedDownloads else {
                throw SyncError(
                    .undecryptableField,
                    "\(refusal.message) (more than \(ZoneSyncState.maximumRefusedDownloads) records of the zone cannot be opened or written: nothing of the page was applied and the change token did not move)",
                    adapter: name)
            }
            Self.record(refusal, of: id, in: &zoneState, earlier: earlier, report: &report)
        }
    }

    /// Keeps `refusal` of record `id` in `zoneState`, with the date of an `earlier` refusal of
    /// it, and counts the record once per sync in `report`.
    private static func record(
        _ refusal: RefusedDownload, of id: RecordID, in zoneState: inout ZoneSyncState, earlier: [String: RefusedDownload],
        report: inout AdapterSyncReport
    ) {
        var kept = refusal
        kept.since = earlier[id.recordName]?.since ?? refusal.since
        zoneState.refused[id.recordName] = kept
        if report.refusedDownloads.insert(id).inserted { report.failedRecords += 1 }
    }

    /// The store's own words for a refusal: the description of the error that names the record.
    private static func refusalMessage(_ error: any Error) -> String {
        storeRefusal(in: error).map { "\($0)" } ?? "\(error)"
    }
}
