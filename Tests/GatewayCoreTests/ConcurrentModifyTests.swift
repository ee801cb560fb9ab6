import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// Upload batches sent as several `modify` requests side by side (``CloudLimits/modifyRequestsInFlight``):
/// every record arrives once, a failing request is retried alone, and a lost answer of one
/// request is recognised as the gateway's own write.
@Suite("Modify requests in flight")
struct ConcurrentModifyTests {
    static func notes(_ count: Int, in adapter: InMemoryAdapter) async {
        for index in 0..<count { await adapter.save(SyncFixture.note("n\(index)", ["title": .string("note \(index)"), "rank": .int64(Int64(index))])) }
    }

    @Test("a batch of 120 goes as two requests; the one that meets a transient failure is retried alone")
    func transientFailureRetriesOneRequest() async throws {
        // The server refuses requests over 60: a batch of 120 sent whole would shrink.
        let fixture = try SyncFixture(plan: FaultInjectingCloud.Plan(operationLimit: 60), limits: CloudLimits(modifyRequestsInFlight: 2))
        let adapter = fixture.adapter("a")
        await Self.notes(120, in: adapter)
        fixture.cloud.script(.error(CloudError(.serviceUnavailable, "scripted", retryAfter: .seconds(1))), on: .modify)
        let retries = LockedValue(0)
        let report = try await fixture.synchronizer([adapter]) { event in
            if case .retrying = event { retries.withLock { $0 += 1 } }
            if case .batchSizeChanged = event { Issue.record("the batch went as one request") }
        }.sync().adapters[0]
        #expect(report.error == nil)
        #expect(report.uploaded == 120)
        #expect(retries.get() == 1, "only the failed request is sent again")
        let cloud = try await fixture.cloudRecords()
        #expect(cloud.count == 120)
        #expect(cloud["n7"] == ["title": .string("note 7"), "rank": .int64(7)])
        #expect(try await !adapter.hasChanges())
        // Nothing was sent twice: each record's first save is its only version.
        let changes = try await fixture.embedded.fetchChanges(in: SyncFixture.zone, since: nil, limit: 2_000)
        #expect(changes.modified.count == 120)
    }

    @Test("when one request's answer is lost, the next sync recognises those records as its own")
    func lostAnswerOfOneRequest() async throws {
        let fixture = try SyncFixture(limits: CloudLimits(modifyRequestsInFlight: 2))
        let adapter = fixture.adapter("a")
        await Self.notes(100, in: adapter)
        fixture.cloud.script(.lostResponse, on: .modify)
        let first = try await fixture.synchronizer([adapter]).sync().adapters[0]
        #expect(first.error == nil)
        _ = try await fixture.sync(adapter)
        #expect(try await fixture.cloudRecords().count == 100)
        #expect(try await !adapter.hasChanges(), "nothing stays pending")
        #expect(try await adapter.failedRecords().isEmpty)
        #expect(await adapter.values["n42"] == ["title": .string("note 42"), "rank": .int64(42)])
    }

    @Test(
        "batches split only when worth it: small batches and clouds in the process send one request",
        arguments: [(2, 30, 29, true), (1, 150, 149, true), (2, 150, 75, false)])
    func splitsOnlyWhenWorthIt(inFlight: Int, count: Int, serverLimit: Int, oneRequest: Bool) async throws {
        // A server refusing requests over `serverLimit` shows whether the batch went whole.
        let fixture = try SyncFixture(plan: FaultInjectingCloud.Plan(operationLimit: serverLimit), limits: CloudLimits(modifyRequestsInFlight: inFlight))
        let adapter = fixture.adapter("a")
        await Self.notes(count, in: adapter)
        let shrank = LockedValue(false)
        let report = try await fixture.synchronizer([adapter]) { event in
            if case .batchSizeChanged = event { shrank.set(true) }
        }.sync().adapters[0]
        #expect(report.uploaded == count)
        #expect(shrank.get() == oneRequest, "a single request of \(count) meets the server's limit of \(serverLimit)")
        #expect(try await fixture.cloudRecords().count == count)
    }
}
