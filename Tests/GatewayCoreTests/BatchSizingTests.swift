import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Upload batch sizing")
struct BatchSizingTests {
    typealias F = SyncFixture
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("halving goes down to 1 and never below")
    func halving() {
        var state = ZoneSyncState()
        var sizes: [Int] = []
        for _ in 0..<10 {
            state.recordLimitExceeded(size: state.effectiveBatchSize(configured: 200), configured: 200, now: Self.now)
            sizes.append(state.effectiveBatchSize(configured: 200))
        }
        #expect(sizes == [100, 50, 25, 12, 6, 3, 1, 1, 1, 1])
        #expect(state.failedBatchSize == 1)
    }

    @Test("regrowth adds 10% (at least 1) per clean batch up to the configured size")
    func regrowth() {
        var state = ZoneSyncState(batchSize: 1)
        var sizes: [Int] = []
        for _ in 0..<80 {
            state.recordCleanBatch(configured: 200, now: Self.now)
            sizes.append(state.effectiveBatchSize(configured: 200))
        }
        #expect(Array(sizes.prefix(12)) == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])
        #expect(sizes.last == 200)
        #expect(state.batchSize == nil, "at the configured size nothing needs storing")
        #expect(zip(sizes, sizes.dropFirst()).allSatisfy { $0 <= $1 && $1 <= 200 })
    }

    @Test("growth stays below the smallest size that failed, for an hour")
    func ceiling() {
        var state = ZoneSyncState()
        state.recordLimitExceeded(size: 200, configured: 200, now: Self.now)
        state.recordLimitExceeded(size: 100, configured: 200, now: Self.now)
        #expect(state.effectiveBatchSize(configured: 200) == 50)
        for _ in 0..<30 { state.recordCleanBatch(configured: 200, now: Self.now.addingTimeInterval(60)) }
        #expect(state.effectiveBatchSize(configured: 200) == 99)
        state.recordCleanBatch(configured: 200, now: Self.now.addingTimeInterval(3601))
        #expect(state.failedBatchSize == nil)
        for _ in 0..<30 { state.recordCleanBatch(configured: 200, now: Self.now.addingTimeInterval(3700)) }
        #expect(state.effectiveBatchSize(configured: 200) == 200)
    }

    @Test("a lower configured size wins over a stored larger one")
    func configuredCap() {
        #expect(ZoneSyncState(batchSize: 150).effectiveBatchSize(configured: 100) == 100)
        #expect(ZoneSyncState(batchSize: 0).effectiveBatchSize(configured: 100) == 1)
    }

    @Test("a server with a hidden limit: batches halve until they pass, everything arrives, the size persists")
    func hiddenLimit() async throws {
        let fixture = try SyncFixture(plan: .init(operationLimit: 7))
        let a = fixture.adapter("a")
        for index in 0..<100 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 100)
        #expect(try await fixture.cloudRecords().count == 100)
        #expect(report.batchSize <= 7)
        let stored = try ZoneSyncState(decoding: await a.loadZoneState())
        #expect(stored.batchSize == report.batchSize, "the batch size is persisted in the zone state")
        #expect(stored.failedBatchSize.map { $0 > 7 } == true)

        // A new synchronizer (a restart) starts from the persisted size, not from 200.
        for index in 0..<20 { await a.save(F.note("m\(index)", ["rank": .int64(Int64(index))])) }
        let faultsBefore = fixture.cloud.injectedFaults.count
        let again = try await fixture.sync(a)
        #expect(again.uploaded == 20)
        #expect(fixture.cloud.injectedFaults.count == faultsBefore, "no request over the limit after the restart")
    }

    @Test("when even one record is too much, it fails alone and stays pending")
    func singleRecordOverLimit() async throws {
        let fixture = try SyncFixture(limits: CloudLimits(maxRecordSize: 500, maxRequestSize: 1_000))
        // Binary fields inline, as with force_data: true, so the records really are too large.
        let inline = AdapterSyncOptions(assets: AssetSettings(forceData: true))
        let a = fixture.adapter("a")
        await a.save(F.note("big", ["blob": .bytes(Data(count: 900))]))
        await a.save(F.note("huge", ["blob": .bytes(Data(count: 5_000))]))
        await a.save(F.note("small", ["rank": .int64(1)]))
        let report = try await fixture.sync(a, options: inline)
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 1)
        #expect(report.failedRecords == 2)
        let failed = try await a.failedRecords()
        #expect(Set(failed.map(\.recordID.recordName)) == ["big", "huge"])
        #expect(failed.allSatisfy { $0.failure.code == "limitExceeded" })
        #expect(failed.allSatisfy { $0.failure.message.contains("its largest field is blob") })
        #expect(failed.allSatisfy { $0.failure.message.contains("send it as an asset (turn force_data off, or list it in assets)") })
        #expect(try await a.pendingChangeCount() == 2, "failed records are kept pending")
        let quiet = try await fixture.sync(a, options: inline)
        #expect(quiet.failedRecords == 0, "failed records are not retried until they change")

        await a.save(F.note("big", ["blob": .bytes(Data(count: 100))]))
        let retried = try await fixture.sync(a, options: inline)
        #expect(retried.uploaded == 1)
        #expect(try await a.failedRecords().map(\.recordID.recordName) == ["huge"])
        try await a.retryFailedRecords()
        let manual = try await fixture.sync(a, options: inline)
        #expect(manual.failedRecords == 1, "a retried record that still fails is marked again")
    }
}
