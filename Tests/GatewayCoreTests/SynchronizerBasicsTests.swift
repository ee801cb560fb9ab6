import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Synchronizer basics")
struct SynchronizerBasicsTests {
    typealias F = SyncFixture

    @Test("two adapters on one zone converge; a second sync has nothing to do")
    func twoAdapters() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        for index in 0..<5 {
            await a.save(F.note("n\(index)", ["title": .string("note \(index)"), "rank": .int64(Int64(index))]))
        }
        let first = try await fixture.sync(a)
        #expect(first.outcome == .synced)
        #expect(first.uploaded == 5)
        let pulled = try await fixture.sync(b)
        #expect(pulled.downloaded == 5)
        #expect(await b.values == a.values)

        await b.save(F.note("n1", ["title": .string("edited by b"), "rank": .int64(1)]))
        await b.delete(F.note("n2", [:]).id)
        let pushed = try await fixture.sync(b)
        #expect(pushed.uploaded == 1 && pushed.deletedRemotely == 1)
        let merged = try await fixture.sync(a)
        #expect(merged.downloaded == 1 && merged.deletedLocally == 1)
        #expect(await a.values == b.values)
        #expect(try await fixture.cloudRecords() == a.values)

        let quiet = try await fixture.sync(a)
        #expect(quiet.downloaded == 0 && quiet.uploaded == 0 && quiet.deletedLocally == 0)
        #expect(try await !a.hasChanges())
    }

    @Test("a failed account check fails every adapter of the sync before anything is sent; the next sync goes on")
    func accountCheck() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await a.save(F.note("n1", ["title": .string("one")]))
        fixture.cloud.script(.error(CloudError(.notAuthenticated, "sign in at https://example.invalid")), on: .checkAccount)
        let refused = try await fixture.synchronizer([a, b]).sync()
        #expect(refused.adapters.map(\.error?.code) == [.notAuthenticated, .notAuthenticated])
        #expect(refused.adapters[0].error?.message.contains("https://example.invalid") == true)
        #expect(try await fixture.embedded.zones().isEmpty, "nothing was sent, not even the zone")
        #expect(try await a.hasChanges())
        fixture.cloud.script(.error(CloudError(.permissionFailure, "no access")), on: .checkAccount)
        let denied = try await fixture.synchronizer([a]).sync()
        #expect(denied.adapters[0].error?.code == .cloudFailed)
        fixture.cloud.script(.error(CloudError(.networkFailure, "offline")), on: .checkAccount)
        let retried = try await fixture.synchronizer([a]).sync()
        #expect(retried.adapters[0].outcome == .synced, "a transient failure of the check is retried")
        let synced = try await fixture.synchronizer([a, b]).sync()
        #expect(synced.adapters.map(\.outcome) == [.synced, .synced])
        #expect(await b.values == a.values)
    }

    @Test("downloads mark the records the store knew nothing of, so an adapter may insert them outright")
    func absentLocallyHint() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await a.save(F.note("1", ["title": .string("one")]))
        await a.save(F.note("2", ["title": .string("two")]))
        try await fixture.sync(a)
        try await fixture.sync(b)
        #expect(Set(await b.appliedAsAbsent.map(\.recordName)) == ["1", "2"])
        await a.save(F.note("2", ["title": .string("two, edited")]))
        await a.save(F.note("3", ["title": .string("three")]))
        await b.save(F.note("4", ["title": .string("four, only in b")]))
        try await fixture.sync(a)
        try await fixture.sync(b)
        #expect(await b.appliedAsAbsent.map(\.recordName).sorted() == ["1", "2", "3"], "record 2 is known to b by now")
        #expect(await b.values["2"] == ["title": .string("two, edited")])
    }

    @Test("uploads carry the compatibility version and device id; downloads strip them")
    func reservedFields() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["title": .string("x")]))
        try await fixture.sync(a, configuration: SyncConfiguration(compatibilityVersion: 3, deviceID: "gateway-a"))
        let stored = try #require(try await fixture.embedded.lookup([F.note("n", [:]).id])[0])
        #expect(stored["QSCloudKitModelCompatibilityVersionKey"] == .int64(3))
        #expect(
            stored["QSCloudKitDeviceUUIDKey"] == .string("gateway-a:a@1"),
            "the device id names the gateway, the adapter and the version of the change uploaded (the adapter's first)")
        let b = fixture.adapter("b")
        try await fixture.sync(b, configuration: SyncConfiguration(compatibilityVersion: 3, deviceID: "gateway-b"))
        #expect(await b.values["n"] == ["title": .string("x")])
    }

    @Test("a second sync while one runs fails with alreadySyncing")
    func alreadySyncing() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n", ["title": .string("x")]))
        let gate = LockedValue(false)
        let entered = LockedValue(false)
        let environment = SyncEnvironment(
            sleep: { _ in
                entered.set(true)
                while !gate.get() { try await Task.sleep(for: .milliseconds(2)) }
            }, now: { Date() }, jitter: { 0 })
        fixture.cloud.script(.error(CloudError(.serviceUnavailable, "down", retryAfter: .seconds(1))), on: .modify)
        let synchronizer = Synchronizer(cloud: fixture.cloud, adapters: [SyncedAdapter(a)], environment: environment)
        async let first = synchronizer.sync()
        try await withTimeout(.seconds(20), "the first sync reaching its retry wait") {
            while !entered.get() { try await Task.sleep(for: .milliseconds(2)) }
        }
        let error = await #expect(throws: SyncError.self) { try await synchronizer.sync() }
        #expect(error?.code == .alreadySyncing)
        gate.set(true)
        let report = try await first
        #expect(report.succeeded)
        #expect(try await synchronizer.sync().succeeded, "syncing works again afterwards")
    }

    @Test("unknown adapter names are refused")
    func unknownAdapter() async throws {
        let fixture = try SyncFixture()
        let synchronizer = fixture.synchronizer([fixture.adapter("a")])
        let error = await #expect(throws: SyncError.self) { try await synchronizer.sync(adapters: ["nope"]) }
        #expect(error?.code == .unknownAdapter)
        #expect(error?.message.contains("nope") == true)
    }

    @Test("events report fetches, uploads and progress")
    func events() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        for index in 0..<7 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        let events = LockedValue<[String]>([])
        let synchronizer = fixture.synchronizer(
            [a], options: AdapterSyncOptions(batchSize: 3),
            observer: { event in
                let text: String? =
                    switch event {
                    case .willUpload(_, let pending): "willUpload \(pending)"
                    case .progress(_, let done, let total): "progress \(done)/\(total)"
                    case .adapterFinished(let report): "finished \(report.uploaded)"
                    default: nil
                    }
                if let text { events.withLock { $0.append(text) } }
            })
        _ = try await synchronizer.sync()
        #expect(events.get() == ["willUpload 7", "progress 3/7", "progress 6/7", "progress 7/7", "finished 7"])
    }
}
