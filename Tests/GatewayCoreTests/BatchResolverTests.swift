import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// `merge_policy: custom` with a batch resolver (a resolver process's core): asked once per page
/// for every conflict it decides, its answers checked against each conflict before anything is
/// written, and a record without a valid answer left as it was on both sides, marked failed.
@Suite("Batch conflict resolvers")
struct BatchResolverTests {
    typealias F = SyncFixture

    /// Answers each conflict with `answer`, recording the batches it was asked.
    final class ScriptedResolver: BatchConflictResolver {
        let batches = LockedValue<[[String]]>([])
        let answer: @Sendable (ConflictContext) -> Result<ConflictResolution, SyncError>
        let dropLast: Bool

        init(dropLast: Bool = false, answer: @escaping @Sendable (ConflictContext) -> Result<ConflictResolution, SyncError>) {
            self.answer = answer
            self.dropLast = dropLast
        }

        func resolve(_ conflicts: [ConflictContext]) async -> [Result<ConflictResolution, SyncError>] {
            batches.withLock { $0.append(conflicts.map(\.recordID.recordName)) }
            let answers = conflicts.map(answer)
            return dropLast ? Array(answers.dropLast()) : answers
        }
    }

    static let options = AdapterSyncOptions(merge: MergeSettings(policy: .custom, resolverName: "joined"))

    /// Two stores holding `count` records both edited since they last agreed: `a` has uploaded,
    /// `b`'s edits are pending. Returns them.
    static func conflicting(_ fixture: SyncFixture, count: Int) async throws -> (InMemoryAdapter, InMemoryAdapter) {
        let (a, b) = (fixture.adapter("a"), fixture.adapter("b"))
        for index in 0..<count { await a.save(F.note("r\(index)", ["title": .string("base"), "rank": .int64(Int64(index))])) }
        try await fixture.sync(a)
        try await fixture.sync(b)
        for index in 0..<count {
            await a.save(F.note("r\(index)", ["title": .string("from a"), "rank": .int64(Int64(index))]))
            await b.save(F.note("r\(index)", ["title": .string("from b"), "rank": .int64(Int64(index))]))
        }
        try await fixture.sync(a)
        return (a, b)
    }

    @Test("a page's conflicts go to the resolver in one batch, with both versions and what each side changed; its answers are written and uploaded")
    func oneBatchPerPage() async throws {
        let fixture = try SyncFixture()
        let (a, b) = try await Self.conflicting(fixture, count: 12)
        let resolver = ScriptedResolver { conflict in
            #expect(conflict.hasAncestor && conflict.changedLocally("title") && conflict.changedOnServer("title") && !conflict.changedLocally("rank"))
            let local = conflict.local?["title"], server = conflict.server?["title"]
            guard case .string(let mine)? = local, case .string(let theirs)? = server else { return .success(.server) }
            return .success(.fields(["title": .string(mine + " & " + theirs), "rank": conflict.server!["rank"]!]))
        }
        let configuration = SyncConfiguration(deviceID: "test", batchResolvers: ["joined": resolver])
        let report = try await fixture.sync(b, options: Self.options, configuration: configuration)
        #expect(report.outcome == .synced)
        #expect(report.conflicts[.merged] == 12 && report.failedRecords == 0)
        #expect(resolver.batches.get().count == 1, "one page, one batch: \(resolver.batches.get())")
        #expect(resolver.batches.get().first?.count == 12)
        try await fixture.sync(a, options: Self.options, configuration: configuration)
        for (name, fields) in try await fixture.cloudRecords() {
            #expect(fields["title"] == .string("from b & from a"), "\(name)")
        }
        let (valuesA, valuesB) = (await a.values, await b.values)
        #expect(valuesA == valuesB)
    }

    @Test("an answer naming a field the record lacks, or a value of another type, fails that record alone: nothing written, it stays pending, and the next sync asks again")
    func answersThatDoNotFit() async throws {
        let fixture = try SyncFixture()
        let (a, b) = try await Self.conflicting(fixture, count: 3)
        let broken = ScriptedResolver { conflict in
            switch conflict.recordID.recordName {
            case "r0": .success(.fields(["title": .string("x"), "color": .string("red")]))
            case "r1": .success(.fields(["title": .int64(5)]))
            default: .success(.local)
            }
        }
        let report = try await fixture.sync(b, options: Self.options, configuration: SyncConfiguration(deviceID: "test", batchResolvers: ["joined": broken]))
        #expect(report.outcome == .synced)
        #expect(report.failedRecords == 2 && report.conflicts[.unresolved] == 2 && report.conflicts[.localWon] == 1)
        #expect(try await b.failedRecords().isEmpty, "no failure mark: the record stays pending")
        #expect(try await b.pendingChangeCount() == 2)
        let failed = report.unresolvedFailures.sorted { $0.recordID.recordName < $1.recordID.recordName }
        #expect(failed.map(\.recordID.recordName) == ["r0", "r1"])
        #expect(failed.allSatisfy { $0.failure.code == "resolverFailed" })
        #expect(failed.first?.failure.message.contains("field 'color', which neither side holds") == true, "\(failed)")
        #expect(failed.last?.failure.message.contains("field 'title' of type int64, where the record holds string") == true, "\(failed)")
        let kept = await b.values
        #expect(kept["r0"]?["title"] == .string("from b") && kept["r1"]?["title"] == .string("from b"), "b keeps its own version")
        let cloud = try await fixture.cloudRecords()
        #expect(cloud["r0"]?["title"] == .string("from a") && cloud["r1"]?["title"] == .string("from a"), "the cloud keeps a's")
        #expect(cloud["r2"]?["title"] == .string("from b"))

        // Fixed: the next sync's upload meets the cloud's version, and the resolver decides.
        let fixed = ScriptedResolver { _ in .success(.local) }
        let retried = try await fixture.sync(b, options: Self.options, configuration: SyncConfiguration(deviceID: "test", batchResolvers: ["joined": fixed]))
        #expect(retried.failedRecords == 0 && retried.conflicts[.localWon] == 2, "\(retried)")
        #expect(try await fixture.cloudRecords()["r0"]?["title"] == .string("from b"))
        _ = a
    }

    @Test("a record left unresolved, then changed on the other side, is settled by the next sync once the resolver answers: both stores end alike")
    func unresolvedThenChangedElsewhere() async throws {
        let fixture = try SyncFixture()
        let (a, b) = try await Self.conflicting(fixture, count: 1)
        let failing = ScriptedResolver { _ in .failure(SyncError(.resolverFailed, "resolver 'joined' failed: it exited")) }
        let failed = try await fixture.sync(b, options: Self.options, configuration: SyncConfiguration(deviceID: "test", batchResolvers: ["joined": failing]))
        #expect(failed.failedRecords == 1)
        await a.save(F.note("r0", ["title": .string("from a, again"), "rank": .int64(0)]))
        try await fixture.sync(a, options: Self.options)
        let fixed = ScriptedResolver { _ in .success(.local) }
        let configuration = SyncConfiguration(deviceID: "test", batchResolvers: ["joined": fixed])
        let settled = try await fixture.sync(b, options: Self.options, configuration: configuration)
        #expect(settled.failedRecords == 0 && settled.conflicts[.localWon] == 1, "\(settled)")
        try await fixture.sync(a, options: Self.options, configuration: configuration)
        let (valuesA, valuesB) = (await a.values, await b.values)
        #expect(valuesA == valuesB && valuesB["r0"]?["title"] == .string("from b"))
        #expect(try await b.hasChanges() == false)
    }

    @Test("a resolver that answers fewer conflicts than it was asked, or fails, leaves every record of the batch as it was")
    func wrongNumberOfAnswers() async throws {
        for resolver in [
            ScriptedResolver(dropLast: true) { _ in .success(.local) },
            ScriptedResolver { _ in .failure(SyncError(.resolverFailed, "resolver 'joined' failed: it exited")) },
        ] {
            let fixture = try SyncFixture()
            let (_, b) = try await Self.conflicting(fixture, count: 4)
            let report = try await fixture.sync(b, options: Self.options, configuration: SyncConfiguration(deviceID: "test", batchResolvers: ["joined": resolver]))
            #expect(report.outcome == .synced)
            #expect(report.failedRecords == 4 && report.conflicts[.unresolved] == 4, "\(report)")
            #expect(report.unresolvedFailures.count == 4 && report.unresolvedFailures.allSatisfy { $0.failure.code == "resolverFailed" })
            let kept = await b.values
            #expect(kept.values.allSatisfy { $0["title"] == .string("from b") })
            #expect(try await fixture.cloudRecords().values.allSatisfy { $0["title"] == .string("from a") })
            #expect(try await b.hasChanges(), "the edits stay pending")
        }
    }
}
