import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// Uploads whose answer never arrives, and refetches that are interrupted: the cases where a
/// replica cannot know what the cloud already holds.
@Suite("Unacknowledged writes and interrupted refetches")
struct UnacknowledgedWriteTests {
    typealias F = SyncFixture

    /// The fixture's device id with fewer attempts: a gateway's device id never changes.
    static let fewAttempts = SyncConfiguration(deviceID: "test", retry: RetryPolicy(maxAttempts: 2))

    /// Syncs `adapter` with its save applied by the cloud but the answer lost, and the retry
    /// failing too, so the sync gives up with the change still pending.
    static func syncLosingTheAnswer(_ adapter: InMemoryAdapter, in fixture: SyncFixture, options: AdapterSyncOptions) async throws
        -> AdapterSyncReport
    {
        fixture.cloud.script(.lostResponse, on: .modify)
        fixture.cloud.script(.error(CloudError(.networkFailure, "reset")), on: .modify)
        return try await fixture.sync(adapter, options: options, configuration: fewAttempts)
    }

    @Test("a save whose answer was lost, then overwritten by another replica, does not beat a newer local edit")
    func lostAnswerThenOtherWriter() async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: .server))
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await a.save(F.note("r", ["f0": .int64(1)]))
        // The create is saved but its answer lost; the retry fails too, so the sync gives up.
        let failed = try await Self.syncLosingTheAnswer(a, in: fixture, options: options)
        #expect(failed.error?.code == .retriesExhausted)
        #expect(try await fixture.cloudRecords()["r"] == ["f0": .int64(1)], "the cloud did save it")

        // Another replica writes on top, so the cloud's version no longer carries a's stamp.
        try await fixture.sync(b, options: options)
        await b.save(F.note("r", ["f0": .int64(1), "f1": .string("from b")]))
        try await fixture.sync(b, options: options)

        await a.save(F.note("r", ["f0": .int64(2)]))
        let report = try await fixture.sync(a, options: options)
        #expect(report.outcome == .synced)
        let expected: [String: FieldValue] = ["f0": .int64(2), "f1": .string("from b")]
        #expect(try await fixture.cloudRecords()["r"] == expected)
        #expect(await a.values["r"] == expected)
    }

    @Test(
        "an edit whose answer was lost, then overwritten twice by replicas that saw it, is not sent again over them, whatever the policy prefers",
        arguments: [MergeSettings(policy: .merge, prefers: .client), MergeSettings(policy: .client)])
    func lostAnswerSuperseded(settings: MergeSettings) async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: settings)
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        let c = fixture.adapter("c")
        await a.save(F.note("r", ["title": .string("one")]))
        try await fixture.sync(a, options: options)
        try await fixture.sync(b, options: options)
        try await fixture.sync(c, options: options)

        // a's edit is saved but its answer lost: a keeps it pending.
        await a.save(F.note("r", ["title": .string("from a")]))
        #expect(try await Self.syncLosingTheAnswer(a, in: fixture, options: options).error?.code == .retriesExhausted)

        // b sees a's edit and overwrites it; c sees b's and overwrites that.
        try await fixture.sync(b, options: options)
        await b.save(F.note("r", ["title": .string("from b")]))
        try await fixture.sync(b, options: options)
        try await fixture.sync(c, options: options)
        await c.save(F.note("r", ["title": .string("from c")]))
        try await fixture.sync(c, options: options)

        let report = try await fixture.sync(a, options: options)
        #expect(report.outcome == .synced)
        #expect(try await fixture.cloudRecords()["r"] == ["title": .string("from c")], "a's old edit did not come back")
        #expect(await a.values["r"] == ["title": .string("from c")])
    }

    @Test("a value the zone superseded still wins when the store writes it again as a new edit on top of the newer one")
    func revertIsAnEdit() async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: .server))
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await a.save(F.note("r", ["title": .string("one")]))
        try await fixture.sync(a, options: options)
        try await fixture.sync(b, options: options)
        await b.save(F.note("r", ["title": .string("two")]))
        try await fixture.sync(b, options: options)
        try await fixture.sync(a, options: options)
        // a puts the old value back after seeing the new one: an edit, not a stale retry.
        await a.save(F.note("r", ["title": .string("one")]))
        let report = try await fixture.sync(a, options: options)
        #expect(report.conflictCount == 0)
        #expect(try await fixture.cloudRecords()["r"] == ["title": .string("one")])
    }

    @Test("a replace whose answer was lost is recognised as the replica's own version")
    func lostAnswerOwnVersion() async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: MergeSettings(policy: .server))
        let a = fixture.adapter("a")
        await a.save(F.note("r", ["f0": .int64(1)]))
        try await fixture.sync(a, options: options)
        await a.save(F.note("r", ["f0": .int64(2)]))
        _ = try await Self.syncLosingTheAnswer(a, in: fixture, options: options)
        await a.save(F.note("r", ["f0": .int64(3)]))
        let report = try await fixture.sync(a, options: options)
        #expect(report.outcome == .synced)
        #expect(report.conflictCount == 0, "its own version is no conflict, even under the server policy")
        #expect(try await fixture.cloudRecords()["r"] == ["f0": .int64(3)])
    }

    @Test("an interrupted refetch after an expired token starts over and still reconciles deletions")
    func interruptedRefetch() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        for index in 0..<10 { await b.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(b)
        let small = SyncConfiguration(deviceID: "test", fetchLimit: 3, retry: RetryPolicy(maxAttempts: 1))
        try await fixture.sync(a, configuration: small)
        await b.delete(F.note("n0", [:]).id)
        try await fixture.sync(b)
        fixture.clock.withLock { $0 += 31 * 24 * 3600 }
        try await fixture.embedded.purgeExpiredTombstones()

        // Calls: the expired fetch, the refetch's first page, then the second page fails.
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.passThrough, on: .fetchChanges)
        fixture.cloud.script(.error(CloudError(.serviceUnavailable, "down")), on: .fetchChanges)
        let interrupted = try await fixture.sync(a, configuration: small)
        #expect(interrupted.error?.code == .retriesExhausted)
        let state = try ZoneSyncState(decoding: await a.loadZoneState())
        #expect(state.refetching && state.token == nil, "the refetch is remembered, with no token")
        #expect(await a.values["n0"] != nil, "not reconciled yet")

        let resumed = try await fixture.sync(a, configuration: small)
        #expect(resumed.outcome == .synced)
        #expect(await a.values["n0"] == nil, "the remote deletion was reconciled")
        #expect(await a.values == b.values)
        let after = try ZoneSyncState(decoding: await a.loadZoneState())
        #expect(!after.refetching && after.token != nil)
    }
}
