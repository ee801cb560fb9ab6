import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// Three replicas of one zone make random overlapping inserts, updates and deletes, interleaved
/// with syncs through an embedded cloud that injects every kind of fault. After fault-free rounds
/// every replica must equal the cloud, and under `merge` no field edit that did not collide with
/// another replica's edit may be lost.
@Suite("Convergence under faults (property-based)", .heavy)
struct ConvergenceTests {
    typealias F = SyncFixture
    static let names = (0..<8).map { "r\($0)" }
    static let fields = ["f0", "f1", "f2", "f3"]

    struct FieldKey: Hashable {
        var record: String
        var field: String
    }

    static let seeds: Range<UInt64> = 0..<200
    static let chunks = 8

    /// Seeds run one after another inside a few parallel chunks, which bounds how many cloud
    /// files are open at once.
    @Test("three replicas converge and keep every uncontested edit", arguments: 0..<chunks)
    func converge(chunk: Int) async throws {
        let size = UInt64((Self.seeds.count + Self.chunks - 1) / Self.chunks)
        let start = Self.seeds.lowerBound + UInt64(chunk) * size
        for seed in start..<min(start + size, Self.seeds.upperBound) {
            try await converge(seed: seed)
        }
    }

    func converge(seed: UInt64) async throws {
        let fixture = try SyncFixture(plan: .chaos(probability: 0.12, operationLimit: 5), seed: seed)
        // Few attempts, so that some syncs fail half-way through and later ones pick up the pieces.
        let configuration = SyncConfiguration(deviceID: "t", retry: RetryPolicy(maxAttempts: 3))
        let prefers: MergePreference = seed.isMultiple(of: 2) ? .server : .client
        let options = AdapterSyncOptions(batchSize: 8, merge: MergeSettings(policy: .merge, prefers: prefers))
        let replicas = ["a", "b", "c"].map { fixture.adapter($0) }
        var random = SeededGenerator(seed: seed &* 0x9E37_79B9 &+ 17)

        var editors: [FieldKey: Set<Int>] = [:]
        var lastWritten: [FieldKey: FieldValue] = [:]
        var everDeleted = Set<String>()
        var failedSyncs = 0

        for step in 0..<60 {
            let index = Int.random(in: 0..<replicas.count, using: &random)
            let replica = replicas[index]
            let roll = Int.random(in: 0..<10, using: &random)
            let name = Self.names.randomElement(using: &random)!
            let current = await replica.values[name]
            if roll < 6 {
                var fields = current ?? [:]
                let count = current == nil ? Int.random(in: 1...2, using: &random) : 1
                for field in Self.fields.shuffled(using: &random).prefix(count) {
                    let value: FieldValue =
                        random.chance(0.5) ? .string("\(index)-\(step)") : .int64(Int64(step * 10 + index))
                    fields[field] = value
                    let key = FieldKey(record: name, field: field)
                    editors[key, default: []].insert(index)
                    lastWritten[key] = value
                }
                await replica.save(F.note(name, fields))
            } else if roll < 7 {
                if current != nil {
                    await replica.delete(F.note(name, [:]).id)
                    everDeleted.insert(name)
                }
            } else {
                let report = try await fixture.sync(replica, options: options, configuration: configuration)
                if report.outcome != .synced { failedSyncs += 1 }
            }
        }

        fixture.cloud.isEnabled = false
        var quietRounds = 0
        while true {
            quietRounds += 1
            var moved = 0
            for replica in replicas {
                let report = try await fixture.sync(replica, options: options, configuration: configuration)
                #expect(report.outcome == .synced, "seed \(seed): a fault-free sync failed: \(String(describing: report.error))")
                moved += report.downloaded + report.deletedLocally + report.uploaded + report.deletedRemotely
            }
            if moved == 0 || quietRounds == 8 { break }
        }
        #expect(quietRounds < 8, "seed \(seed): replicas kept exchanging changes")

        let cloud = try await fixture.cloudRecords()
        for replica in replicas {
            let values = await replica.values
            #expect(values == cloud, "seed \(seed): replica \(replica.name) differs from the cloud")
            #expect(try await replica.pendingChangeCount() == 0, "seed \(seed): replica \(replica.name) has pending changes")
        }
        for (key, who) in editors where who.count == 1 && !everDeleted.contains(key.record) {
            #expect(
                cloud[key.record]?[key.field] == lastWritten[key],
                "seed \(seed): the uncontested edit of \(key.record).\(key.field) by replica \(who.first!) was lost")
        }
    }
}
