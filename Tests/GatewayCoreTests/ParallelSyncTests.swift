import Foundation
@testable import GatewayCore
import GatewayTesting
import Testing

@Suite("Parallel sync")
struct ParallelSyncTests {
    typealias F = SyncFixture

    static let parallel = SyncConfiguration(deviceID: "test", fetchLimit: 30, parallelism: 2)

    static func fill(_ adapter: InMemoryAdapter, _ count: Int, prefix: String) async {
        for index in 0..<count {
            let id = RecordID(recordName: "\(prefix)\(index)", zoneID: adapter.zoneID)
            await adapter.save(Record(id: id, recordType: "Note", fields: ["title": .string("\(prefix) \(index)"), "rank": .int64(Int64(index))]))
        }
    }

    @Test("one sync streams a store's upload into a sibling on the same zone while it is still uploading")
    func streamsToSibling() async throws {
        let fixture = try SyncFixture()
        let source = fixture.adapter("source")
        let target = fixture.adapter("target")
        await Self.fill(source, 400, prefix: "n")
        // Twenty batches, each read after 10 ms: the upload takes a while, as a real store's does.
        await source.delayPendingReads(by: .milliseconds(10))
        let log = LockedValue<[SyncEvent]>([])
        let report = try await fixture.synchronizer(
            [source, target], options: AdapterSyncOptions(batchSize: 20), configuration: Self.parallel,
            observer: { event in log.withLock { $0.append(event) } }
        ).sync()
        #expect(report.adapters.map(\.adapter) == ["source", "target"], "reports keep the adapters' order")
        #expect(report.adapters.map(\.outcome) == [.synced, .synced])
        #expect(report.adapters[0].uploaded == 400)
        #expect(report.adapters[1].downloaded == 400, "every record the sibling sent arrives in the same sync")
        #expect(await target.values == source.values)
        #expect(try await !target.hasChanges())
        #expect(try await !source.hasChanges())

        let events = log.get()
        let lastUpload = events.lastIndex { if case .didUpload("source", _, _, _) = $0 { true } else { false } }
        let firstDownload = events.firstIndex { if case .didFetch("target", let written, _) = $0 { written > 0 } else { false } }
        #expect(firstDownload != nil && lastUpload != nil && firstDownload! < lastUpload!, "rows arrived before the upload ended")
        #expect(events.filter { if case .adapterStarted = $0 { true } else { false } }.count == 2, "one start per adapter")
        #expect(events.filter { if case .adapterFinished = $0 { true } else { false } }.count == 2, "one finish per adapter")

        let quiet = try await fixture.synchronizer([source, target], configuration: Self.parallel).sync()
        #expect(quiet.adapters.allSatisfy { $0.downloaded == 0 && $0.uploaded == 0 })
    }

    @Test("more adapters than slots: those done before a later sibling started sync again after its upload, so one sync converges the zone")
    func laterSiblingWithoutASlot() async throws {
        let fixture = try SyncFixture()
        let (a, b, c) = (fixture.adapter("a"), fixture.adapter("b"), fixture.adapter("c"))
        await Self.fill(c, 5, prefix: "c")
        await Self.fill(a, 3, prefix: "a")
        let report = try await fixture.synchronizer([a, b, c], configuration: Self.parallel).sync()
        #expect(report.succeeded)
        for adapter in [a, b, c] {
            #expect(await adapter.records.count == 8, "\(adapter.name) holds every record after one sync")
        }
        let quiet = try await fixture.synchronizer([a, b, c], configuration: Self.parallel).sync()
        #expect(quiet.adapters.allSatisfy { $0.downloaded == 0 && $0.uploaded == 0 }, "\(quiet)")
    }

    @Test("two stores uploading to one zone at once both end with everything")
    func bothUpload() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await Self.fill(a, 150, prefix: "a")
        await Self.fill(b, 150, prefix: "b")
        await a.delayPendingReads(by: .milliseconds(5))
        await b.delayPendingReads(by: .milliseconds(5))
        let report = try await fixture.synchronizer([a, b], options: AdapterSyncOptions(batchSize: 25), configuration: Self.parallel).sync()
        #expect(report.adapters.map(\.outcome) == [.synced, .synced])
        #expect(report.adapters.map(\.uploaded) == [150, 150])
        #expect(report.adapters.map(\.downloaded) == [150, 150])
        #expect(await a.values.count == 300)
        #expect(await a.values == b.values)
        #expect(try await fixture.cloudRecords() == a.values)
    }

    @Test("a store seeded like another joins the zone while the other fills it: every batch meets conflicts, each settled by its merge, and the sync completes")
    func seededAlikeJoinAtOnce() async throws {
        let fixture = try SyncFixture()
        let (a, b) = (fixture.adapter("a"), fixture.adapter("b"))
        await Self.fill(a, 60, prefix: "n")
        await Self.fill(b, 60, prefix: "n")
        // b has downloaded the empty zone; a fills it before b reads its first batch.
        let synchronizer = fixture.synchronizer([a], options: AdapterSyncOptions(batchSize: 5))
        let once = LockedValue(false)
        await b.runBeforePendingReads {
            guard !once.withLock({ let first = !$0; $0 = true; return first }) else { return }
            _ = try? await synchronizer.sync()
        }
        let report = try await fixture.sync(b, options: AdapterSyncOptions(batchSize: 5))
        #expect(report.outcome == .synced, "\(report)")
        #expect(try await b.pendingChangeCount() == 0)
        #expect(await b.values == a.values)
        #expect(try await fixture.cloudRecords() == a.values)
    }

    @Test("adapters on different zones do not wait for each other; a failing one fails alone")
    func separateZones() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b", zone: ZoneID(zoneName: "Other"))
        let c = fixture.adapter("c")
        await Self.fill(a, 40, prefix: "a")
        await Self.fill(b, 40, prefix: "b")
        await c.save(F.note("bad", ["title": .string("x")]))
        await c.failNextTransaction(with: InMemoryAdapterError(message: "disk full"))
        let log = LockedValue<[SyncEvent]>([])
        let report = try await fixture.synchronizer(
            [a, b, c], configuration: Self.parallel, observer: { event in log.withLock { $0.append(event) } }
        ).sync()
        #expect(report.adapters.map(\.adapter) == ["a", "b", "c"])
        #expect(report.adapters[0].outcome == .synced && report.adapters[1].outcome == .synced)
        #expect(report.adapters[2].error?.code == .adapterFailed)
        #expect(report.adapters[0].uploaded == 40 && report.adapters[1].uploaded == 40)
        #expect(try await fixture.cloudRecords(zone: b.zoneID).count == 40)
        // b's zone has no sibling: it made exactly one pass (one zone-state load → one fetch).
        let bFetches = log.get().filter { if case .willFetch("b") = $0 { true } else { false } }.count
        #expect(bFetches == 1)
        let again = try await fixture.synchronizer([a, b, c], configuration: Self.parallel).sync()
        #expect(again.adapters.map(\.outcome) == [.synced, .synced, .synced])
        #expect(await c.values.count == 41, "c, fixed, downloads a's records and uploads its own")
        // Whether a saw c's upload in that sync depends on whether c started before a finished
        // (as in an ordered sync, where a, before c, does not): the next sync settles it.
        _ = try await fixture.synchronizer([a, b, c], configuration: Self.parallel).sync()
        #expect(await c.values == a.values)
    }

    @Test("a rejected login fails every adapter, and a parallel sync with one adapter runs it as an ordered one")
    func accountCheckAndSingleAdapter() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await Self.fill(a, 10, prefix: "a")
        fixture.cloud.script(.error(CloudError(.notAuthenticated, "sign in")), on: .checkAccount)
        let refused = try await fixture.synchronizer([a, b], configuration: Self.parallel).sync()
        #expect(refused.adapters.map(\.error?.code) == [.notAuthenticated, .notAuthenticated])
        let one = try await fixture.synchronizer([a], configuration: Self.parallel).sync()
        #expect(one.adapters.map(\.uploaded) == [10])
    }
}

@Suite("Zone activity")
struct ZoneActivityTests {
    static let zone = ZoneID(zoneName: "Notes")

    /// Returns once `count` waits are parked in `activity`.
    static func parked(_ count: Int, in activity: ZoneActivity) async {
        while activity.parkedWaits != count { await Task.yield() }
    }

    @Test("a waiting adapter wakes for a sibling's upload, ends when no sibling is busy, and ignores other zones")
    func waking() async throws {
        let activity = ZoneActivity(adapters: [("a", Self.zone), ("b", Self.zone), ("c", ZoneID(zoneName: "Other"))])
        #expect(await activity.waitForSiblings(of: "a", after: 0) == false, "nobody busy: nothing to wait for")
        activity.startedPass("b")
        activity.startedPass("c")
        async let woken = activity.waitForSiblings(of: "a", after: activity.siblingUploads(of: "a"))
        await Self.parked(1, in: activity)
        activity.uploaded(50, by: "c")  // another zone: a keeps waiting
        activity.uploaded(50, by: "a")  // its own upload: a keeps waiting
        await Self.parked(1, in: activity)
        activity.uploaded(20, by: "b")
        #expect(await woken == true)
        #expect(activity.siblingUploads(of: "a") == 20)

        async let page = activity.waitForSiblings(of: "a", after: 20, enough: 30)
        await Self.parked(1, in: activity)
        activity.uploaded(20, by: "b")  // not a page yet: a keeps waiting
        await Self.parked(1, in: activity)
        activity.uploaded(20, by: "b")
        #expect(await page == true, "a page's worth arrived")

        async let rest = activity.waitForSiblings(of: "a", after: 60, enough: 30)
        await Self.parked(1, in: activity)
        activity.uploaded(5, by: "b")
        activity.finishedPass("b")
        #expect(await rest == true, "the sibling finished: what it uploaded last is downloaded, page or not")

        async let ended = activity.waitForSiblings(of: "a", after: 65, enough: 30)
        #expect(await ended == false, "no sibling busy and nothing new")
        #expect(await activity.waitForSiblings(of: "a", after: 0, enough: 1000) == true, "uploads not seen yet are returned at once when no sibling is busy")
    }

    @Test("an adapter waits for an earlier sibling whose pass has not started yet, never for a later one")
    func earlierSiblingNotStarted() async throws {
        let activity = ZoneActivity(adapters: [("a", Self.zone), ("b", Self.zone), ("c", Self.zone)])
        // b finished its pass before a's task ran: a comes first in the sync's order, so b waits.
        activity.startedPass("b")
        activity.finishedPass("b")
        async let woken = activity.waitForSiblings(of: "b", after: 0)
        await Self.parked(1, in: activity)
        activity.startedPass("a")
        activity.uploaded(5, by: "a")
        activity.finishedPass("a")
        #expect(await woken == true, "what the earlier sibling uploaded is downloaded")
        // c, later and not started, is not waited for: it may need the slot b holds.
        #expect(await activity.waitForSiblings(of: "b", after: 5) == false)
        // A sibling stopped before its turn never starts: it counts as done.
        let stopped = ZoneActivity(adapters: [("a", Self.zone), ("b", Self.zone)])
        stopped.finishedPass("a")
        #expect(await stopped.waitForSiblings(of: "b", after: 0) == false)
    }

    @Test("cancelling a wait ends it")
    func cancelling() async throws {
        let activity = ZoneActivity(adapters: [("a", Self.zone), ("b", Self.zone)])
        activity.startedPass("b")
        let waiting = Task { await activity.waitForSiblings(of: "a", after: 0) }
        await Self.parked(1, in: activity)
        waiting.cancel()
        #expect(await waiting.value == false)
    }
}
