import Foundation

/// The upload of one adapter's pass: pending saves and deletes in batches, until nothing is
/// pending or the pass has sent its bound (``UploadProgress/budget(pendingAtStart:batchSize:)``),
/// so that a program writing without pause cannot keep a sync from ending. Each round:
///
/// 1. **take** a batch: the one prepared during the last round, or read now (its intents, the
///    values about to be sent, are committed first, so a lost answer is recognised later);
/// 2. **send** it (as up to ``CloudLimits/modifyRequestsInFlight`` requests side by side), and
///    while the cloud saves it: take the next batch (read and prepared during the last round, or
///    read now), then **commit** the previous round's outcome together with the next batch's
///    intents (one store write per batch) and **resolve** the previous round's conflicts, merging
///    the server's versions into the store, while the batch after the next is read and prepared;
/// 3. sort the answers into this round, whose outcome the next round commits (or the pass, at
///    its end).
///
/// So the store's work for one batch overlaps the cloud's work for the next, and the store's
/// read of a batch overlaps its commit of another. Which batch is where, and what comes next, is
/// ``UploadPipeline``'s to say; this type does the reads, sends and commits it asks for.
///
/// The batch size halves on `limitExceeded` and grows back after clean batches (``ZoneSyncState``).
struct UploadPass {
    let context: SyncContext
    var state: ZoneSyncState
    var report: AdapterSyncReport

    private var done = 0
    private var total = 0
    /// Which batches are read, in flight and unsettled, and what the pass does next.
    private var pipeline = UploadPipeline(progress: UploadProgress(budget: 0))

    init(context: SyncContext, state: ZoneSyncState, report: AdapterSyncReport) {
        self.context = context
        self.state = state
        self.report = report
    }

    private var name: String { context.name }

    mutating func run() async throws {
        let context = context
        total = try await context.store("counting pending changes") { try await context.adapter.pendingChangeCount() }
        guard total > 0 else { return }
        var progress = UploadProgress(budget: UploadProgress.budget(pendingAtStart: total, batchSize: context.options.batchSize))
        // A record whose conflict the download could not resolve stays out of this pass: its
        // upload would only be refused and asked about again.
        progress.failed = report.unresolvedRecords
        // Nor does a record whose download the store refused: its upload would meet the cloud's
        // version, which the store cannot take; the download tries that again first.
        progress.failed.formUnion(state.refused.keys.map { RecordID(recordName: $0, zoneID: context.zone) })
        pipeline = UploadPipeline(progress: progress)
        context.observer(.willUpload(adapter: name, pending: total))
        rounds: while true {
            try context.stopIfCancelled()
            let size = state.effectiveBatchSize(configured: context.options.batchSize)
            let batch: UploadBatch
            switch pipeline.next() {
            case .bounded:
                report.uploadBounded = true
                break rounds
            case .settle:
                try await settleLastRound()
                continue
            case .send(let prepared):
                batch = prepared
            case .read:
                guard let read = try await readNow(size: size) else { break rounds }
                pipeline.took(read)
                batch = read
            }
            var round = UploadRound(batch: batch, size: size)
            if batch.operations.isEmpty {
                try await settleLastRound()
            } else {
                // Settles the last round while the cloud saves this one.
                guard try await send(&round) else { continue }  // too large: the same changes go again, smaller
            }
            if pipeline.sent(round) { try await settleLastRound() }
        }
        try await settleLastRound()
    }

    /// Commits the last round's outcome (with the next batch's intents when one was prepared),
    /// and resolves its conflicts.
    /// - Parameter sending: the batch in flight meanwhile, whose intents the store keeps as they are.
    private mutating func settleLastRound(withIntentsOf next: Result<UploadBatch, any Error>? = nil, whileSending sending: UploadBatch? = nil) async throws {
        switch pipeline.settle(withIntentsOf: next, whileSending: sending) {
        case .nothing:
            return
        case .intents(let next):
            try await commitIntents(of: next)
        case .round(let round):
            try await commit(round)
            try await resolveConflicts(of: round)
            try await context.restoreRefused(round.refused, zoneState: state, report: &report)
            try pipeline.progress.settled(round, adapter: name)
        }
    }

    // MARK: 1. Take

    /// A batch read now, its intents committed; `nil` when nothing is pending.
    private mutating func readNow(size: Int) async throws -> UploadBatch? {
        let context = context
        guard let pending = try await Self.readPending(after: nil, excluding: [], failed: pipeline.progress.failed, size: size, context: context) else {
            return nil
        }
        let batch = try UploadBatch(pending, configuration: context.configuration, writerStamp: context.writerStamp, encryption: context.options.encryption)
        try await commitIntents(of: batch)
        return batch
    }

    /// Commits what is about to be sent, before it is: if the answer is lost or the process dies
    /// after the cloud saved it, the next sync still knows these values are its own.
    private func commitIntents(of batch: UploadBatch) async throws {
        guard !batch.operations.isEmpty else { return }
        let intents = SyncStateUpdate(metadata: batch.intents, zoneState: state.encoded(), sending: batch.intentIDs)
        let context = context
        try await context.store("committing upload intents") { try await context.adapter.commit(intents) }
    }

    // MARK: 2. Send

    /// Sends the round's batch and sorts the answers into the round. Returns `false` when the
    /// batch was too large and the size shrank: the same changes go again in smaller batches.
    private mutating func send(_ round: inout UploadRound) async throws -> Bool {
        let batch = round.batch
        let results: [RecordOperationResult]
        do {
            let (send, refused) = try await operationsWithAssets(batch.operations)
            let (cloud, zone, retrier) = (context.cloud, context.zone, context.retrier)
            async let sending = Self.save(send, in: zone, cloud: cloud, retrier: retrier)
            // While the cloud saves this batch: the next one is taken (read during the last round)
            // or read now, and the last round's outcome is committed with its intents while the
            // batch after it is read and built.
            let upcoming: Result<UploadBatch, any Error>?
            switch pipeline.following(round) {
            case .readAhead(let next): upcoming = .success(next)
            case .read(let excluded): upcoming = try await readNext(after: batch, excluding: excluded, size: round.size)
            case .none: upcoming = nil
            }
            if case .failure = upcoming {
                // Surfaces once this round's outcome is committed.
                round.upcoming = upcoming
                try await settleLastRound(whileSending: batch)
            } else if case .success(let next) = upcoming, let excluded = pipeline.readAheadExclusions(sending: batch, next: next) {
                let (failed, size) = (pipeline.progress.failed, round.size)
                async let further = Self.readAhead(after: next, excluding: excluded, failed: failed, size: size, context: context)
                try await settleLastRound(withIntentsOf: upcoming, whileSending: batch)
                // A batch that could not be read ahead is read again when it is due.
                if let further = try? await further { pipeline.readAhead(further, size: size) }
            } else {
                try await settleLastRound(withIntentsOf: upcoming, whileSending: batch)
            }
            let answers = try await sending
            if refused.isEmpty {
                results = answers
            } else {
                var next = answers.makeIterator()
                results = batch.operations.map { operation in
                    refused[operation.recordID].map { .failed(operation.recordID, $0) } ?? next.next()!
                }
            }
            growBatchSize(after: round.size)
        } catch let error as CloudError where error.code == .limitExceeded && batch.operations.count > 1 {
            state.recordLimitExceeded(size: batch.operations.count, configured: context.options.batchSize, now: context.environment.now())
            context.observer(.batchSizeChanged(adapter: name, size: state.effectiveBatchSize(configured: context.options.batchSize)))
            var update = round.update
            update.zoneState = state.encoded()
            let context = context
            try await context.store("committing a batch's outcome") { [update] in try await context.adapter.commit(update) }
            pipeline.shrank(round)
            return false
        } catch let error as CloudError where error.code == .limitExceeded {
            results = [.failed(batch.operations[0].recordID, error)]
        } catch let error as CloudError where error.code == .quotaExceeded {
            results = []
            round.quotaError = error
        }
        try round.sort(results, progress: &pipeline.progress, report: &report, configuration: context.configuration)
        return true
    }

    /// Requests smaller than this are not split further: their round trip would cost more than
    /// the overlap gains.
    static let smallestSplitRequest = 25

    /// Saves the operations as the requests ``requestParts(sizes:limits:)`` cuts, up to
    /// ``CloudLimits/modifyRequestsInFlight`` of them side by side, each retried on its own; the
    /// answers come back in the operations' order. A request that fails for good fails the
    /// batch; the others may have been applied, which the intents committed before sending
    /// recognise, as after a lost answer. Of a batch cut in several requests, an operation that
    /// the cloud refuses as too large even alone fails alone, with the cloud's error, instead of
    /// shrinking the batch for all the others.
    static func save(
        _ operations: [RecordOperation], in zone: ZoneID, cloud: any CloudDatabase, retrier: CloudRetrier
    ) async throws -> [RecordOperationResult] {
        guard !operations.isEmpty else { return [] }
        var sizes: [Int] = []
        sizes.reserveCapacity(operations.count)
        for index in operations.indices { sizes.append(ModifyRules.chargedSize(of: operations[index])) }
        let parts = requestParts(sizes: sizes, limits: cloud.limits)
        guard parts.count > 1 else {
            return try await retrier.run("saving a batch") { try await cloud.modify(operations, in: zone, atomic: false) }
        }
        @Sendable func send(_ part: [RecordOperation]) async throws -> [RecordOperationResult] {
            do {
                return try await retrier.run("saving a batch") { try await cloud.modify(part, in: zone, atomic: false) }
            } catch let error as CloudError where error.code == .limitExceeded && part.count == 1 {
                return [.failed(part[0].recordID, error)]
            }
        }
        return try await withThrowingTaskGroup(of: (Int, [RecordOperationResult]).self) { group in
            var answers = [[RecordOperationResult]](repeating: [], count: parts.count)
            var next = 0
            func start() {
                let (index, part) = (next, Array(operations[parts[next]]))
                group.addTask { (index, try await send(part)) }
                next += 1
            }
            while next < min(parts.count, cloud.limits.modifyRequestsInFlight) { start() }
            while let (index, answer) = try await group.next() {
                answers[index] = answer
                if next < parts.count { start() }
            }
            return answers.flatMap { $0 }
        }
    }

    /// Cuts a batch whose operations count `sizes` bytes each (``ModifyRules/chargedSize(of:)``)
    /// into requests, as ranges of consecutive operations: each within the cloud's
    /// ``CloudLimits/maxOperationsPerRequest`` and ``CloudLimits/maxRequestSize`` (an operation
    /// larger than a request goes alone), as even as those limits allow, and at least
    /// ``CloudLimits/modifyRequestsInFlight`` of them when each would still carry
    /// ``smallestSplitRequest`` operations. Cutting by size before sending spares a batch of
    /// wide records the refused request, and the halving that would follow it
    /// (``ZoneSyncState/recordLimitExceeded(size:configured:now:)``) and then grow back only to
    /// be refused again.
    static func requestParts(sizes: [Int], limits: CloudLimits) -> [Range<Int>] {
        let count = sizes.count
        guard count > 1 else { return [0..<count] }
        let maximumOperations = max(1, limits.maxOperationsPerRequest)
        let maximumBytes = max(1, limits.maxRequestSize)
        let byCount = max(
            (count + maximumOperations - 1) / maximumOperations, min(limits.modifyRequestsInFlight, max(1, count / smallestSplitRequest)))
        // An operation larger than a request goes alone and is left out of the shares: counted
        // in, it would shrink every other request.
        var total = 0
        var oversized = 0
        for size in sizes {
            if size > maximumBytes { oversized += 1 } else { total += size }
        }
        guard total > maximumBytes || oversized > 0 else {
            // Within the size limit: even parts by count, as many as the limits and the overlap ask.
            guard byCount > 1 else { return [0..<count] }
            let share = (count + byCount - 1) / byCount
            return stride(from: 0, to: count, by: share).map { $0..<min($0 + share, count) }
        }
        // Each part closes once it holds its share of the operations or of the bytes, or before
        // the next operation would pass the size limit. Shares just under the limit can leave a
        // small remainder after full parts (487, 487, 26); one more share evens them out
        // (334, 334, 332), and is taken when it costs no extra request.
        func cut(into wanted: Int) -> [Range<Int>] {
            let operationShare = max(1, (count - oversized + wanted - 1) / wanted)
            let byteShare = (total + wanted - 1) / wanted
            var parts: [Range<Int>] = []
            var start = 0
            var bytes = 0
            for index in 0..<count {
                let size = sizes[index]
                let taken = index - start
                if taken > 0 && (taken >= operationShare || bytes >= byteShare || bytes + size > maximumBytes) {
                    parts.append(start..<index)
                    start = index
                    bytes = 0
                }
                bytes += size
            }
            parts.append(start..<count)
            return parts
        }
        let wanted = max(byCount, (total + maximumBytes - 1) / maximumBytes)
        let parts = cut(into: wanted)
        guard parts.count > wanted, wanted < count else { return parts }
        let even = cut(into: wanted + 1)
        return even.count <= parts.count ? even : parts
    }

    /// Reads the batch after `batch` and prepares it (fingerprints, encryption, stamps). What was
    /// read, minus the `excluded` records (``UploadPipeline/following(_:)``).
    private func readNext(after batch: UploadBatch, excluding excluded: [Set<RecordID>], size: Int) async throws -> Result<UploadBatch, any Error>? {
        let context = context
        guard
            let next = try await Self.readPending(
                after: batch.latestVersion, excluding: excluded, failed: pipeline.progress.failed, size: size, context: context)
        else { return nil }
        return Result { try Self.prepare(next, context: context) }
    }

    /// Reads and prepares the batch after `next` (see ``readNext(after:excluding:size:)``), without the
    /// records of the three batches before it.
    private static func readAhead(
        after next: UploadBatch, excluding excluded: [Set<RecordID>], failed: Set<RecordID>, size: Int, context: SyncContext
    ) async throws -> UploadBatch? {
        guard let pending = try await readPending(after: next.latestVersion, excluding: excluded, failed: failed, size: size, context: context) else { return nil }
        return try prepare(pending, context: context)
    }

    /// The pending changes after `cursor` but those of the `excluded` batches and the records that
    /// `failed` in this pass, the oldest `size`;
    /// `nil` when none are left.
    private static func readPending(
        after cursor: Int64?, excluding excluded: [Set<RecordID>], failed: Set<RecordID>, size: Int, context: SyncContext
    ) async throws -> PendingChanges? {
        // Records that failed in this pass may come back from an adapter without failure marks:
        // read enough that they do not shorten the batch.
        let limit = size + failed.count
        let read = try await context.store("reading pending changes") { try await context.adapter.pendingChanges(limit: limit, after: cursor) }
        // Nothing to leave out (the first batch of most passes): the read is the batch as it is.
        if failed.isEmpty && excluded.allSatisfy(\.isEmpty) { return read.isEmpty ? nil : read }
        let next = read.excluding(where: { id in failed.contains(id) || excluded.contains { $0.contains(id) } }, limit: size)
        return next.isEmpty ? nil : next
    }

    private static func prepare(_ pending: consuming PendingChanges, context: SyncContext) throws -> UploadBatch {
        try UploadBatch(pending, configuration: context.configuration, writerStamp: context.writerStamp, encryption: context.options.encryption)
    }

    /// After a batch of the full current size went through, the size may grow back.
    private mutating func growBatchSize(after size: Int) {
        let configured = context.options.batchSize
        guard state.effectiveBatchSize(configured: configured) == size else { return }
        state.recordCleanBatch(configured: configured, now: context.environment.now())
        let grown = state.effectiveBatchSize(configured: configured)
        if grown != size { context.observer(.batchSizeChanged(adapter: name, size: grown)) }
    }

    // MARK: 3. Commit

    /// Commits the round's outcome (with the next batch's intents, merged in by the pipeline).
    private mutating func commit(_ round: UploadRound) async throws {
        var round = round
        round.update.zoneState = state.encoded()
        context.observer(.willCommit(adapter: name, records: round.batch.operations.count))
        let (context, update) = (context, round.update)
        try await context.store("committing a batch's outcome") { try await context.adapter.commit(update) }
        if round.quotaError == nil, case .failure(let error) = round.upcoming { throw error }
        done += round.settled
        context.observer(
            .didUpload(
                adapter: name, saved: update.metadata.count - update.sending.count, deleted: update.removedMetadata.count,
                failed: update.failures.count))
        // Changes that arrived since the pass began count too, so the progress shows real counts.
        total = max(total, done + (pipeline.prepared?.operations.count ?? 0))
        context.observer(.progress(adapter: name, done: done, total: total))
        if let quotaError = round.quotaError {
            throw SyncError(
                .quotaExceeded, "the cloud is out of storage (\(quotaError.message)); uploads stopped and everything unsent stays pending",
                adapter: name, underlying: quotaError)
        }
    }

    // MARK: 4. Resolve

    /// Merges the server versions that refused this round's records into the store.
    private mutating func resolveConflicts(of round: UploadRound) async throws {
        var conflicts = round.conflicts
        let context = context
        if !round.lookups.isEmpty {
            let lookups = round.lookups
            let servers = try await context.retrying("looking up conflicting records") { try await context.cloud.lookup(lookups) }
            conflicts += zip(lookups, servers).map { ($0, $1) }
        }
        guard !conflicts.isEmpty else { return }
        var reserved = ReservedPositions(context.configuration)
        try context.checkCompatibility(conflicts.compactMap(\.1), reserved: &reserved)
        var incoming: [IncomingRecord] = []
        for (id, server) in conflicts {
            if let server {
                incoming.append(try await context.localForm(server, reserved: &reserved))
            } else {
                incoming.append(IncomingRecord(id: id, record: nil))
            }
        }
        // A record no resolver answered stays out of this pass, as one the cloud refused does.
        pipeline.progress.failed.formUnion(try await context.integrate(incoming, zoneState: state, report: &report))
    }

    // MARK: Assets and hints

    /// The batch's operations with binary fields uploaded as assets. A record whose asset the
    /// cloud refuses (too large) fails alone, with the cloud's error.
    private func operationsWithAssets(_ operations: [RecordOperation]) async throws -> (send: [RecordOperation], refused: [RecordID: CloudError]) {
        // Most batches hold no binary value: they go as they are, without a copy of each record.
        guard operations.contains(where: Self.holdsBytes) else { return (operations, [:]) }
        var send: [RecordOperation] = []
        send.reserveCapacity(operations.count)
        var refused: [RecordID: CloudError] = [:]
        for operation in operations {
            do {
                switch operation {
                case .create(let record) where Self.holdsBytes(operation): send.append(.create(try await withAssets(record)))
                case .update(let record) where Self.holdsBytes(operation): send.append(.update(try await withAssets(record)))
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

    /// Whether a save holds a binary value, which may travel as an asset.
    private static func holdsBytes(_ operation: RecordOperation) -> Bool {
        switch operation {
        case .create(let record), .update(let record):
            return record.values.contains { value in
                if case .bytes? = value { return true }
                return false
            }
        default:
            return false
        }
    }

    /// Uploads the binary fields of `record` that travel as assets, and puts their references in
    /// their place.
    private func withAssets(_ record: Record) async throws -> Record {
        var record = record
        let context = context
        for position in record.values.indices {
            guard case .bytes(let data)? = record.values[position],
                context.options.assets.sendsAsAsset(record.layout.fieldNames[position], recordType: record.recordType)
            else { continue }
            let reference = try await context.retrying("uploading an asset") { try await context.cloud.uploadAsset(data) }
            record[position: position] = .asset(reference)
        }
        return record
    }

    /// For a record over the size limit, which field to turn into an asset.
    static func sizeHint(_ error: CloudError, sent: Record?) -> String {
        guard error.code == .limitExceeded, let sent else { return "" }
        var largest: (field: String, size: Int, isBytes: Bool)?
        sent.forEachField { name, value in
            let size = FieldCoding.encodedSize(of: value)
            if size > largest?.size ?? -1 {
                let isBytes = if case .bytes = value { true } else { false }
                largest = (name, size, isBytes)
            }
        }
        guard let largest else { return "" }
        if largest.isBytes {
            return "; its largest field is \(largest.field) (\(largest.size) bytes): send it as an asset (turn force_data off, or list it in assets)"
        }
        return "; its largest field is \(largest.field) (\(largest.size) bytes of text or values, which cannot travel as an asset: shorten it, or keep it in a binary column sent as an asset)"
    }
}

/// The cloud operations for one batch of pending changes.
struct UploadBatch {
    /// Every record of the batch, sent or settled locally.
    let recordIDs: Set<RecordID>
    /// The highest change-log version in the batch.
    let latestVersion: Int64?

    /// Each saved record's metadata with the values about to be sent remembered. Encoded with the
    /// batch, so that for the next batch this happens while the cloud saves the current one.
    let intents: [RecordID: Data]
    /// The records of ``intents``.
    let intentIDs: Set<RecordID>

    // By position in `operations`, so that sorting the answers looks nothing up.
    let operations: [RecordOperation]
    /// The change-log version read for each operation's record.
    let versions: [Int64]
    /// Fingerprints of the user fields sent for each operation's record, sorted by field name
    /// (none for deletes).
    let fingerprints: [[(key: String, value: FieldFingerprint)]]
    /// The superseded values each operation's record carries (``RecordMetadata/superseded``).
    let superseded: [[UInt64]]

    /// Local deletions of records the cloud never had: settled without a request.
    let settledLocally: [RecordID: Int64]
    /// The records of ``settledLocally`` that have metadata to remove.
    let settledLocallyWithMetadata: Set<RecordID>

    init(_ pending: consuming PendingChanges, configuration: SyncConfiguration, writerStamp: String, encryption: FieldEncryption?) throws {
        let count = pending.count
        var operations: [RecordOperation] = []
        var versions: [Int64] = []
        var fingerprints: [[(key: String, value: FieldFingerprint)]] = []
        var superseded: [[UInt64]] = []
        var intents: [RecordID: Data] = [:]
        var intentIDs = Set<RecordID>()
        operations.reserveCapacity(count)
        versions.reserveCapacity(count)
        fingerprints.reserveCapacity(count)
        intents.reserveCapacity(count)
        intentIDs.reserveCapacity(count)
        var stamps = Stamps(configuration, writerStamp: writerStamp)
        // Each record is moved out of the pending changes, so that encrypting and stamping it
        // change its one copy of the values.
        var saves: [PendingSave] = []
        swap(&saves, &pending.saves)
        saves.withUnsafeMutableBufferPointer { $0.reverse() }  // moves; the array's own copied each save
        var latestVersion: Int64?
        while var save = saves.popLast() {
            let id = save.record.id
            var record = save.record
            // Leaves `record` the only owner of the values.
            save.record = Record(id: id, recordType: "")
            let metadata = try save.metadata.map(RecordMetadata.init(decoding:))
            record.changeTag = metadata?.changeTag
            let sortedFingerprints = FieldFingerprint.sorted(of: record)
            // An update replaces the synced values of the fields it changes: the record carries
            // them, with those the synced version carried, so a replica still holding one as a
            // pending edit knows the zone moved past it.
            var replaced: [UInt64] = []
            if let metadata, !metadata.fingerprints.isEmpty || !metadata.superseded.isEmpty {
                let names = record.layout.fieldNames
                let cleared = record.values.indices.lazy.filter { record.values[$0] == nil }.map { names[$0] }
                replaced = metadata.superseding(sent: sortedFingerprints, cleared: cleared)
            }
            if let encryption {
                do {
                    try encryption.encrypt(&record)
                } catch {
                    throw SyncError(.encryptionFailed, "record \(id.recordName) cannot be encrypted: \(error.message)")
                }
            }
            stamps.stamp(&record, version: save.version, superseded: replaced.isEmpty ? nil : SyncContext.supersededField(replaced))
            // An update: fields the store does not have are unknown to it, not null (DESIGN D4).
            operations.append(record.changeTag == nil ? .create(record) : .update(record))
            versions.append(save.version)
            latestVersion = max(latestVersion ?? save.version, save.version)
            var intent = metadata ?? RecordMetadata(changeTag: nil, recordType: record.recordType, fingerprints: [:])
            intent.recordSending(sortedFingerprints.lazy.map { ($0.key, $0.value) })
            intents[id] = intent.encoded()
            intentIDs.insert(id)
            fingerprints.append(sortedFingerprints)
            superseded.append(replaced)
        }
        var recordIDs = intentIDs
        var settledLocally: [RecordID: Int64] = [:]
        var settledLocallyWithMetadata = Set<RecordID>()
        for delete in pending.deletes {
            let id = delete.recordID
            let metadata = try delete.metadata.map(RecordMetadata.init(decoding:))
            latestVersion = max(latestVersion ?? delete.version, delete.version)
            recordIDs.insert(id)
            if let tag = metadata?.changeTag {
                operations.append(.delete(id, changeTag: tag))
                versions.append(delete.version)
                fingerprints.append([])
                superseded.append([])
            } else {
                settledLocally[id] = delete.version
                if metadata != nil { settledLocallyWithMetadata.insert(id) }
            }
        }
        self.recordIDs = recordIDs
        self.latestVersion = latestVersion
        self.intents = intents
        self.intentIDs = intentIDs
        self.operations = operations
        self.versions = versions
        self.fingerprints = fingerprints
        self.superseded = superseded
        self.settledLocally = settledLocally
        self.settledLocallyWithMetadata = settledLocallyWithMetadata
    }

    /// Writes the compatibility version and the writer stamp (and, for a record that supersedes
    /// values, those) into records, through a layout with the reserved fields, made once per
    /// source layout.
    struct Stamps {
        let compatibilityField: String
        let deviceField: String
        let supersededField: String
        let version: FieldValue
        let writerStamp: String
        private var source: RecordLayout?
        private var target: (layout: RecordLayout, compatibility: Int, device: Int)?
        private var supersedingSource: RecordLayout?
        private var supersedingTarget: (layout: RecordLayout, compatibility: Int, device: Int, superseded: Int)?

        init(_ configuration: SyncConfiguration, writerStamp: String) {
            compatibilityField = configuration.compatibilityVersionField
            deviceField = configuration.deviceIDField
            supersededField = configuration.supersededValuesField
            version = .int64(configuration.compatibilityVersion)
            self.writerStamp = writerStamp
        }

        /// Stamps `record`, uploaded from the store's change with `changeVersion`.
        mutating func stamp(_ record: inout Record, version changeVersion: Int64, superseded: FieldValue? = nil) {
            let writer = SyncContext.writerStampField(writerStamp, version: changeVersion)
            if let superseded {
                if record.layout !== supersedingSource || supersedingTarget == nil {
                    let layout = record.layout.adding([compatibilityField, deviceField, supersededField])
                    supersedingSource = record.layout
                    supersedingTarget = (
                        layout, layout.position(of: compatibilityField)!, layout.position(of: deviceField)!, layout.position(of: supersededField)!
                    )
                }
                let (layout, compatibility, device, position) = supersedingTarget!
                record.grow(to: layout)
                record[position: compatibility] = version
                record[position: device] = writer
                record[position: position] = superseded
                return
            }
            if record.layout !== source || target == nil {
                let layout = record.layout.adding([compatibilityField, deviceField])
                source = record.layout
                target = (layout, layout.position(of: compatibilityField)!, layout.position(of: deviceField)!)
            }
            let (layout, compatibility, device) = target!
            record.grow(to: layout)
            record[position: compatibility] = version
            record[position: device] = writer
        }
    }
}
