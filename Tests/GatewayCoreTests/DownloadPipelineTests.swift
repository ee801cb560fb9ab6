import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// The download fetches, opens and looks up the next page while the store applies the current
/// one. These cases check that reading ahead changes nothing a sequential download would do.
@Suite("Download pipeline")
struct DownloadPipelineTests {
    typealias F = SyncFixture

    static let pagesOfThree = SyncConfiguration(deviceID: "test", fetchLimit: 3, retry: RetryPolicy(maxAttempts: 1))

    /// `count` notes uploaded from `b` (six: two pages of three) for `a`, which has not synced yet.
    static func notesInTheCloud(count: Int = 6) async throws -> (SyncFixture, InMemoryAdapter, InMemoryAdapter) {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        for index in 0..<count { await b.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(b)
        return (fixture, a, b)
    }

    @Test("an adapter's own fetch limit sets its pages; without one, the gateway's does")
    func adapterFetchLimit() async throws {
        for (limit, pages) in [(Int?.none, [3, 3]), (2, [2, 2, 2])] {
            let (fixture, a, b) = try await Self.notesInTheCloud()
            let applied = LockedValue<[Int]>([])
            let synchronizer = fixture.synchronizer(
                [a], options: AdapterSyncOptions(fetchLimit: limit), configuration: Self.pagesOfThree,
                observer: { event in
                    if case .didFetch(_, let written, _) = event { applied.withLock { $0.append(written) } }
                })
            #expect(try await synchronizer.sync().adapters[0].outcome == .synced)
            #expect(applied.get() == pages)
            #expect(await a.values == b.values)
        }
    }

    @Test("a record the feed delivers again in the next page is seen as synced, not written twice")
    func redeliveredRecords() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud()

        // The second page carries the first page's records again, while that page is being
        // applied (slowly): their local state must be read after it commits.
        await a.delayApplies(by: .milliseconds(100))
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.redeliverPrevious, on: .fetchChanges)
        let report = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(report.outcome == .synced)
        #expect(report.downloaded == 6, "the redelivered records were already applied with the same change tag")
        #expect(report.conflictCount == 0)
        #expect(await a.values == b.values)
    }

    @Test("a redelivered record with a local edit is merged against what the previous page applied")
    func redeliveredRecordWithLocalEdit() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud()
        // a holds its own, unsynced version of n1: the first page meets it as a conflict.
        await a.save(F.note("n1", ["rank": .int64(100)]))
        await a.delayApplies(by: .milliseconds(100))

        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.redeliverPrevious, on: .fetchChanges)
        // The local version was never synced: join_prefers, not the merge policy, decides.
        let localWins = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: .client), joinPrefers: .store)
        let report = try await fixture.sync(a, options: localWins, configuration: Self.pagesOfThree)
        #expect(report.outcome == .synced)
        #expect(report.conflictCount == 1, "the second delivery of n1 finds it already merged")
        try await fixture.sync(b)
        #expect(await a.values == b.values)
        #expect(await a.values["n1"] == ["rank": .int64(100)], "the local edit won and was uploaded")
    }

    @Test("a conflict in a page merged ahead is resolved, counted and reported once, when its page is applied")
    func conflictMergedAhead() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud()
        // n4 is in the second page, merged while the first one is (slowly) applied.
        await a.save(F.note("n4", ["rank": .int64(400)]))
        await a.delayApplies(by: .milliseconds(100))

        let events = LockedValue<[SyncEvent]>([])
        // The local version was never synced: join_prefers, not the merge policy, decides.
        let localWins = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: .client), joinPrefers: .store)
        let synchronizer = fixture.synchronizer(
            [a], options: localWins, configuration: Self.pagesOfThree, observer: { event in events.withLock { $0.append(event) } })
        let report = try await synchronizer.sync().adapters[0]
        #expect(report.outcome == .synced)
        #expect(report.conflicts == [.localWon: 1])
        let trail = events.get().compactMap { event -> String? in
            switch event {
            case .conflict(_, let id, _, let outcome): "conflict \(id.recordName) \(outcome)"
            case .didFetch(_, let written, _): "applied \(written)"
            default: nil
            }
        }
        #expect(trail.prefix(3) == ["applied 3", "conflict n4 localWon", "applied 2"], "the conflict is reported with its own page")
        #expect(await a.values["n4"] == ["rank": .int64(400)])

        try await fixture.sync(b)
        #expect(await b.values["n4"] == ["rank": .int64(400)], "the local edit was uploaded")
        let again = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(again.downloaded == 0 && again.conflictCount == 0, "the token moved past both pages")
        #expect(await a.values == b.values)
    }

    @Test("a next page that fails to fetch while one is applied leaves that page committed")
    func prefetchFailure() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud()

        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.error(CloudError(.serviceUnavailable, "down")), on: .fetchChanges)
        let interrupted = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(interrupted.error?.code == .retriesExhausted)
        #expect(interrupted.downloaded == 3)
        #expect(await a.values.count == 3, "the first page is committed")
        let state = try ZoneSyncState(decoding: await a.loadZoneState())
        #expect(state.token != nil, "with its token")

        let resumed = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(resumed.outcome == .synced)
        #expect(resumed.downloaded == 3, "the rest, from where the first page left off")
        #expect(await a.values == b.values)
    }

    @Test("a page fetched two ahead that fails surfaces only after the pages before it are committed")
    func fetchAheadFailure() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud(count: 9)
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.error(CloudError(.serviceUnavailable, "down")), on: .fetchChanges)
        let interrupted = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(interrupted.error?.code == .retriesExhausted)
        #expect(interrupted.downloaded == 6, "the two pages before the failed one are applied")
        #expect(await a.values.count == 6)

        let resumed = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(resumed.outcome == .synced)
        #expect(resumed.downloaded == 3)
        #expect(await a.values == b.values)
    }

    @Test("a token that expires on a page fetched ahead restarts the feed from the beginning and converges")
    func fetchAheadExpiry() async throws {
        let (fixture, a, b) = try await Self.notesInTheCloud(count: 9)
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.error(CloudError(.changeTokenExpired, "expired")), on: .fetchChanges)
        let report = try await fixture.sync(a, configuration: Self.pagesOfThree)
        #expect(report.outcome == .synced)
        #expect(await a.values == b.values)
        #expect(report.downloaded == 9, "the refetch finds the six already applied unchanged and writes the rest")
        let state = try ZoneSyncState(decoding: await a.loadZoneState())
        #expect(state.token != nil && !state.refetching)
    }
}
