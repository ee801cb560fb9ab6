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
        let probes = LockedValue(0)
        let signals = ChangeSignals.polling(every: .milliseconds(5)) {
            probes.withLock { $0 += 1 }
            return version.get()
        }
        let received = LockedValue(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in signals {
                    received.withLock { $0 += 1 }
                }
            }
            try await withTimeout(.seconds(10), "three probes") {
                while probes.get() < 3 { try await Task.sleep(for: .milliseconds(2)) }
            }
            #expect(received.get() == 0, "no signal without a change")
            version.set(1)
            try await withTimeout(.seconds(10), "first signal") {
                while received.get() < 1 { try await Task.sleep(for: .milliseconds(2)) }
            }
            version.set(2)
            try await withTimeout(.seconds(10), "second signal") {
                while received.get() < 2 { try await Task.sleep(for: .milliseconds(2)) }
            }
            group.cancelAll()
        }
        #expect(received.get() == 2)
    }
}
