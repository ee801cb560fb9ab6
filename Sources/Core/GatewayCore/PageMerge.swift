import Foundation

/// A conflict waiting for a batch resolver's answer, with what recording that answer needs.
struct DeferredConflict: Sendable {
    let conflict: ConflictContext
    let resolverName: String
    let recordType: String
    /// The metadata the record takes once resolved: the server's version as the new ancestor.
    let rebased: RecordMetadata
    let pendingVersion: Int64
}

extension SyncContext {
    /// Merges a page's records with the store's state of them: what to write, delete and commit,
    /// with `zoneState`. Pure work, so the download can do it for the next page while the store
    /// applies this one.
    func merge(_ page: inout DownloadPage, local: [RecordID: LocalRecordState], zoneState: ZoneSyncState) throws {
        let incoming = page.incoming
        var conflicts: [(id: RecordID, policy: MergePolicy, outcome: ConflictOutcome)] = []
        var deferred: [DeferredConflict] = []
        var matched = 0
        var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: zoneState.encoded()))
        changes.writes.reserveCapacity(incoming.count)
        changes.state.metadata.reserveCapacity(incoming.count)
        changes.expectedPendingVersions.reserveCapacity(incoming.count)
        changes.absentLocally.reserveCapacity(incoming.count)
        // By index: iterating the records copied each one before its record was copied again
        // into the writes.
        for index in incoming.indices {
            let (id, server, ownWrite) = (incoming[index].id, incoming[index].record, incoming[index].writtenHere)
            let superseded = incoming[index].superseded
            let current = local.isEmpty ? nil : local[id]  // a page new to the store looks nothing up
            changes.expectedPendingVersions[id] = current?.pendingVersion ?? 0
            let metadata = try current?.metadata.map(RecordMetadata.init(decoding:))
            if let server, server.changeTag != nil, let metadata, metadata.changeTag == server.changeTag {
                // Our own write coming back. A partial save keeps the fields the store never
                // named; when the cloud holds a value for one of them, the store gets it too (a
                // JSON document that lacks a key can hold it; a table without the column ignores it).
                guard metadata.lacksField(of: server) else { continue }
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server, superseded: superseded)
                if let current, current.pendingVersion != nil {
                    if let completed = current.record?.completed(withFieldsOf: server) { changes.writes.append(completed) }
                } else {
                    changes.writes.append(server)
                }
                continue
            }
            guard let current, let pendingVersion = current.pendingVersion else {
                if let server {
                    if current?.isEmpty ?? true { changes.absentLocally.insert(id) }
                    changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server, superseded: superseded)
                    changes.writes.append(server)  // its last use, so the record moves
                } else if let metadata {
                    // (The store's own deletion coming back deletes nothing more.)
                    if !metadata.deletedHere { changes.deletes.append(id) }
                    changes.state.removedMetadata.insert(id)
                }
                continue
            }
            if let server, ownWrite, let metadata, metadata.recognizes(server) {
                // This replica wrote that version, but never learned it was saved (the answer was
                // lost): it is an earlier state of the local record, not a concurrent change.
                // Rebase onto it and upload the newer local state.
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server, superseded: superseded)
                continue
            }
            if let server, current.record == nil, let former = metadata?.formerChangeTag, server.changeTag == former {
                // The store deleted the version it last synced (its adapter forgot the tag so the
                // zone downloads again, after a column was added): nobody changed it since, so the
                // delete uploads against that version, which the cloud's fields the store never
                // had are no edit of.
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server, superseded: superseded)
                continue
            }
            if server == nil, incoming[index].absentFromCloud, metadata?.hasSyncedVersion != true {
                // Only the intents of a first upload: the cloud never held this record as far as
                // the store knows, so its absence deletes nothing; the change uploads as usual.
                continue
            }
            if server == nil, metadata?.deletedHere == true, current.record != nil {
                // The store's own deletion coming back, after the store created the record again
                // under its name: the record is newer, and uploads as a new one.
                changes.state.removedMetadata.insert(id)
                continue
            }
            if server == nil && current.record == nil {
                // Deleted on both sides: they agree, so there is nothing to resolve. The store's
                // delete is confirmed as by an answer (its answer may have been lost): the mark
                // tells a later delivery of this deletion (a download from the start) from one
                // met by a record the store created again since.
                changes.state.metadata[id] = RecordMetadata.encodedDeletion()
                changes.state.settled[id] = pendingVersion
                continue
            }
            if let server, let record = current.record, record.recordType == server.recordType, record.hasSameFields(as: server) {
                // Both sides hold the same values (two stores seeded alike, or a full resync after
                // a reset): nothing to resolve and nothing to upload.
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server, superseded: superseded)
                changes.state.settled[id] = pendingVersion
                matched += 1
                continue
            }
            let settings = options.mergeSettings(for: server?.recordType ?? current.record?.recordType ?? metadata?.recordType)
            let recordType = server?.recordType ?? current.record?.recordType ?? metadata?.recordType ?? ""
            let rebased =
                server.map { RecordMetadata(syncedRecord: $0, superseded: superseded) }
                ?? RecordMetadata(changeTag: nil, recordType: recordType, fingerprints: [:])
            let resolution: ConflictResolution
            let policy: MergePolicy
            let conflict = ConflictContext(
                recordID: id, ancestor: metadata?.ancestor(against: server), local: current.record, server: server, superseded: superseded)
            if metadata?.hasSyncedVersion != true, settings.policy != .custom, current.record == nil, server != nil,
                let uploadedFrom = incoming[index].writtenHereFromVersion, pendingVersion > uploadedFrom
            {
                // The store deleted a record whose cloud version this adapter wrote last, after
                // the change that upload came from (a restored store deleting a row it had
                // uploaded after its backup was taken): nobody changed it since, so the delete is
                // the newer act and wins. A delete from before that change (one the backup
                // already held, of a record created again and uploaded since) is older than the
                // cloud's version and joins like any other change without an ancestor.
                resolution = .local
                policy = .merge
            } else if server == nil, metadata == nil, current.record != nil, !page.joining {
                // A record this store created and never synced, deleted in the cloud since the
                // store's last download: the deleting store had another record of that name (it
                // never saw this one, which was never sent), so the deletion does not reach it,
                // and it uploads as new. A store joining the zone takes the zone's deletions.
                resolution = .local
                policy = .merge
            } else if metadata?.hasSyncedVersion != true, settings.policy != .custom {
                // No common ancestor: the store never synced this record (a new, replaced or
                // restored store joining the zone, or two stores that created it), so neither
                // side's values are an edit of the other's (`join_prefers`, DESIGN D4).
                resolution = ThreeWayMerge.join(conflict, prefers: options.joinPrefers)
                policy = .merge
            } else if settings.policy == .custom, let name = settings.resolverName, configuration.batchResolvers[name] != nil {
                // Asked in one batch per page, once the page is merged.
                deferred.append(
                    DeferredConflict(conflict: conflict, resolverName: name, recordType: recordType, rebased: rebased, pendingVersion: pendingVersion))
                continue
            } else {
                resolution = try ThreeWayMerge.resolve(conflict, settings: settings, resolvers: configuration.resolvers)
                policy = settings.policy
            }
            let outcome = Self.record(resolution, of: conflict, recordType: recordType, rebased: rebased, pendingVersion: pendingVersion, into: &changes)
            conflicts.append((id, policy, outcome))
        }
        page.changes = changes
        page.markMerged()
        page.conflicts = conflicts
        page.matched = matched
        page.deferred = deferred
    }

    /// Writes `resolution` of `conflict` into `changes`: the record the store takes, the metadata
    /// it keeps, and whether its pending change is settled.
    static func record(
        _ resolution: ConflictResolution, of conflict: ConflictContext, recordType: String, rebased: RecordMetadata, pendingVersion: Int64,
        into changes: inout DownloadedChanges
    ) -> ConflictOutcome {
        let (id, server, local) = (conflict.recordID, conflict.server, conflict.local)
        let outcome: ConflictOutcome
        switch resolution {
        case .server:
            if let server {
                changes.writes.append(server)
                changes.state.metadata[id] = rebased.encoded()
            } else {
                if local != nil { changes.deletes.append(id) }
                changes.state.removedMetadata.insert(id)
            }
            changes.state.settled[id] = pendingVersion
            outcome = .serverWon
        case .local:
            if let server, let local, let completed = local.completed(withFieldsOf: server) {
                // The server's fields the store never named are kept by the upload (a
                // partial save); the store gets them too, so both hold the same record.
                changes.writes.append(completed)
            }
            changes.state.metadata[id] = rebased.encoded()
            outcome = .localWon
        case .fields(let fields):
            // Every field either side named stays named: one the merge left without a value
            // is null (a partial save clears it), not unknown.
            let names = conflict.fieldNames
            var named = [String: FieldValue?](minimumCapacity: names.count)
            for name in names { named[name] = .some(fields[name]) }
            changes.writes.append(Record(id: id, recordType: recordType, namedFields: named))
            changes.state.metadata[id] = rebased.encoded()
            outcome = .merged
        }
        return outcome
    }

    /// `page` with its deferred conflicts resolved: each batch resolver is asked once for its
    /// conflicts of the page. An answer that is missing, fails or does not fit its conflict
    /// (``ThreeWayMerge/problem(with:of:)``) leaves the record as it was on both sides: nothing
    /// is written, its local change stays pending and is not uploaded in this pass (so not over
    /// the cloud's version), and it is counted as a failed record (`resolverFailed`) with why. The
    /// next sync meets the conflict again, when its upload is refused, and asks again: a resolver
    /// fixed meanwhile settles it, whichever side changed since.
    func resolvingDeferred(_ page: inout DownloadPage) async {
        guard !page.deferred.isEmpty else { return }
        let deferred = page.deferred
        page.deferred = []
        var byResolver: [String: [DeferredConflict]] = [:]
        for item in deferred { byResolver[item.resolverName, default: []].append(item) }
        for (name, items) in byResolver.sorted(by: { $0.key < $1.key }) {
            let resolver = configuration.batchResolvers[name]!
            let answers = await resolver.resolve(items.map(\.conflict))
            for (position, item) in items.enumerated() {
                let id = item.conflict.recordID
                var answer: Result<ConflictResolution, SyncError> =
                    position < answers.count && answers.count == items.count
                    ? answers[position]
                    : .failure(SyncError(.resolverFailed, "resolver '\(name)' answered \(answers.count) of \(items.count) conflicts", adapter: self.name))
                if case .success(let resolution) = answer, let problem = ThreeWayMerge.problem(with: resolution, of: item.conflict) {
                    answer = .failure(SyncError(.resolverFailed, "resolver '\(name)' answered record \(id.recordName) with \(problem)", adapter: self.name))
                }
                switch answer {
                case .success(let resolution):
                    let outcome = Self.record(
                        ThreeWayMerge.normalised(resolution, of: item.conflict), of: item.conflict, recordType: item.recordType, rebased: item.rebased,
                        pendingVersion: item.pendingVersion, into: &page.changes)
                    page.conflicts.append((id, .custom, outcome))
                case .failure(let error):
                    page.unresolved.append(
                        FailedRecord(
                            recordID: id, failure: RecordFailure(version: item.pendingVersion, code: SyncError.Code.resolverFailed.rawValue, message: error.message)))
                    page.conflicts.append((id, .custom, .unresolved))
                }
            }
        }
    }

    /// Counts and reports the conflicts of a merged page, and moves its changes out: the page
    /// keeps no second reference while the store applies them.
    func takeChanges(of page: inout DownloadPage, into report: inout AdapterSyncReport) -> DownloadedChanges {
        for conflict in page.conflicts {
            if conflict.outcome == .unresolved {
                // A record met again in the same sync (its upload refused after its download)
                // is one failed record.
                guard report.unresolvedRecords.insert(conflict.id).inserted else { continue }
                report.failedRecords += 1
                if let failed = page.unresolved.first(where: { $0.recordID == conflict.id }) { report.unresolvedFailures.append(failed) }
            }
            report.conflicts[conflict.outcome, default: 0] += 1
            observer(.conflict(adapter: name, recordID: conflict.id, policy: conflict.policy, resolution: conflict.outcome))
        }
        report.matched += page.matched
        var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: Data()))
        swap(&changes, &page.changes)
        return changes
    }

    /// The store's state of `ids`, or nothing for no ids.
    func localState(of ids: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        ids.isEmpty ? [:] : try await store("reading local state") { try await adapter.localState(for: ids) }
    }

    /// Merges server versions into the store and commits them with `zoneState`.
    /// - Returns: the records whose conflict no resolver answered (left as they were).
    @discardableResult
    func integrate(_ incoming: [IncomingRecord], zoneState: ZoneSyncState, report: inout AdapterSyncReport) async throws -> Set<RecordID> {
        var page = DownloadPage(incoming: incoming)
        try merge(&page, local: try await localState(of: page.ids), zoneState: zoneState)
        await resolvingDeferred(&page)
        let changes = takeChanges(of: &page, into: &report)
        observer(.willApply(adapter: name, records: changes.writes.count + changes.deletes.count))
        try await store("applying merged changes") { [changes] in try await adapter.apply(changes) }
        report.downloaded += changes.writes.count
        report.deletedLocally += changes.deletes.count
        return Set(page.unresolved.map(\.recordID))
    }
}
