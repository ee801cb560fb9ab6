import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Retries, gating and recovery")
struct RecoveryTests {
    typealias F = SyncFixture

    @Test("retryAfter is honoured and the call succeeds once the cloud recovers")
    func retryAfterHonoured() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        fixture.cloud.script(.error(CloudError(.requestRateLimited, "slow down", retryAfter: .seconds(7))), on: .modify)
        fixture.cloud.script(.error(CloudError(.zoneBusy, "busy", retryAfter: .seconds(3))), on: .modify)
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(fixture.sleeps.get() == [.seconds(7), .seconds(3)])
        #expect(try await fixture.cloudRecords()["n"] != nil)
    }

    @Test("without retryAfter the backoff doubles, capped, with jitter")
    func backoff() async throws {
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: .seconds(1), maxDelay: .seconds(5))
        #expect((1...5).map { policy.backoff(afterAttempt: $0, jitter: 1) } == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
        #expect(policy.backoff(afterAttempt: 2, jitter: 0) == .seconds(1))

        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        for _ in 0..<3 { fixture.cloud.script(.error(CloudError(.networkFailure, "reset")), on: .modify) }
        let configuration = SyncConfiguration(deviceID: "t", retry: policy)
        let report = try await fixture.sync(a, configuration: configuration)
        #expect(report.outcome == .synced)
        #expect(fixture.sleeps.get() == [.milliseconds(500), .seconds(1), .seconds(2)], "jitter 0 gives half the exponential delay")
    }

    @Test("when the attempts run out the sync fails clearly and nothing is lost")
    func attemptsExhausted() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        for index in 0..<3 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        for _ in 0..<3 { fixture.cloud.script(.error(CloudError(.serviceUnavailable, "down", retryAfter: .seconds(1))), on: .modify) }
        let configuration = SyncConfiguration(deviceID: "t", retry: RetryPolicy(maxAttempts: 3))
        let report = try await fixture.sync(a, configuration: configuration)
        #expect(report.error?.code == .retriesExhausted)
        #expect(report.error?.message.contains("3 attempts") == true)
        #expect(try await a.pendingChangeCount() == 3, "everything stays pending")
        #expect(fixture.sleeps.get().count == 2)
        let later = try await fixture.sync(a, configuration: configuration)
        #expect(later.outcome == .synced && later.uploaded == 3)
    }

    @Test("a page with a record from a newer model version is refused whole; nothing applied, token unmoved")
    func compatibilityGating() async throws {
        let fixture = try SyncFixture()
        let newer = fixture.adapter("newer")
        await newer.save(F.note("old-style", ["rank": .int64(1)]))
        try await fixture.sync(newer, configuration: SyncConfiguration(compatibilityVersion: 1, deviceID: "n"))
        let reader = fixture.adapter("reader")
        try await fixture.sync(reader, configuration: SyncConfiguration(compatibilityVersion: 1, deviceID: "r"))
        let tokenBefore = await reader.loadZoneState()

        await newer.save(F.note("a", ["rank": .int64(2)]))
        await newer.save(F.note("v2-record", ["rank": .int64(3)]))
        try await fixture.sync(newer, configuration: SyncConfiguration(compatibilityVersion: 2, deviceID: "n"))
        let report = try await fixture.sync(reader, configuration: SyncConfiguration(compatibilityVersion: 1, deviceID: "r"))
        #expect(report.error?.code == .higherModelVersionFound)
        let message = report.error?.message ?? ""
        #expect(message.contains("model version 2") && message.contains("gateway's 1"), "\(message)")
        #expect(message.contains("Notes/a") || message.contains("Notes/v2-record"), "the message names the record: \(message)")
        #expect(await reader.values.keys.sorted() == ["old-style"], "nothing of the page was applied")
        #expect(await reader.loadZoneState() == tokenBefore, "the token did not move")

        let upgraded = try await fixture.sync(reader, configuration: SyncConfiguration(compatibilityVersion: 2, deviceID: "r"))
        #expect(upgraded.outcome == .synced)
        #expect(await reader.values.count == 3)
    }

    @Test("a deleted zone under recreate: the zone comes back with everything uploaded")
    func zoneDeletedRecreate() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        for index in 0..<4 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(a)
        fixture.cloud.script(.userDeletedZone, on: .fetchChanges)
        let report = try await fixture.sync(a, options: AdapterSyncOptions(onZoneDeleted: .recreate))
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 4)
        #expect(try await fixture.cloudRecords().count == 4)
        #expect(await a.values.count == 4)
    }

    @Test("a deleted zone under pause: the adapter stops, keeps its data, and resumes after a reset")
    func zoneDeletedPause() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        let options = AdapterSyncOptions(onZoneDeleted: .pause)
        try await fixture.sync(a, options: options)
        try await fixture.embedded.deleteZone(SyncFixture.zone)
        await a.save(F.note("m", ["rank": .int64(2)]))
        let report = try await fixture.sync(a, options: options)
        guard case .paused(let reason) = report.outcome else {
            Issue.record("expected paused, got \(report.outcome)")
            return
        }
        #expect(reason.contains("Notes") && reason.contains("Reset"))
        #expect(await a.values.count == 2, "local data untouched")
        let still = try await fixture.sync(a, options: options)
        #expect(still.outcome == report.outcome, "stays paused")
        #expect(try await !fixture.embedded.zones().contains(SyncFixture.zone), "the zone is not recreated while paused")
        try await a.resetSyncState(keepData: true)
        let resumed = try await fixture.sync(a, options: options)
        #expect(resumed.outcome == .synced && resumed.uploaded == 2)
    }

    @Test("a zone deleted and created again between two syncs is a deleted zone: pause keeps local data, recreate uploads it again, nothing is deleted locally")
    func zoneDeletedAndCreatedAgain() async throws {
        for policy in [ZoneDeletedPolicy.pause, .recreate] {
            let fixture = try SyncFixture()
            let a = fixture.adapter("a")
            for index in 0..<3 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
            let options = AdapterSyncOptions(onZoneDeleted: policy)
            try await fixture.sync(a, options: options)
            try await fixture.embedded.deleteZone(SyncFixture.zone)
            try await fixture.embedded.createZone(SyncFixture.zone)
            let other = fixture.adapter("other")
            await other.save(F.note("new", ["rank": .int64(9)]))
            try await fixture.sync(other)

            let report = try await fixture.sync(a, options: options)
            #expect(report.deletedLocally == 0, "\(policy)")
            #expect(await a.values.count == (policy == .pause ? 3 : 4), "\(policy): local data kept")
            if policy == .pause {
                guard case .paused(let reason) = report.outcome else {
                    Issue.record("expected paused, got \(report.outcome)")
                    continue
                }
                #expect(reason.contains("created again"))
            } else {
                #expect(report.outcome == .synced)
                #expect(report.zoneRecovery?.contains("deleted and created again") == true, "the operator is told")
                #expect(report.uploaded == 3)
                #expect(try await fixture.cloudRecords().count == 4)
            }
        }
    }

    @Test("under recreate, two stores of a zone deleted and created again keep each other's edits: the first one's unchanged copies do not beat the second one's edits")
    func recreatedZoneKeepsEveryStoresEdits() async throws {
        for recreatedToo in [false, true] {
            let fixture = try SyncFixture()
            let (a, b) = (fixture.adapter("a"), fixture.adapter("b"))
            for index in 0..<3 { await a.save(F.note("n\(index)", ["title": .string("v\(index)")])) }
            let options = AdapterSyncOptions(onZoneDeleted: .recreate)
            try await fixture.sync(a, options: options)
            try await fixture.sync(b, options: options)
            #expect(await b.values.count == 3)
            await a.save(F.note("n0", ["title": .string("edited in a")]))
            await b.save(F.note("n1", ["title": .string("edited in b")]))
            try await fixture.embedded.deleteZone(SyncFixture.zone)
            if recreatedToo { try await fixture.embedded.createZone(SyncFixture.zone) }

            let first = try await fixture.sync(a, options: options)
            #expect(first.outcome == .synced && first.zoneRecovery != nil)
            let second = try await fixture.sync(b, options: options)
            #expect(second.outcome == .synced && second.zoneRecovery != nil)
            try await fixture.sync(a, options: options)
            let expected: [String: String] = ["n0": "edited in a", "n1": "edited in b", "n2": "v2"]
            for store in [a, b] {
                let titles = await store.values.mapValues { $0["title"] }
                for (name, title) in expected { #expect(titles[name] == .string(title), "\(store.name), recreated: \(recreatedToo)") }
            }
            let cloud = try await fixture.cloudRecords()
            for (name, title) in expected { #expect(cloud[name]?["title"] == .string(title)) }
        }
    }

    @Test("a deleted zone under mirror: local data goes too")
    func zoneDeletedMirror() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        try await fixture.sync(a)
        try await fixture.embedded.deleteZone(SyncFixture.zone)
        let report = try await fixture.sync(a, options: AdapterSyncOptions(onZoneDeleted: .mirror))
        #expect(report.outcome == .synced)
        #expect(await a.values.isEmpty)
        #expect(try await fixture.embedded.zones().contains(SyncFixture.zone))
    }

    @Test("a zoneNotFound for a zone that exists is not taken for a deletion")
    func spuriousZoneNotFound() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        try await fixture.sync(a)
        await a.save(F.note("n", ["rank": .int64(2)]))
        fixture.cloud.script(.error(CloudError(.zoneNotFound, "lost")), on: .fetchChanges)
        let report = try await fixture.sync(a, options: AdapterSyncOptions(onZoneDeleted: .mirror))
        #expect(report.outcome == .synced)
        #expect(await a.values["n"] == ["rank": .int64(2)], "nothing was mirrored away")
        #expect(try await fixture.cloudRecords()["n"] == ["rank": .int64(2)])
    }

    @Test("an expired token: full refetch, remote deletions applied, pending edits kept and uploaded")
    func tokenExpiryReconciliation() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        for index in 0..<5 { await b.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(b)
        try await fixture.sync(a)
        // b deletes two records; a edits one of them and another one meanwhile.
        await b.delete(F.note("n0", [:]).id)
        await b.delete(F.note("n1", [:]).id)
        try await fixture.sync(b)
        await a.save(F.note("n1", ["rank": .int64(100)]))
        await a.save(F.note("n2", ["rank": .int64(200)]))
        // The tombstones age out of the cloud, so a's token expires.
        fixture.clock.withLock { $0 += 31 * 24 * 3600 }
        try await fixture.embedded.purgeExpiredTombstones()
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        let values = await a.values
        #expect(values["n0"] == nil, "a record deleted remotely and untouched locally is deleted")
        #expect(values["n1"] == ["rank": .int64(100)], "an edit beats a remote delete")
        #expect(values["n2"] == ["rank": .int64(200)])
        #expect(try await fixture.cloudRecords() == values)
        try await fixture.sync(b)
        #expect(await b.values == values)
    }

    static let cut = CloudError(.networkFailure, "the connection was reset", retryAfter: .milliseconds(10))

    @Test("a deleted zone met on the retry after a cut connection is recovered as the first time")
    func zoneDeletedAfterCut() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        for index in 0..<4 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(a)
        fixture.cloud.script(.error(Self.cut), on: .fetchChanges)
        fixture.cloud.script(.userDeletedZone, on: .fetchChanges)
        let report = try await fixture.sync(a, options: AdapterSyncOptions(onZoneDeleted: .recreate))
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 4)
        #expect(try await fixture.cloudRecords().count == 4)
    }

    @Test("an expired token met on the retry after a cut connection refetches and reconciles as the first time")
    func tokenExpiredAfterCut() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        for index in 0..<3 { await b.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        try await fixture.sync(b)
        try await fixture.sync(a)
        await b.delete(F.note("n0", [:]).id)
        try await fixture.sync(b)
        fixture.cloud.script(.error(Self.cut), on: .fetchChanges)
        fixture.cloud.script(.error(CloudError(.changeTokenExpired, "token too old")), on: .fetchChanges)
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(await a.values.keys.sorted() == ["n1", "n2"], "the remote deletion was found by the reconciliation")
    }

    @Test("a conflict met on the retry after a cut connection is merged as the first time")
    func conflictAfterCut() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["title": .string("first"), "rank": .int64(1)]))
        try await fixture.sync(a)
        await a.save(F.note("n", ["title": .string("first"), "rank": .int64(2)]))
        // The first attempt is cut; before the retry, another writer saves the record.
        fixture.cloud.script(.error(Self.cut), on: .modify)
        fixture.cloud.script(
            .concurrentWrite([.forceReplace(F.note("n", ["title": .string("from elsewhere"), "rank": .int64(1)]))]), on: .modify)
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(report.conflicts[.merged] == 1)
        #expect(try await fixture.cloudRecords()["n"] == ["title": .string("from elsewhere"), "rank": .int64(2)], "both edits survive")
        #expect(await a.values["n"] == ["title": .string("from elsewhere"), "rank": .int64(2)])
    }

    @Test("quota exceeded stops uploads of that adapter and keeps everything pending")
    func quota() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await b.save(F.note("remote", ["rank": .int64(1)]))
        try await fixture.sync(b)
        await a.save(F.note("n", ["rank": .int64(1)]))
        fixture.cloud.script(.error(CloudError(.quotaExceeded, "iCloud is full")), on: .modify)
        let report = try await fixture.sync(a)
        #expect(report.error?.code == .quotaExceeded)
        #expect(await a.values["remote"] != nil, "downloads were applied")
        #expect(try await a.pendingChangeCount() == 1)
        #expect(try await fixture.sync(a).uploaded == 1)
    }

    @Test("a rejected login stops the whole sync with an actionable message")
    func notAuthenticated() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        fixture.cloud.script(.error(CloudError(.notAuthenticated, "the web auth token expired")), on: .fetchChanges)
        let report = try await fixture.synchronizer([a, b]).sync()
        #expect(report.adapters.map(\.error?.code) == [.notAuthenticated, .notAuthenticated])
        #expect(report.adapters[0].error?.message.contains("sign in again") == true)
        #expect(fixture.cloud.injectedFaults.count == 1, "the second adapter did not even try")
    }

    @Test("a lost response does not duplicate or lose anything")
    func lostResponse() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["rank": .int64(1)]))
        fixture.cloud.script(.lostResponse, on: .modify)
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(try await fixture.cloudRecords() == ["n": ["rank": .int64(1)]])
        #expect(try await !a.hasChanges())
    }
}
