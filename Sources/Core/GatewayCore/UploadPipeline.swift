import Foundation

/// Where an upload pass's batches are, and what the pass does next, as a value the pass's
/// async loop (``UploadPass``) drives and tests step without a store or a cloud.
///
/// At most three batches are in the pipeline at once, besides the one being sent:
/// - the **unsettled** round: sent, its answers sorted, its outcome not committed;
/// - the **prepared** batch: read, its intents committed (with the unsettled round's outcome),
///   sent next;
/// - the batch **ahead**: read while the unsettled round's outcome committed, its intents not
///   committed; it becomes the next prepared batch if the batch size has not changed.
///
/// A batch is read without the records of the batches before it whose outcomes are not
/// committed: a record edited again meanwhile goes in a later round.
struct UploadPipeline {
    /// What the pass has sent, may still send, and has given up on.
    var progress: UploadProgress
    private(set) var prepared: UploadBatch?
    private var ahead: (batch: UploadBatch, size: Int)?
    private(set) var unsettled: UploadRound?

    init(progress: UploadProgress) {
        self.progress = progress
    }

    /// What the pass does at the top of a round.
    enum Step {
        /// The pass has sent its bound: what is left waits for the next sync.
        case bounded
        /// Commit the last round's outcome (``settle(withIntentsOf:whileSending:)``): the batch
        /// about to be read must see it.
        case settle
        /// Send this batch, read and prepared during the last round, its intents committed.
        case send(UploadBatch)
        /// Read a batch now, commit its intents and send it (``took(_:)``).
        case read
    }

    /// The next step of the pass.
    mutating func next() -> Step {
        guard progress.maySend else { return .bounded }
        if let batch = prepared {
            prepared = nil
            progress.took(batch.operations.count)
            return .send(batch)
        }
        if unsettled != nil { return .settle }
        ahead = nil  // read after a batch no longer in flight
        return .read
    }

    /// A batch read at the top of the round is sent.
    mutating func took(_ batch: UploadBatch) {
        progress.took(batch.operations.count)
    }

    /// What follows a batch being sent.
    enum Following {
        /// The batch read ahead during the last round, at this round's size.
        case readAhead(UploadBatch)
        /// Read it now, without these records (the batch being sent, and the unsettled one's).
        case read(excluding: [Set<RecordID>])
        /// The pass may send no more.
        case none
    }

    /// What follows `round`'s batch, which is being sent. A batch read ahead at another size
    /// is dropped.
    mutating func following(_ round: UploadRound) -> Following {
        defer { ahead = nil }
        if let ahead, ahead.size == round.size { return .readAhead(ahead.batch) }
        guard progress.maySend else { return .none }
        return .read(excluding: [round.batch.recordIDs, unsettled?.batch.recordIDs ?? []])
    }

    /// Whether the batch after `next` may be read while the last round's outcome commits, and
    /// without which records: those of the three batches before it.
    func readAheadExclusions(sending batch: UploadBatch, next: UploadBatch) -> [Set<RecordID>]? {
        guard progress.mayReadAhead(after: next.operations.count) else { return nil }
        return [batch.recordIDs, unsettled?.batch.recordIDs ?? [], next.recordIDs]
    }

    /// A batch was read ahead at `size`.
    mutating func readAhead(_ batch: UploadBatch, size: Int) {
        ahead = (batch, size)
    }

    /// What the pass commits to settle the last round.
    enum Settlement {
        /// Nothing was unsettled and nothing is to be prepared.
        case nothing
        /// No round to settle: commit the next batch's intents alone.
        case intents(UploadBatch)
        /// Commit this round's update (the next batch's intents merged in), then resolve its
        /// conflicts and count it (``UploadProgress/settled(_:adapter:)``). When the round's
        /// `upcoming` is a failure, it is thrown after the commit.
        case round(UploadRound)
    }

    /// Takes the last round out to be committed with the intents of `next` (which becomes the
    /// prepared batch), while `sending` is in flight (its intents stay as they are).
    mutating func settle(withIntentsOf next: Result<UploadBatch, any Error>? = nil, whileSending sending: UploadBatch? = nil) -> Settlement {
        guard var round = unsettled else {
            guard case .success(let next) = next else { return .nothing }
            prepared = next
            return .intents(next)
        }
        unsettled = nil
        if let next { round.upcoming = next }
        if let sending { round.update.stillSending = sending.intentIDs }
        if round.quotaError == nil, case .success(let next) = round.upcoming {
            // The next batch holds none of this round's records (``following(_:)``).
            round.update.metadata.reserveCapacity(round.update.metadata.count + next.intents.count)
            round.update.metadata.merge(next.intents) { outcome, _ in outcome }
            round.update.sending = next.intentIDs
            prepared = next
        }
        return .round(round)
    }

    /// `round`'s answers are sorted. Returns whether its outcome must commit now: nothing went
    /// to the cloud, the next batch could not be prepared, or the cloud is out of storage.
    mutating func sent(_ round: UploadRound) -> Bool {
        unsettled = round
        return round.batch.operations.isEmpty || round.quotaError != nil || round.failedToPrepareNext
    }

    /// The round's batch was too large and the size shrank: it goes back unsent, and the
    /// batches prepared meanwhile, read at the old size, are read again.
    mutating func shrank(_ round: UploadRound) {
        progress.tookBack(round.batch.operations.count)
        prepared = nil
        ahead = nil
    }
}
