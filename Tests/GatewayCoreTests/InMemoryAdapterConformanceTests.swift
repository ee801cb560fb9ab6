import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

struct InMemoryAdapterHarness: AdapterConformanceHarness {
    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        InMemoryAdapter(zoneID: zone)
    }

    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        await memory(adapter).save(record)
    }

    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        await memory(adapter).delete(id)
    }

    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        await memory(adapter).records
    }

    func recordThatFailsToApply(zone: ZoneID) -> Record {
        Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: InMemoryAdapter.failingRecordType)
    }

    private func memory(_ adapter: any ModelAdapter) -> InMemoryAdapter {
        adapter as! InMemoryAdapter
    }
}

@Suite("In-memory adapter conformance", .heavy)
struct InMemoryAdapterConformanceTests {
    @Test(arguments: AdapterConformanceSuite.cases)
    func conformance(_ check: AdapterConformanceCase) async throws {
        try await check.run(with: InMemoryAdapterHarness())
    }

    @Test("an injected transaction failure leaves the store unchanged")
    func injectedFailure() async throws {
        let zone = ZoneID(zoneName: "Z")
        let adapter = InMemoryAdapter(zoneID: zone)
        await adapter.failNextTransaction(with: InMemoryAdapterError(message: "disk full"))
        let record = Record(id: RecordID(recordName: "a", zoneID: zone), recordType: "Note", fields: ["title": .string("x")])
        await #expect(throws: InMemoryAdapterError.self) {
            try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data([1]))))
        }
        #expect(await adapter.records.isEmpty)
        #expect(await adapter.loadZoneState() == nil)
    }
}
