import Foundation
@testable import GatewayCore
import GatewayTesting
import Testing

/// One sync leaves every adapter of a zone holding what its siblings uploaded in it, and ends
/// even while programs keep writing.
@Suite("One sync converges a zone, and ends")
struct ZoneConvergenceTests {
    static func note(_ name: String, _ title: String, zone: ZoneID = SyncFixture.zone) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: ["title": .string(title)])
    }

    @Test("an edit in the adapter that syncs last reaches the one that synced first in the same sync", arguments: [1, 2])
    func editInLaterAdapter(parallelism: Int) async throws {
        let fixture = try SyncFixture()
        let first = fixture.adapter("first")
        let second = fixture.adapter("second")
        let configuration = SyncConfiguration(deviceID: "test", parallelism: parallelism)
        await second.save(Self.note("n1", "from second"))
        let events = LockedValue<[SyncEvent]>([])
        let report = try await fixture.synchronizer([first, second], configuration: configuration) { event in
            events.withLock { $0.append(event) }
        }.sync()
        #expect(report.adapters.map(\.outcome) == [.synced, .synced])
        #expect(report.adapters[1].uploaded == 1)
        #expect(report.adapters[0].downloaded == 1, "the first adapter downloaded its sibling's upload")
        #expect(await first.values == second.values)
        let finished = events.get().compactMap { if case .adapterFinished(let report) = $0 { report } else { nil } }
        #expect(finished.last { $0.adapter == "first" }?.downloaded == 1, "the last event of an adapter carries its whole report")

        await first.save(Self.note("n2", "from first"))
        let back = try await fixture.synchronizer([first, second], configuration: configuration).sync()
        #expect(back.adapters[1].downloaded == 1)
        #expect(await first.values == second.values)
        let quiet = try await fixture.synchronizer([first, second], configuration: configuration).sync()
        #expect(quiet.adapters.allSatisfy { $0.downloaded == 0 && $0.uploaded == 0 }, "nothing moves in a converged zone")
    }

    @Test("adapters on other zones are not synced again")
    func otherZonesAlone() async throws {
        let fixture = try SyncFixture()
        let other = fixture.adapter("other", zone: ZoneID(zoneName: "Other"))
        let first = fixture.adapter("first")
        let second = fixture.adapter("second")
        await second.save(Self.note("n1", "from second"))
        let events = LockedValue<[String]>([])
        _ = try await fixture.synchronizer([other, first, second]) { event in
            if case .adapterStarted(let name) = event { events.withLock { $0.append(name) } }
        }.sync()
        #expect(events.get() == ["other", "first", "second", "first"])
    }

    @Test("while programs rewrite records on both sides without pause, one sync still ends, within its bounds", arguments: [1, 2])
    func writersThatNeverStop(parallelism: Int) async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        var ids: [RecordID] = []
        for index in 0..<30 {
            let record = Self.note("a\(index)", "a")
            await a.save(record)
            ids.append(record.id)
        }
        await b.save(Self.note("b0", "b"))
        await a.keepRewriting(ids)
        await b.keepRewriting([Self.note("b0", "b").id])
        let batchSize = 10
        let report = try await fixture.synchronizer(
            [a, b], options: AdapterSyncOptions(batchSize: batchSize),
            configuration: SyncConfiguration(deviceID: "test", parallelism: parallelism)
        ).sync()
        #expect(report.adapters.map(\.outcome) == [.synced, .synced])
        // Each pass sends at most twice what was pending when it began; a pass of `a` begins
        // with its 30 records pending (the writer rewrites those same records).
        let passes = 1 + Synchronizer.maximumFollowUpRounds
        #expect(report.adapters[0].uploaded <= passes * UploadProgress.budget(pendingAtStart: 30, batchSize: batchSize))
        #expect(report.adapters[0].uploadBounded, "a's upload stopped at its bound, with changes left for the next sync")
        #expect(try await a.hasChanges())
    }

    @Test("the ledger of an ordered sync names the adapters whose sibling uploaded after their pass began")
    func ledger() {
        let zone = ZoneID(zoneName: "Z")
        let other = ZoneID(zoneName: "O")
        var ledger = ZoneUploadLedger(zones: [zone, other, zone, zone])
        ledger.passStarts(0)
        ledger.passEnded(0, uploaded: 3)
        ledger.passStarts(1)
        ledger.passEnded(1, uploaded: 5)
        #expect(ledger.behind().isEmpty, "an upload before a sibling's pass began, or on another zone, is downloaded by it")
        ledger.passStarts(2)
        ledger.passEnded(2, uploaded: 0)
        ledger.passStarts(3)
        ledger.passEnded(3, uploaded: 1)
        #expect(ledger.behind() == [0, 2], "3's upload came after the passes of 0 and 2 began; its own does not count")
        ledger.passStarts(0)
        ledger.passEnded(0, uploaded: 0)
        #expect(ledger.behind() == [2])
        ledger.passStarts(2)
        ledger.passEnded(2, uploaded: 2)
        #expect(ledger.behind() == [0, 3], "2's new upload came after the passes of 0 and 3 began")
        ledger.passStarts(1)
        ledger.passEnded(1, uploaded: 2, completed: 1)
        #expect(ledger.behind() == [0, 1, 3], "the cloud completed 1's saves: it downloads them, alone on its zone")
        ledger.passStarts(1)
        ledger.passEnded(1, uploaded: 0)
        #expect(ledger.behind() == [0, 3])
    }

    @Test("the upload bound: twice what was pending, at least one batch more")
    func budget() {
        #expect(UploadProgress.budget(pendingAtStart: 1, batchSize: 200) == 201)
        #expect(UploadProgress.budget(pendingAtStart: 300, batchSize: 200) == 600)
        #expect(UploadProgress.budget(pendingAtStart: 100_000, batchSize: 400) == 200_000)
    }
}
