import Foundation
import Testing

@testable import GatewayCore

/// The upload pass's pipeline stepped as a value: which batch is read, sent, prepared, read
/// ahead or unsettled, and what each commit carries, without a store or a cloud.
@Suite("upload pipeline")
struct UploadPipelineTests {
    typealias Fixture = UploadRoundTests

    /// A batch saving new records `names`.
    static func batch(_ names: [String]) throws -> UploadBatch {
        let pending = PendingChanges(
            saves: names.enumerated().map { PendingSave(record: Fixture.note($1), metadata: nil, version: Int64($0 + 1)) }, deletes: [])
        return try UploadBatch(pending, configuration: Fixture.configuration, writerStamp: "device:adapter", encryption: nil)
    }

    static func ids(_ names: [String]) -> Set<RecordID> { Set(names.map(Fixture.id)) }

    static func sentBatch(_ step: UploadPipeline.Step) -> UploadBatch? {
        if case .send(let batch) = step { return batch }
        return nil
    }

    @Test("three rounds in steady state: each commit carries the last outcome with the next batch's intents, and reads leave out unsettled records")
    func steadyState() throws {
        var pipeline = UploadPipeline(progress: UploadProgress(budget: 100))
        let (b1, b2, b3, b4) = (try Self.batch(["a", "b"]), try Self.batch(["c", "d"]), try Self.batch(["e"]), try Self.batch(["f"]))

        // Round 1: nothing prepared, nothing unsettled: read now.
        guard case .read = pipeline.next() else { Issue.record("the first batch is read now"); return }
        pipeline.took(b1)
        var r1 = UploadRound(batch: b1, size: 2)
        guard case .read(let excluded1) = pipeline.following(r1) else { Issue.record("the next batch is read while b1 is sent"); return }
        #expect(excluded1 == [Self.ids(["a", "b"]), []])
        #expect(pipeline.readAheadExclusions(sending: b1, next: b2) == [Self.ids(["a", "b"]), [], Self.ids(["c", "d"])])
        guard case .intents(let alone) = pipeline.settle(withIntentsOf: .success(b2), whileSending: b1) else {
            Issue.record("with no round to settle, b2's intents commit alone")
            return
        }
        #expect(alone.intentIDs == Self.ids(["c", "d"]))
        pipeline.readAhead(b3, size: 2)
        r1.update.settled = [Fixture.id("a"): 1, Fixture.id("b"): 2]
        let r1SettlesNow = pipeline.sent(r1)
        #expect(!r1SettlesNow, "a round that sent records settles with the next one")

        // Round 2: b2 was prepared; b3 was read ahead at this size.
        let secondStep = pipeline.next()
        let second = try #require(Self.sentBatch(secondStep))
        #expect(second.recordIDs == Self.ids(["c", "d"]))
        let r2 = UploadRound(batch: b2, size: 2)
        guard case .readAhead(let next) = pipeline.following(r2) else { Issue.record("b3 was read ahead"); return }
        #expect(next.recordIDs == Self.ids(["e"]))
        #expect(pipeline.readAheadExclusions(sending: b2, next: b3) == [Self.ids(["c", "d"]), Self.ids(["a", "b"]), Self.ids(["e"])])
        guard case .round(let settling) = pipeline.settle(withIntentsOf: .success(b3), whileSending: b2) else {
            Issue.record("round 1 settles while b2 is sent")
            return
        }
        #expect(settling.batch.recordIDs == Self.ids(["a", "b"]))
        #expect(settling.update.settled.count == 2)
        #expect(Set(settling.update.metadata.keys) == Self.ids(["e"]), "b3's intents commit with round 1's outcome")
        #expect(settling.update.sending == Self.ids(["e"]))
        #expect(settling.update.stillSending == Self.ids(["c", "d"]), "b2's intents stay as they are while it is in flight")
        pipeline.readAhead(b4, size: 2)
        _ = pipeline.sent(r2)

        // Round 3: b3 goes; b4 follows from the read ahead.
        let thirdStep = pipeline.next()
        let third = try #require(Self.sentBatch(thirdStep))
        #expect(third.recordIDs == Self.ids(["e"]))
        guard case .readAhead(let after) = pipeline.following(UploadRound(batch: b3, size: 2)) else { Issue.record("b4 was read ahead"); return }
        #expect(after.recordIDs == Self.ids(["f"]))
        #expect(pipeline.progress.sent == 5)
    }

    @Test("a batch read ahead at another size is dropped and read again; a shrunk batch goes back unsent with what was prepared")
    func sizeChanges() throws {
        var pipeline = UploadPipeline(progress: UploadProgress(budget: 100))
        let (b1, b2, b3) = (try Self.batch(["a", "b"]), try Self.batch(["c"]), try Self.batch(["d"]))
        _ = pipeline.next()
        pipeline.took(b1)
        pipeline.readAhead(b3, size: 4)
        guard case .read = pipeline.following(UploadRound(batch: b1, size: 2)) else { Issue.record("read at the new size"); return }

        _ = pipeline.settle(withIntentsOf: .success(b2))
        pipeline.readAhead(b3, size: 2)
        pipeline.shrank(UploadRound(batch: b1, size: 2))
        #expect(pipeline.progress.sent == 0, "the batch went back unsent")
        #expect(pipeline.prepared == nil)
        guard case .read = pipeline.next() else { Issue.record("after a shrink, the next batch is read afresh"); return }
        pipeline.took(b1)
        guard case .read = pipeline.following(UploadRound(batch: b1, size: 1)) else { Issue.record("nothing read ahead survives"); return }
    }

    @Test("a round that sent nothing, met a full cloud or could not prepare the next batch settles at once; a full cloud prepares nothing")
    func settleAtOnce() throws {
        let (b1, b2) = (try Self.batch(["a"]), try Self.batch(["b"]))
        var pipeline = UploadPipeline(progress: UploadProgress(budget: 100))
        let emptySettlesNow = pipeline.sent(UploadRound(batch: try Self.batch([]), size: 2))
        #expect(emptySettlesNow, "nothing went to the cloud")

        var full = UploadRound(batch: b1, size: 2)
        full.quotaError = CloudError(.quotaExceeded, "full")
        pipeline = UploadPipeline(progress: UploadProgress(budget: 100))
        let fullSettlesNow = pipeline.sent(full)
        #expect(fullSettlesNow)
        guard case .round(let settling) = pipeline.settle(withIntentsOf: .success(b2)) else { Issue.record("the full round settles"); return }
        #expect(settling.update.metadata.isEmpty, "no intents are committed for a batch that will not be sent")
        #expect(pipeline.prepared == nil)

        struct Unreadable: Error {}
        var unprepared = UploadRound(batch: b1, size: 2)
        unprepared.upcoming = .failure(Unreadable())
        pipeline = UploadPipeline(progress: UploadProgress(budget: 100))
        let unpreparedSettlesNow = pipeline.sent(unprepared)
        #expect(unpreparedSettlesNow, "the read's failure surfaces after this round commits")
        guard case .round(let failing) = pipeline.settle() else { Issue.record("the round settles"); return }
        #expect(failing.failedToPrepareNext)
        #expect(pipeline.prepared == nil)
    }

    @Test("the last round settles before a batch is read now; the pass stops at its budget; nothing to settle is nothing")
    func settleBeforeReadAndBudget() throws {
        var pipeline = UploadPipeline(progress: UploadProgress(budget: 2))
        guard case .nothing = pipeline.settle() else { Issue.record("nothing unsettled"); return }
        let b1 = try Self.batch(["a", "b"])
        guard case .read = pipeline.next() else { Issue.record("read"); return }
        pipeline.took(b1)
        guard case .none = pipeline.following(UploadRound(batch: b1, size: 2)) else { Issue.record("the budget is spent"); return }
        _ = pipeline.sent(UploadRound(batch: b1, size: 2))
        guard case .bounded = pipeline.next() else { Issue.record("bounded"); return }

        pipeline = UploadPipeline(progress: UploadProgress(budget: 10))
        _ = pipeline.next()
        pipeline.took(b1)
        _ = pipeline.sent(UploadRound(batch: b1, size: 2))
        guard case .settle = pipeline.next() else { Issue.record("with nothing prepared, the last round settles before a read"); return }
        guard case .round = pipeline.settle() else { Issue.record("settled"); return }
        guard case .read = pipeline.next() else { Issue.record("then the batch is read"); return }
    }
}
