import Foundation

/// One sync of one adapter: zone, download, upload, with merging, batching, retries and recovery.
struct AdapterSyncRun {
    let cloud: any CloudDatabase
    let adapter: any ModelAdapter
    let options: AdapterSyncOptions
    let configuration: SyncConfiguration
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    var report: AdapterSyncReport
    var state = ZoneSyncState()
    /// The value this replica stamps into the device field of the records it uploads: the
    /// gateway's device id and the adapter, since several adapters of one gateway may share a zone.
    let writerStamp: String
    /// What the run waits on, for the stall guard.
    let activity: SyncActivity

    /// How many upload rounds in a row may settle nothing (every record met a new conflict)
    /// before the sync gives up on this adapter for now.
    static let maximumIdleRounds = 10
    /// How many records one reconciliation apply handles.
    static let reconciliationChunk = 500

    init(
        cloud: any CloudDatabase, synced: SyncedAdapter, configuration: SyncConfiguration, environment: SyncEnvironment,
        observer: @escaping @Sendable (SyncEvent) -> Void, activity: SyncActivity = SyncActivity()
    ) {
        self.activity = activity
        self.cloud = cloud
        self.adapter = synced.adapter
        self.options = synced.options
        self.configuration = configuration
        self.environment = environment
        self.observer = observer
        self.report = AdapterSyncReport(adapter: synced.adapter.name)
        self.writerStamp = "\(configuration.deviceID):\(synced.adapter.name)"
    }

    var name: String { adapter.name }
    var zone: ZoneID { adapter.zoneID }

    mutating func run() async -> AdapterSyncReport {
        do {
            try await syncZone(mayRecoverZone: true)
        } catch {
            let failure = syncError(error)
            report.outcome = .failed(code: failure.code, message: failure.message)
            report.error = failure
        }
        report.batchSize = state.effectiveBatchSize(configured: options.batchSize)
        return report
    }

    // MARK: Zone

    private mutating func syncZone(mayRecoverZone: Bool) async throws {
        state = try ZoneSyncState(decoding: try await store("loading the zone state") { try await adapter.loadZoneState() })
        if let reason = state.pausedReason {
            report.outcome = .paused(reason: reason)
            return
        }
        do {
            if state.token == nil {
                try await retrying("creating the zone") { try await cloud.createZone(zone) }
            }
            try await download()
            try await upload()
        } catch let error as CloudError where error.code == .zoneNotFound || error.code == .userDeletedZone {
            guard mayRecoverZone else {
                throw SyncError(
                    .cloudFailed, "zone \(zone) went missing again right after it was recovered; check who deletes it",
                    adapter: name, underlying: error)
            }
            if error.code == .zoneNotFound, try await retrying("listing zones", { try await cloud.zones() }).contains(zone) {
                // The zone is there after all: the answer was wrong, not the zone gone. Sync again.
                try await syncZone(mayRecoverZone: false)
                return
            }
            try await recoverDeletedZone(error)
        }
    }

    private mutating func recoverDeletedZone(_ error: CloudError) async throws {
        switch options.onZoneDeleted {
        case .recreate:
            try await store("resetting the sync state") { try await adapter.resetSyncState(keepData: true) }
            try await retrying("creating the zone") { try await cloud.createZone(zone) }
            try await syncZone(mayRecoverZone: false)
        case .mirror:
            try await store("resetting the sync state") { try await adapter.resetSyncState(keepData: false) }
            try await retrying("creating the zone") { try await cloud.createZone(zone) }
            try await syncZone(mayRecoverZone: false)
        case .pause:
            let reason =
                "zone \(zone) was deleted in the cloud (\(error.code)); local data is untouched. Reset the adapter to upload everything again"
            state.pausedReason = reason
            let zoneState = state.encoded()
            try await store("committing the zone state") { try await adapter.markUploaded(SyncStateUpdate(zoneState: zoneState)) }
            report.outcome = .paused(reason: reason)
        }
    }

    // MARK: Download

    private mutating func download() async throws {
        var seen = Set<RecordID>()
        var expiries = 0
        // While refetching, pages are fetched from `cursor` but committed with no token, so an
        // interruption restarts the refetch (see ZoneSyncState.refetching).
        var cursor = state.refetching ? nil : state.token
        // The next page, fetched while the previous one was being applied.
        var prefetched: Result<FetchedPage, any Error>?
        while true {
            try stopIfCancelled()
            let fetched: FetchedPage
            do {
                if let prefetched {
                    fetched = try prefetched.get()
                } else {
                    fetched = try await fetchPage(since: cursor, applying: nil, after: state)
                }
                prefetched = nil
            } catch let error as CloudError where error.code == .changeTokenExpired {
                prefetched = nil
                expiries += 1
                guard expiries <= 3 else {
                    throw SyncError(.cloudFailed, "the cloud keeps expiring change tokens of zone \(zone)", adapter: name, underlying: error)
                }
                // Refetch everything; records the full fetch does not return were deleted remotely.
                cursor = nil
                state.token = nil
                state.refetching = true
                seen.removeAll()
                continue
            }
            if state.refetching { seen.formUnion(fetched.incoming.lazy.filter { $0.record != nil }.map(\.id)) }
            cursor = fetched.token
            let next = Self.committing(fetched.token, after: state)
            let mergedPage: MergedPage
            if let ahead = fetched.merged {
                mergedPage = ahead
            } else {
                let local = try await localState(of: fetched.ids)
                mergedPage = try merged(fetched.incoming, local: local, zoneState: next)
            }
            let changes = record(mergedPage)
            observer(.willApply(adapter: name, records: changes.writes.count + changes.deletes.count))
            // The store writes this page while the next one is fetched, opened, looked up and merged.
            let (adapter, adapterName, activity) = (adapter, name, activity)
            async let applying: Void = Self.store("applying a downloaded page", adapter: adapterName, activity: activity) {
                try await adapter.apply(changes)
            }
            if fetched.moreComing {
                let (token, applyingIDs) = (cursor, Set(fetched.ids))
                do {
                    prefetched = .success(try await fetchPage(since: token, applying: applyingIDs, after: next))
                } catch {
                    // Surfaces after this page is committed, as a fetch of the next one would.
                    prefetched = .failure(error)
                }
            }
            try await applying
            report.downloaded += changes.writes.count
            report.deletedLocally += changes.deletes.count
            state = next
            observer(.didFetch(adapter: name, written: changes.writes.count, deleted: changes.deletes.count))
            if !fetched.moreComing { break }
        }
        if state.refetching {
            try await reconcile(seen: seen)
            state.token = cursor
            state.refetching = false
            let zoneState = state.encoded()
            try await store("committing the zone state") { try await adapter.markUploaded(SyncStateUpdate(zoneState: zoneState)) }
        }
    }

    /// A page of changes in the form the store holds them, already merged when that could be
    /// done ahead.
    struct FetchedPage: Sendable {
        var incoming: [IncomingRecord]
        var token: ChangeToken?
        var moreComing: Bool
        var merged: MergedPage?
        var ids: [RecordID] { incoming.map(\.id) }
    }

    /// A server version of a record in the form the store holds it (``localForm(_:)``).
    struct IncomingRecord: Sendable {
        var id: RecordID
        /// The record without the reserved fields; `nil`: deleted on the server.
        var record: Record?
        /// Whether this replica wrote that version (its stamp was in the device field).
        var writtenHere = false
    }

    /// Fetches the page after `token` and checks and opens its records (decryption, assets).
    /// While another page is being applied (`applying`, its records), it also reads the local
    /// state of these records and merges them, with `previous` as the zone state that page
    /// commits, unless a record is in both pages: then that waits until the page is committed.
    private func fetchPage(
        since token: ChangeToken?, applying: Set<RecordID>?, after previous: ZoneSyncState
    ) async throws -> FetchedPage {
        observer(.willFetch(adapter: name))
        var page = try await retrying("fetching changes") {
            try await cloud.fetchChanges(in: zone, since: token, limit: configuration.fetchLimit)
        }
        try checkCompatibility(page.modified)
        // Each record is moved out of the page, so that removing its reserved fields changes the
        // one copy of its fields rather than copying them.
        var modified: [Record] = []
        swap(&modified, &page.modified)
        var incoming: [IncomingRecord] = []
        incoming.reserveCapacity(modified.count + page.deleted.count)
        while let record = modified.popLast() { incoming.append(try await localForm(record)) }
        incoming.reverse()
        incoming += page.deleted.map { IncomingRecord(id: $0, record: nil) }
        var fetched = FetchedPage(incoming: incoming, token: page.token, moreComing: page.moreComing)
        if let applying, !fetched.incoming.contains(where: { applying.contains($0.id) }) {
            // Disjoint from the page being applied, so that write cannot change what is read here;
            // edits made meanwhile are caught by the expected pending versions.
            let local = try await localState(of: fetched.ids)
            fetched.merged = try merged(fetched.incoming, local: local, zoneState: Self.committing(page.token, after: previous))
        }
        return fetched
    }

    /// The zone state a page commits: the previous one with the page's token, or with none while
    /// refetching (see ZoneSyncState.refetching).
    private static func committing(_ token: ChangeToken?, after previous: ZoneSyncState) -> ZoneSyncState {
        var next = previous
        next.token = previous.refetching ? nil : token
        return next
    }

    /// After a full refetch, local records that were synced but not returned were deleted remotely.
    private mutating func reconcile(seen: Set<RecordID>) async throws {
        let synced = try await store("listing synced records") { try await adapter.syncedRecordIDs() }
        let missing = synced.filter { !seen.contains($0) }
        for start in stride(from: 0, to: missing.count, by: Self.reconciliationChunk) {
            let chunk = missing[start..<min(start + Self.reconciliationChunk, missing.count)]
            _ = try await integrate(chunk.map { IncomingRecord(id: $0, record: nil) }, zoneState: state)
        }
    }

    private func checkCompatibility(_ records: [Record]) throws {
        for record in records {
            if case .int64(let version)? = record.fields[configuration.compatibilityVersionField],
                version > configuration.compatibilityVersion
            {
                throw SyncError(
                    .higherModelVersionFound,
                    "record \(record.id) was written with model version \(version), newer than this gateway's \(configuration.compatibilityVersion); upgrade the gateway. Nothing of that page was applied and the change token did not move",
                    adapter: name)
            }
        }
    }

    /// A cloud record as the adapter sees it: encrypted fields decrypted, asset fields replaced by
    /// their bytes (checked against their checksum), the fields the gateway reserves for itself
    /// removed (the device stamp says whether this replica wrote that version).
    private func localForm(_ record: consuming Record) async throws -> IncomingRecord {
        try open(&record)
        for (field, value) in record.fields {
            guard case .asset(let reference) = value else { continue }
            let data = try await retrying("downloading an asset") { try await cloud.downloadAsset(reference) }
            guard Int64(data.count) == reference.size, AssetChecksum.of(data) == reference.checksum else {
                throw SyncError(
                    .cloudFailed,
                    "the asset of field \(field) of record \(record.id.recordName) does not match its checksum; nothing of the page was applied and the change token did not move",
                    adapter: name)
            }
            record.fields[field] = .bytes(data)
        }
        let stamp = record.fields.removeValue(forKey: configuration.deviceIDField)
        record.fields.removeValue(forKey: configuration.compatibilityVersionField)
        return IncomingRecord(id: record.id, record: record, writtenHere: stamp == .string(writerStamp))
    }

    /// Uploads the binary fields of `record` that travel as assets, and puts their references in
    /// their place.
    private func withAssets(_ record: Record) async throws -> Record {
        var record = record
        for (field, value) in record.fields {
            guard case .bytes(let data) = value, options.assets.sendsAsAsset(field, recordType: record.recordType) else { continue }
            let reference = try await retrying("uploading an asset") { try await cloud.uploadAsset(data) }
            record.fields[field] = .asset(reference)
        }
        return record
    }

    /// The batch's operations with binary fields uploaded as assets. A record whose asset the
    /// cloud refuses (too large) fails alone, with the cloud's error.
    private func operationsWithAssets(_ operations: [RecordOperation]) async throws -> (
        send: [RecordOperation], refused: [RecordID: CloudError]
    ) {
        var send: [RecordOperation] = []
        send.reserveCapacity(operations.count)
        var refused: [RecordID: CloudError] = [:]
        for operation in operations {
            do {
                switch operation {
                case .create(let record): send.append(.create(try await withAssets(record)))
                case .replace(let record): send.append(.replace(try await withAssets(record)))
                default: send.append(operation)
                }
            } catch let error as CloudError where error.code == .limitExceeded {
                refused[operation.recordID] = CloudError(
                    .limitExceeded, "a binary field of record \(operation.recordID.recordName) is too large for an asset: \(error.message)",
                    recordID: operation.recordID)
            }
        }
        return (send, refused)
    }

    /// For a record over the size limit, which field to turn into an asset.
    static func sizeHint(_ error: CloudError, sent: Record?) -> String {
        guard error.code == .limitExceeded, let sent else { return "" }
        let sizes = sent.fields.map { ($0.key, FieldCoding.encode($0.value).count) }
        guard let (field, size) = sizes.max(by: { $0.1 < $1.1 }) else { return "" }
        if case .bytes? = sent.fields[field] {
            return "; its largest field is \(field) (\(size) bytes): send it as an asset (turn force_data off, or list it in assets)"
        }
        return "; its largest field is \(field) (\(size) bytes)"
    }

    /// The record with its encrypted fields decrypted.
    /// - Throws: ``SyncError/Code/undecryptableField`` when a field cannot be decrypted (or this
    ///   adapter has no keys), before anything of the page is applied.
    private func open(_ record: inout Record) throws {
        guard record.hasEncryptedFields else { return }
        guard let encryption = options.encryption else {
            let field = record.fields.first { if case .encrypted = $0.value { true } else { false } }?.key ?? ""
            throw SyncError(
                .undecryptableField,
                "field \(field) of record \(record.id.recordName) is encrypted, and adapter \(name) has no keys; configure encryption.keys",
                adapter: name)
        }
        do {
            record = try encryption.decrypt(record)
        } catch {
            var error = error
            error.adapter = name
            throw error
        }
    }

    /// Merges server versions into the store and commits them with `zoneState`. Returns how many
    /// records were written and deleted locally.
    @discardableResult
    private mutating func integrate(
        _ incoming: [IncomingRecord], zoneState: ZoneSyncState
    ) async throws -> (written: Int, deleted: Int) {
        let local = try await localState(of: incoming.map(\.id))
        let changes = record(try merged(incoming, local: local, zoneState: zoneState))
        observer(.willApply(adapter: name, records: changes.writes.count + changes.deletes.count))
        try await store("applying merged changes") { [changes] in try await adapter.apply(changes) }
        report.downloaded += changes.writes.count
        report.deletedLocally += changes.deletes.count
        return (changes.writes.count, changes.deletes.count)
    }

    private func localState(of ids: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        ids.isEmpty ? [:] : try await store("reading local state") { try await adapter.localState(for: ids) }
    }

    /// What a page's merge decided: the store's writes and commit, and the conflicts it resolved,
    /// which ``record(_:)`` adds to the report once the page is the current one.
    struct MergedPage: Sendable {
        var changes: DownloadedChanges
        var conflicts: [(id: RecordID, policy: MergePolicy, outcome: ConflictOutcome)] = []
    }

    /// Counts and reports the conflicts of a merged page, and returns its changes.
    private mutating func record(_ page: MergedPage) -> DownloadedChanges {
        for conflict in page.conflicts {
            report.conflicts[conflict.outcome, default: 0] += 1
            observer(.conflict(adapter: name, recordID: conflict.id, policy: conflict.policy, resolution: conflict.outcome))
        }
        return page.changes
    }

    /// Merges incoming records with the store's state of them: what to write, delete and commit.
    /// Pure work, so the download can do it for the next page while the store applies this one.
    private func merged(
        _ incoming: [IncomingRecord], local: [RecordID: LocalRecordState], zoneState: ZoneSyncState
    ) throws -> MergedPage {
        var conflicts: [(id: RecordID, policy: MergePolicy, outcome: ConflictOutcome)] = []
        var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: zoneState.encoded()))
        changes.writes.reserveCapacity(incoming.count)
        changes.state.metadata.reserveCapacity(incoming.count)
        changes.expectedPendingVersions.reserveCapacity(incoming.count)
        changes.absentLocally.reserveCapacity(incoming.count)
        for item in incoming {
            let (id, server, ownWrite) = (item.id, item.record, item.writtenHere)
            let current = local[id]
            changes.expectedPendingVersions[id] = current?.pendingVersion ?? 0
            let metadata = try current?.metadata.map(RecordMetadata.init(decoding:))
            if let server, server.changeTag != nil, metadata?.changeTag == server.changeTag {
                continue  // our own write coming back
            }
            guard let current, let pendingVersion = current.pendingVersion else {
                if let server {
                    if current?.isEmpty ?? true { changes.absentLocally.insert(id) }
                    changes.writes.append(server)
                    changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server)
                } else if metadata != nil {
                    changes.deletes.append(id)
                    changes.state.removedMetadata.insert(id)
                }
                continue
            }
            if let server, ownWrite {
                // This replica wrote that version, but never learned it was saved (the answer was
                // lost): it is an earlier state of the local record, not a concurrent change.
                // Rebase onto it and upload the newer local state.
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server)
                continue
            }
            if server == nil && current.record == nil {
                // Deleted on both sides: they agree, so there is nothing to resolve.
                changes.state.removedMetadata.insert(id)
                changes.state.settled[id] = pendingVersion
                continue
            }
            if let server, let record = current.record, record.recordType == server.recordType, record.fields == server.fields {
                // Both sides hold the same values (two stores seeded alike, or a full resync after
                // a reset): nothing to resolve and nothing to upload.
                changes.state.metadata[id] = RecordMetadata.encoded(syncedRecord: server)
                changes.state.settled[id] = pendingVersion
                continue
            }
            let conflict = ConflictContext(
                recordID: id, ancestor: metadata?.ancestor(against: server), local: current.record, server: server)
            let settings = options.mergeSettings(for: server?.recordType ?? current.record?.recordType ?? metadata?.recordType)
            let resolution = try ThreeWayMerge.resolve(conflict, settings: settings, resolvers: configuration.resolvers)
            let recordType = server?.recordType ?? current.record?.recordType ?? metadata?.recordType ?? ""
            let rebased =
                server.map { RecordMetadata(syncedRecord: $0) }
                ?? RecordMetadata(changeTag: nil, recordType: recordType, fingerprints: [:])
            let outcome: ConflictOutcome
            switch resolution {
            case .server:
                if let server {
                    changes.writes.append(server)
                    changes.state.metadata[id] = rebased.encoded()
                } else {
                    if current.record != nil { changes.deletes.append(id) }
                    changes.state.removedMetadata.insert(id)
                }
                changes.state.settled[id] = pendingVersion
                outcome = .serverWon
            case .local:
                changes.state.metadata[id] = rebased.encoded()
                outcome = .localWon
            case .fields(let fields):
                changes.writes.append(Record(id: id, recordType: recordType, fields: fields))
                changes.state.metadata[id] = rebased.encoded()
                outcome = .merged
            }
            conflicts.append((id, settings.policy, outcome))
        }
        return MergedPage(changes: changes, conflicts: conflicts)
    }

    // MARK: Upload

    /// Uploads pending changes batch by batch. While the cloud saves one batch, the next one is
    /// read from the store (they are different files, so both cores work), and the outcome of a
    /// batch is committed together with the intent of the next one, so each batch costs one
    /// adapter write besides the read.
    private mutating func upload() async throws {
        let total = try await store("counting pending changes") { try await adapter.pendingChangeCount() }
        guard total > 0 else { return }
        observer(.willUpload(adapter: name, pending: total))
        var done = 0
        var idleRounds = 0
        // The next batch, already read, whose intent is already committed.
        var prepared: UploadBatch?
        while true {
            try stopIfCancelled()
            let size = state.effectiveBatchSize(configured: options.batchSize)
            let batch: UploadBatch
            if let next = prepared {
                batch = next
                prepared = nil
            } else {
                let pending = try await store("reading pending changes") { try await adapter.pendingChanges(limit: size) }
                if pending.isEmpty { break }
                batch = try UploadBatch(pending, configuration: configuration, writerStamp: writerStamp, encryption: options.encryption)
                if !batch.operations.isEmpty {
                    // Commit what is about to be sent first: if the answer is lost or the process
                    // dies after the cloud saved it, the next sync still knows these values are its own.
                    let intents = SyncStateUpdate(metadata: batch.intents, zoneState: state.encoded(), sending: Set(batch.intents.keys))
                    try await store("committing upload intents") { try await adapter.markUploaded(intents) }
                }
            }
            var update = SyncStateUpdate(settled: batch.settledLocally, zoneState: Data())
            // Room for this batch's outcome and the next batch's intents.
            update.metadata.reserveCapacity(2 * size)
            update.settled.reserveCapacity(size)
            for id in batch.settledLocally.keys where batch.metadata[id] != nil { update.removedMetadata.insert(id) }
            var settledCount = batch.settledLocally.count
            var conflicts: [(RecordID, Record?)] = []
            var lookups: [RecordID] = []
            var quotaError: CloudError?
            // The next batch, read and prepared (fingerprinted, encrypted) while the cloud saves
            // this one. A failure to prepare it surfaces after this batch's outcome is committed.
            var upcoming: Result<UploadBatch, any Error>?
            if !batch.operations.isEmpty {
                let results: [RecordOperationResult]
                do {
                    let (send, refused) = try await operationsWithAssets(batch.operations)
                    let (cloud, zone, retrier) = (cloud, zone, retrier)
                    async let sending = send.isEmpty ? [] : retrier.run("saving a batch") { try await cloud.modify(send, in: zone, atomic: false) }
                    let cursor = batch.latestVersion
                    let read = try await store("reading pending changes") { try await adapter.pendingChanges(limit: size, after: cursor) }
                    // What was read, minus this batch's records: their outcome is committed below,
                    // and a record edited again meanwhile goes in a later round.
                    let next = read.excluding(batch.recordIDs, limit: size)
                    if !next.isEmpty {
                        do {
                            upcoming = .success(
                                try UploadBatch(next, configuration: configuration, writerStamp: writerStamp, encryption: options.encryption))
                        } catch {
                            upcoming = .failure(error)
                        }
                    }
                    var answers = try await sending.makeIterator()
                    results = batch.operations.map { operation in
                        refused[operation.recordID].map { .failed(operation.recordID, $0) } ?? answers.next()!
                    }
                    if state.effectiveBatchSize(configured: options.batchSize) == size {
                        state.recordCleanBatch(configured: options.batchSize, now: environment.now())
                        let grown = state.effectiveBatchSize(configured: options.batchSize)
                        if grown != size { observer(.batchSizeChanged(adapter: name, size: grown)) }
                    }
                } catch let error as CloudError where error.code == .limitExceeded && batch.operations.count > 1 {
                    state.recordLimitExceeded(size: batch.operations.count, configured: options.batchSize, now: environment.now())
                    observer(.batchSizeChanged(adapter: name, size: state.effectiveBatchSize(configured: options.batchSize)))
                    update.zoneState = state.encoded()
                    try await store("committing a batch's outcome") { [update] in try await adapter.markUploaded(update) }
                    continue
                } catch let error as CloudError where error.code == .limitExceeded {
                    results = [.failed(batch.operations[0].recordID, error)]
                } catch let error as CloudError where error.code == .quotaExceeded {
                    results = []
                    quotaError = error
                }
                for (operation, result) in zip(batch.operations, results) {
                    let id = operation.recordID
                    let version = batch.versions[id]!
                    switch result {
                    case .saved(let saved):
                        update.metadata[id] = RecordMetadata.encoded(
                            changeTag: saved.changeTag, recordType: saved.recordType, sortedFingerprints: batch.fingerprints[id]!, sent: [])
                        update.settled[id] = version
                        report.uploaded += 1
                        settledCount += 1
                    case .deleted:
                        update.removedMetadata.insert(id)
                        update.settled[id] = version
                        report.deletedRemotely += 1
                        settledCount += 1
                    case .failed(_, let error):
                        switch error.code {
                        case .serverRecordChanged:
                            if let server = error.serverRecord { conflicts.append((id, server)) } else { lookups.append(id) }
                        case .unknownItem:
                            if case .delete = operation {
                                update.removedMetadata.insert(id)
                                update.settled[id] = version
                                settledCount += 1
                            } else {
                                conflicts.append((id, nil))
                            }
                        case .quotaExceeded:
                            quotaError = error
                        case .zoneNotFound, .userDeletedZone, .notAuthenticated:
                            throw error
                        case let code where code.isTransient || code == .batchRequestFailed:
                            break  // stays pending; the next round sends it again
                        default:
                            update.failures[id] = RecordFailure(
                                version: version, code: error.code.name, message: error.message + Self.sizeHint(error, sent: operation.record))
                            report.failedRecords += 1
                            settledCount += 1
                        }
                    }
                }
            }
            if quotaError == nil, case .success(let nextBatch) = upcoming {
                update.sending.reserveCapacity(nextBatch.intents.count)
                for (id, intent) in nextBatch.intents where update.metadata[id] == nil {
                    update.metadata[id] = intent
                    update.sending.insert(id)
                }
                prepared = nextBatch
            }
            update.zoneState = state.encoded()
            observer(.willCommit(adapter: name, records: batch.operations.count))
            try await store("committing a batch's outcome") { [update] in try await adapter.markUploaded(update) }
            if quotaError == nil, case .failure(let error) = upcoming { throw error }
            done += settledCount
            observer(
                .didUpload(
                    adapter: name, saved: update.metadata.count - update.sending.count,
                    deleted: update.removedMetadata.count, failed: update.failures.count))
            observer(.progress(adapter: name, done: min(done, total), total: total))
            if let quotaError {
                throw SyncError(
                    .quotaExceeded,
                    "the cloud is out of storage (\(quotaError.message)); uploads stopped and everything unsent stays pending",
                    adapter: name, underlying: quotaError)
            }
            if !lookups.isEmpty {
                let servers = try await retrying("looking up conflicting records") { try await cloud.lookup(lookups) }
                try checkCompatibility(servers.compactMap { $0 })
                conflicts += zip(lookups, servers).map { ($0, $1) }
            }
            if !conflicts.isEmpty {
                try checkCompatibility(conflicts.compactMap(\.1))
                var local: [IncomingRecord] = []
                for (id, server) in conflicts {
                    if let server { local.append(try await localForm(server)) } else { local.append(IncomingRecord(id: id, record: nil)) }
                }
                try await integrate(local, zoneState: state)
            }
            idleRounds = settledCount > 0 ? 0 : idleRounds + 1
            guard idleRounds < Self.maximumIdleRounds else {
                throw SyncError(
                    .conflictsUnresolved,
                    "\(batch.recordIDs.count) records kept meeting concurrent changes for \(idleRounds) rounds; they stay pending for the next sync",
                    adapter: name)
            }
        }
    }

    // MARK: Plumbing

    /// Runs a cloud call, retrying transient failures as the retry policy says.
    private func retrying<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        try await retrier.run(what, body)
    }

    var retrier: CloudRetrier {
        CloudRetrier(policy: configuration.retry, environment: environment, observer: observer, adapter: name, activity: activity)
    }

    /// Runs an adapter call, naming the adapter in its failure; `what` says what it does.
    private func store<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        try await Self.store(what, adapter: name, activity: activity, body)
    }

    private static func store<T>(
        _ what: String, adapter name: String, activity: SyncActivity, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await activity.during("the store: \(what)", body)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.adapterFailed, "the store failed: \(error)", adapter: name, underlying: error)
        }
    }

    /// Stops between pages and batches when the sync's task is cancelled (the service shutting
    /// down): everything done so far is committed, the rest stays pending for the next sync.
    private func stopIfCancelled() throws {
        if Task.isCancelled {
            throw SyncError(.interrupted, "the sync was stopped between batches; what was not sent stays pending", adapter: name)
        }
    }

    private func syncError(_ error: any Error) -> SyncError {
        switch error {
        case is CancellationError:
            return SyncError(.interrupted, "the sync was stopped; what was not sent stays pending", adapter: name, underlying: error)
        case var error as SyncError:
            error.adapter = error.adapter ?? name
            return error
        case let error as CloudError:
            return SyncError(.cloudFailed, "the cloud failed: \(error.code): \(error.message)", adapter: name, underlying: error)
        default:
            return SyncError(.adapterFailed, "\(error)", adapter: name, underlying: error)
        }
    }
}

/// Retries transient cloud failures; a value, so a child task can use it.
struct CloudRetrier: Sendable {
    let policy: RetryPolicy
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    let adapter: String
    var activity: SyncActivity?

    func run<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                if let activity { return try await activity.during("the cloud: \(what)", body) }
                return try await body()
            } catch let error as CloudError where error.code.isTransient {
                attempt += 1
                guard attempt < policy.maxAttempts else {
                    throw SyncError(
                        .retriesExhausted,
                        "the cloud kept failing (\(error.code)) after \(attempt) attempts; everything unsent stays pending for the next sync",
                        adapter: adapter, underlying: error)
                }
                let delay = error.retryAfter ?? policy.backoff(afterAttempt: attempt, jitter: environment.jitter())
                observer(.retrying(adapter: adapter, error: error, attempt: attempt, delay: delay))
                activity?.expectDelay(delay)
                try await environment.sleep(delay)
            } catch let error as CloudError where error.code == .notAuthenticated {
                throw SyncError(
                    .notAuthenticated,
                    "the cloud rejected the gateway's credentials (\(error.message)); check the cloud section of the configuration and sign in again",
                    adapter: adapter, underlying: error)
            }
        }
    }
}

/// The cloud operations for one batch of pending changes.
struct UploadBatch {
    /// Every record of the batch, sent or settled locally.
    var recordIDs: Set<RecordID> { Set(versions.keys).union(settledLocally.keys) }
    /// The highest change-log version in the batch.
    var latestVersion: Int64? { (Array(versions.values) + Array(settledLocally.values)).max() }

    /// Each saved record's metadata with the values about to be sent remembered. Encoded with the
    /// batch, so that for the next batch this happens while the cloud saves the current one.
    private(set) var intents: [RecordID: Data] = [:]

    /// Fingerprints of the user fields sent for each saved record, sorted by field name.
    var fingerprints: [RecordID: [(key: String, value: FieldFingerprint)]] = [:]

    var operations: [RecordOperation] = []
    /// The change-log version read for each record.
    var versions: [RecordID: Int64] = [:]
    /// Each record's metadata as read; absent for records never synced.
    var metadata: [RecordID: RecordMetadata] = [:]
    /// Local deletions of records the cloud never had: settled without a request.
    var settledLocally: [RecordID: Int64] = [:]

    init(_ pending: consuming PendingChanges, configuration: SyncConfiguration, writerStamp: String, encryption: FieldEncryption?) throws {
        let count = pending.count
        operations.reserveCapacity(count)
        versions.reserveCapacity(count)
        fingerprints.reserveCapacity(count)
        metadata.reserveCapacity(count)
        intents.reserveCapacity(count)
        // Each record is moved out of the pending changes, so that encrypting and stamping it
        // change the one copy of its fields.
        var saves: [PendingSave] = []
        swap(&saves, &pending.saves)
        saves.reverse()
        while var save = saves.popLast() {
            let id = save.record.id
            var record = save.record
            // Leaves `record` the only owner of the fields.
            save.record.fields = [:]
            let (metadataBlob, version) = (save.metadata, save.version)
            let metadata = try metadataBlob.map(RecordMetadata.init(decoding:))
            self.metadata[id] = metadata
            record.changeTag = metadata?.changeTag
            fingerprints[id] = FieldFingerprint.sorted(of: record.fields)
            versions[id] = version
            record.fields.reserveCapacity(record.fields.count + 2)
            if let encryption {
                do {
                    try encryption.encrypt(&record)
                } catch {
                    throw SyncError(.encryptionFailed, "record \(id.recordName) cannot be encrypted: \(error.message)")
                }
            }
            record.fields[configuration.compatibilityVersionField] = .int64(configuration.compatibilityVersion)
            record.fields[configuration.deviceIDField] = .string(writerStamp)
            operations.append(record.changeTag == nil ? .create(record) : .replace(record))
            var intent = metadata ?? RecordMetadata(changeTag: nil, recordType: record.recordType, fingerprints: [:])
            intent.recordSending(fingerprints[id]!.lazy.map { ($0.key, $0.value) })
            intents[id] = intent.encoded()
        }
        for delete in pending.deletes {
            let id = delete.recordID
            let metadata = try delete.metadata.map(RecordMetadata.init(decoding:))
            self.metadata[id] = metadata
            if let tag = metadata?.changeTag {
                versions[id] = delete.version
                operations.append(.delete(id, changeTag: tag))
            } else {
                settledLocally[id] = delete.version
            }
        }
    }
}
