import Foundation
import GatewayCore
import GatewayTesting
import Testing

private typealias F = SyncFixture

/// The upload reads the batch after the next one while the last outcome commits: records must
/// still go once each, in the order they changed, and an edit made meanwhile must still go.
@Suite("upload batches read ahead")
struct UploadReadAheadTests {
    @Test("every record goes once, in the order it changed, across many batches read ahead")
    func onceInOrder() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let names = (0..<30).map { "n\($0)" }
        for (index, name) in names.enumerated() { await a.save(F.note(name, ["rank": .int64(Int64(index))])) }
        let report = try await fixture.sync(a, options: AdapterSyncOptions(batchSize: 4))
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 30, "no record was sent twice")
        #expect(try await !a.hasChanges())
        let feed = try await fixture.embedded.fetchChanges(in: F.zone, since: nil, limit: 100)
        #expect(feed.modified.map(\.id.recordName) == names, "the cloud saved them in the order they changed")
    }

    @Test("a record edited while its batch is out goes again only after that outcome is committed, with its new tag")
    func editedWhileOut() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        for index in 0..<12 { await a.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        // A program that, before every read of pending changes, edits n0 again and adds a record:
        // n0's newest change always sits among the records a read takes.
        let added = LockedValue(0)
        let writer: @Sendable () async -> Void = {
            let next = added.withLock { count -> Int? in
                guard count < 200 else { return nil }
                count += 1
                return count
            }
            guard let next else { return }
            await a.save(F.note("n0", ["rank": .int64(Int64(-next))]))
            await a.save(F.note("w\(next)", ["rank": .int64(Int64(next))]))
        }
        let sends = SendLedger()
        let first = try await Synchronizer(
            cloud: LedgerCloud(base: fixture.cloud, ledger: sends),
            adapters: [SyncedAdapter(LedgerAdapter(base: a, ledger: sends, beforeRead: writer), options: AdapterSyncOptions(batchSize: 4))],
            configuration: SyncConfiguration(deviceID: "test"), environment: fixture.environment
        ).sync().adapters[0]
        #expect(first.outcome == .synced)
        #expect(sends.sends(of: "n0") > 1, "n0 went again while the program wrote")
        #expect(sends.resentTooSoon.get().isEmpty, "sent again before the last outcome committed: \(sends.resentTooSoon.get())")
        #expect(sends.staleTags.get().isEmpty, "sent with a change tag read before the last outcome committed: \(sends.staleTags.get())")

        _ = try await fixture.sync(a, options: AdapterSyncOptions(batchSize: 4))
        #expect(try await !a.hasChanges())
        #expect(try await fixture.cloudRecords() == a.values, "the cloud holds every record's latest value")
    }
}

/// Record names sent to the cloud whose outcomes the store has not committed yet.
private final class SendLedger: Sendable {
    let open = LockedValue<Set<String>>([])
    let sent = LockedValue(0)
    let resentTooSoon = LockedValue<[String]>([])
    /// Records the cloud refused for a change tag it no longer has: sent from a read made before
    /// the outcome of their last send was committed.
    let staleTags = LockedValue<[String]>([])

    let perRecord = LockedValue<[String: Int]>([:])

    func sends(of name: String) -> Int { perRecord.get()[name] ?? 0 }

    func sending(_ names: [String]) {
        sent.withLock { $0 += names.count }
        perRecord.withLock { counts in for name in names { counts[name, default: 0] += 1 } }
        let again = open.withLock { open in names.filter { !open.insert($0).inserted } }
        if !again.isEmpty { resentTooSoon.withLock { $0 += again } }
    }

    func committed(_ update: SyncStateUpdate) {
        let outcomes = Set(update.metadata.keys).subtracting(update.sending).union(update.settled.keys).union(update.failures.keys)
        open.withLock { open in open.subtract(outcomes.map(\.recordName)) }
    }
}

/// The fixture's cloud, telling the ledger what each modify request sends.
private struct LedgerCloud: CloudDatabase {
    let base: any CloudDatabase
    let ledger: SendLedger

    var limits: CloudLimits { base.limits }
    func zones() async throws -> [ZoneID] { try await base.zones() }
    func createZone(_ zone: ZoneID) async throws { try await base.createZone(zone) }
    func deleteZone(_ zone: ZoneID) async throws { try await base.deleteZone(zone) }
    func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        try await base.fetchChanges(in: zone, since: token, limit: limit)
    }
    func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken { try await base.currentChangeToken(in: zone) }
    func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws -> [RecordOperationResult] {
        ledger.sending(operations.map(\.recordID.recordName))
        let results = try await base.modify(operations, in: zone, atomic: atomic)
        for case .failed(let id, let error) in results where error.code == .serverRecordChanged {
            ledger.staleTags.withLock { $0.append(id.recordName) }
        }
        return results
    }
    func lookup(_ recordIDs: [RecordID]) async throws -> [Record?] { try await base.lookup(recordIDs) }
    func uploadAsset(_ data: Data) async throws -> AssetReference { try await base.uploadAsset(data) }
    func downloadAsset(_ reference: AssetReference) async throws -> Data { try await base.downloadAsset(reference) }
    func changeSignals(in zone: ZoneID) -> ChangeSignals { base.changeSignals(in: zone) }
}

/// An in-memory adapter telling the ledger which outcomes each commit settles.
private struct LedgerAdapter: ForwardingAdapter {
    let base: InMemoryAdapter
    let ledger: SendLedger
    /// Runs before every read of pending changes, as another program's writes would.
    var beforeRead: @Sendable () async -> Void = {}

    var name: String { base.name }
    var zoneID: ZoneID { base.zoneID }
    func forwardingTarget() async throws -> any ModelAdapter { base }
    func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        await beforeRead()
        return try await base.pendingChanges(limit: limit, after: version)
    }
    func commit(_ update: SyncStateUpdate) async throws {
        try await base.commit(update)
        ledger.committed(update)
    }
}
