import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Core types")
struct CoreTypesTests {
    @Test("pending changes minus excluded records keep the oldest `limit`, in order (property-based)", arguments: 0..<200)
    func pendingChangesExcluding(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let zone = ZoneID(zoneName: "Z")
        let count = Int.random(in: 0...30, using: &random)
        // Distinct versions, in read order as adapters return them.
        let versions = Array(Set((0..<count).map { _ in Int64.random(in: 1...1_000, using: &random) })).sorted()
        var pending = PendingChanges()
        for (index, version) in versions.enumerated() {
            let id = RecordID(recordName: "r\(index)", zoneID: zone)
            if random.chance(0.7) {
                pending.saves.append(PendingSave(record: Record(id: id, recordType: "T", fields: ["v": .int64(version)]), metadata: nil, version: version))
            } else {
                pending.deletes.append(PendingDelete(recordID: id, metadata: nil, version: version))
            }
        }
        let excluded = Set((0..<versions.count).filter { _ in random.chance(0.3) }.map { RecordID(recordName: "r\($0)", zoneID: zone) })
        let limit = Int.random(in: 0...35, using: &random)

        let kept = pending.excluding(excluded, limit: limit)

        let saves = pending.saves.filter { !excluded.contains($0.record.id) }
        let deletes = pending.deletes.filter { !excluded.contains($0.recordID) }
        let oldest = Set((saves.map(\.version) + deletes.map(\.version)).sorted().prefix(limit))
        #expect(kept.saves == saves.filter { oldest.contains($0.version) })
        #expect(kept.deletes == deletes.filter { oldest.contains($0.version) })
        #expect(kept.count == min(limit, saves.count + deletes.count))
    }

    @Test("timestamps keep milliseconds and truncate towards the past")
    func timestamps() {
        #expect(Timestamp(Date(timeIntervalSince1970: 1.2349)).millisecondsSince1970 == 1234)
        #expect(Timestamp(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
        let value = Timestamp(millisecondsSince1970: 1_716_000_000_123)
        #expect(Timestamp(value.date) == value)
    }

    @Test("error codes are distinct and only the transient ones are retryable")
    func errorCodes() {
        #expect(Set(CloudError.Code.allCases).count == CloudError.Code.allCases.count)
        #expect(Set(CloudError.Code.allCases.filter(\.isTransient)) == [.requestRateLimited, .zoneBusy, .serviceUnavailable, .networkFailure])
        let error = CloudError(.requestRateLimited, "slow down", retryAfter: .seconds(3))
        #expect(error.description.contains("requestRateLimited") && error.description.contains("3"))
    }

    @Test("asset checksums are lower-case SHA-256 hex")
    func checksums() {
        #expect(AssetChecksum.of(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(AssetChecksum.isWellFormed(AssetChecksum.of(Data("x".utf8))))
        #expect(!AssetChecksum.isWellFormed("ABC"))
    }

    @Test("polling change signals fire once per change and end on cancellation")
    func pollingSignals() async throws {
        let version = LockedValue(0)
        let clock = ManualSyncClock()
        let signals = ChangeSignals.polling(every: .seconds(5), clock: clock) { version.get() }
        let received = LockedValue(0)
        let listening = Task {
            for await _ in signals { received.withLock { $0 += 1 } }
        }
        // The baseline (0) is taken before the first wait.
        await clock.waitForPendingSleeps(1)
        clock.advance(by: .seconds(5))  // a poll that finds 0: no signal
        await clock.waitForPendingSleeps(1)  // the next wait began
        #expect(received.get() == 0, "no signal without a change")
        version.set(1)
        clock.advance(by: .seconds(5))
        try await withTimeout(.seconds(10), "first signal") {
            while received.get() < 1 { await Task.yield() }
        }
        // Two changes between polls are one signal.
        await clock.waitForPendingSleeps(1)
        version.set(2)
        version.set(3)
        clock.advance(by: .seconds(5))
        try await withTimeout(.seconds(10), "second signal") {
            while received.get() < 2 { await Task.yield() }
        }
        await clock.waitForPendingSleeps(1)
        listening.cancel()
        await listening.value
        #expect(received.get() == 2)
    }
}
