import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// An adapter that implements only what ``ModelAdapter`` requires, over an in-memory store: no
/// pending count, no failure marks (it drops them), no change signals. The defaults fill in.
private final class MinimalAdapter: ModelAdapter {
    let store: InMemoryAdapter

    init(store: InMemoryAdapter) { self.store = store }

    var name: String { store.name }
    var zoneID: ZoneID { store.zoneID }
    func loadZoneState() async throws -> Data? { await store.loadZoneState() }
    func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        try await store.pendingChanges(limit: limit, after: version)
    }
    func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] { await store.localState(for: recordIDs) }
    func syncedRecordIDs() async throws -> [RecordID] { await store.syncedRecordIDs() }
    func apply(_ changes: DownloadedChanges) async throws { try await store.apply(changes) }
    func commit(_ update: SyncStateUpdate) async throws {
        var kept = update
        kept.failures = [:]
        try await store.commit(kept)
    }
    func resetSyncState(keepData: Bool) async throws { try await store.resetSyncState(keepData: keepData) }
}

private struct MinimalAdapterHarness: AdapterConformanceHarness {
    let memory = InMemoryAdapterHarness()
    var keepsFailureMarks: Bool { false }
    var signalsChanges: Bool { false }

    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        MinimalAdapter(store: InMemoryAdapter(zoneID: zone))
    }
    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        try await memory.saveLocally(record, in: store(adapter))
    }
    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        try await memory.deleteLocally(id, in: store(adapter))
    }
    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        try await memory.storedRecords(in: store(adapter))
    }
    func recordThatFailsToApply(zone: ZoneID) -> Record { memory.recordThatFailsToApply(zone: zone) }

    private func store(_ adapter: any ModelAdapter) -> InMemoryAdapter { (adapter as! MinimalAdapter).store }
}

/// The minimal adapter as `gateway check-adapter` sees a kind: a scratch store.
private struct MinimalScratchStore: ScratchStore {
    let minimal: MinimalAdapter
    var adapter: any ModelAdapter { minimal }
    var detectsChangesByScanning: Bool { false }
    func saveLocally(_ record: Record) async throws { await minimal.store.save(record) }
    func deleteLocally(_ id: RecordID) async throws { await minimal.store.delete(id) }
    func storedRecords() async throws -> [RecordID: Record] { await minimal.store.records }
    func recordThatFailsToApply(zone: ZoneID) -> Record {
        Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: InMemoryAdapter.failingRecordType)
    }
    func close() async {}
}

/// The nine required members are enough: the defaults of the rest keep the contract.
@Suite("Minimal adapter conformance", .heavy)
struct MinimalAdapterConformanceTests {
    @Test(arguments: AdapterConformanceSuite.cases)
    func conformance(_ check: AdapterConformanceCase) async throws {
        try await check.run(with: MinimalAdapterHarness())
    }

    @Test(
        "through the scratch-store harness gateway check-adapter uses, with the kind's flags",
        arguments: AdapterConformanceSuite.cases)
    func throughScratchStores(_ check: AdapterConformanceCase) async throws {
        let harness = ScratchStoreHarness(scanning: false, keepsFailureMarks: false, signalsChanges: false) { zone in
            MinimalScratchStore(minimal: MinimalAdapter(store: InMemoryAdapter(zoneID: zone)))
        }
        try await check.run(with: harness)
        await harness.closeAll()
    }

    @Test("the default pending count pages through every pending change")
    func defaultCountPages() async throws {
        let zone = ZoneID(zoneName: "Z")
        let store = InMemoryAdapter(zoneID: zone)
        for index in 0..<2_345 {
            await store.save(Record(id: RecordID(recordName: "n\(index)", zoneID: zone), recordType: "Note", fields: [:]))
        }
        let adapter = MinimalAdapter(store: store)
        #expect(try await adapter.pendingChangeCount() == 2_345)
        #expect(try await adapter.hasChanges())
    }

    @Test("a record the cloud refuses is tried again at each sync, and the others sync, without failure marks")
    func failuresWithoutMarks() async throws {
        let fixture = try SyncFixture(limits: CloudLimits(maxRecordSize: 500, maxRequestSize: 1_000))
        let inline = AdapterSyncOptions(assets: AssetSettings(forceData: true))
        let store = fixture.adapter("minimal")
        await store.save(SyncFixture.note("huge", ["blob": .bytes(Data(count: 5_000))]))
        await store.save(SyncFixture.note("small", ["rank": .int64(1)]))
        let adapter = MinimalAdapter(store: store)
        let synchronizer = Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(adapter, options: inline)],
            configuration: SyncConfiguration(deviceID: "test"), environment: fixture.environment)
        let first = try await synchronizer.sync().adapters[0]
        #expect(first.uploaded == 1)
        #expect(first.failedRecords == 1)
        #expect(try await adapter.pendingChangeCount() == 1, "the refused record stays pending")
        #expect(try await adapter.failedRecords().isEmpty)
        let second = try await synchronizer.sync().adapters[0]
        #expect(second.failedRecords == 1, "without failure marks, every sync tries it again")
        #expect(try await fixture.cloudRecords().keys.sorted() == ["small"])
    }

    @Test("the default change signals end with their task and never fire")
    func silentSignals() async throws {
        let adapter = MinimalAdapter(store: InMemoryAdapter(zoneID: ZoneID(zoneName: "Z")))
        let listening = Task { () -> Int in
            var count = 0
            for await _ in adapter.changeSignals() { count += 1 }
            return count
        }
        listening.cancel()
        #expect(await listening.value == 0)
    }
}
