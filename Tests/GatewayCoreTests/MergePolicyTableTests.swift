import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// Every merge policy against every combination of local and remote change, through both places
/// a conflict is met: a download meeting a pending local change, and an upload meeting
/// `serverRecordChanged` (a concurrent write just before the upload).
@Suite("Merge policies, table-driven")
struct MergePolicyTableTests {
    typealias F = SyncFixture

    enum Change: String, CaseIterable, Sendable {
        case none, editTitle, editRank, delete

        /// `base` after this change made by `side` ("L" or "R").
        func applied(to base: [String: FieldValue], side: String) -> [String: FieldValue]? {
            var fields = base
            switch self {
            case .none: return base
            case .editTitle: fields["title"] = .string(side)
            case .editRank: fields["rank"] = .int64(side == "L" ? 10 : 20)
            case .delete: return nil
            }
            return fields
        }
    }

    enum Path: String, CaseIterable, Sendable { case download, upload }

    struct Policy: Sendable, CustomStringConvertible {
        var settings: MergeSettings
        var description: String {
            settings.policy == .merge ? "merge(prefers \(settings.prefers.rawValue))" : settings.policy.rawValue
        }
        static let all = [
            Policy(settings: MergeSettings(policy: .server)), Policy(settings: MergeSettings(policy: .client)),
            Policy(settings: MergeSettings(policy: .merge, prefers: .server)),
            Policy(settings: MergeSettings(policy: .merge, prefers: .client)),
        ]
    }

    struct Scenario: Sendable, CustomStringConvertible {
        var local: Change
        var remote: Change
        var path: Path
        var description: String { "local \(local.rawValue), remote \(remote.rawValue), via \(path.rawValue)" }

        static var all: [Scenario] {
            Change.allCases.flatMap { local in
                Change.allCases.flatMap { remote in
                    Path.allCases.compactMap { path in
                        // The upload path needs a local change to upload.
                        path == .upload && local == .none ? nil : Scenario(local: local, remote: remote, path: path)
                    }
                }
            }
        }
    }

    static let base: [String: FieldValue] = ["title": .string("base"), "rank": .int64(1)]

    /// What every replica must hold at the end.
    static func expected(_ policy: MergeSettings, _ scenario: Scenario) -> [String: FieldValue]? {
        let local = scenario.local.applied(to: base, side: "L")
        let remote = scenario.remote.applied(to: base, side: "R")
        if scenario.local == .none { return remote }
        if scenario.remote == .none { return local }
        switch policy.policy {
        case .server: return remote
        case .client: return local
        case .merge, .custom:
            guard let local else { return remote }  // an edit beats a delete
            guard let remote else { return local }
            var merged: [String: FieldValue] = [:]
            for field in Set(base.keys).union(local.keys).union(remote.keys) {
                if local[field] == base[field] {
                    merged[field] = remote[field]
                } else if remote[field] == base[field] || local[field] == remote[field] {
                    merged[field] = local[field]
                } else {
                    merged[field] = policy.prefers == .server ? remote[field] : local[field]
                }
            }
            return merged
        }
    }

    static func change(_ change: Change, side: String, in adapter: InMemoryAdapter) async {
        let id = F.note("r", [:]).id
        guard let fields = change.applied(to: base, side: side) else {
            await adapter.delete(id)
            return
        }
        if change != .none { await adapter.save(F.note("r", fields)) }
    }

    @Test("policy × local change × remote change × path", arguments: Policy.all, Scenario.all)
    func table(policy: Policy, scenario: Scenario) async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: policy.settings)
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await b.save(F.note("r", Self.base))
        try await fixture.sync(b, options: options)
        try await fixture.sync(a, options: options)
        #expect(await a.values["r"] == Self.base)

        switch scenario.path {
        case .download:
            await Self.change(scenario.remote, side: "R", in: b)
            try await fixture.sync(b, options: options)
            await Self.change(scenario.local, side: "L", in: a)
        case .upload:
            await Self.change(scenario.local, side: "L", in: a)
            let id = F.note("r", [:]).id
            if let current = try await fixture.embedded.lookup([id])[0], scenario.remote != .none {
                var server = current
                if let fields = scenario.remote.applied(to: Self.base, side: "R") {
                    server.fields = fields
                    fixture.cloud.script(.concurrentWrite([.forceReplace(server)]), on: .modify)
                } else {
                    fixture.cloud.script(.concurrentWrite([.forceDelete(id)]), on: .modify)
                }
            }
        }
        let report = try await fixture.sync(a, options: options)
        #expect(report.outcome == .synced, "\(report.error.map(String.init(describing:)) ?? "")")
        try await fixture.sync(b, options: options)

        let expected = Self.expected(policy.settings, scenario)
        #expect(await a.values["r"] == expected, "local replica")
        #expect(await b.values["r"] == expected, "other replica")
        #expect(try await fixture.cloudRecords()["r"] == expected, "cloud")
        let pendingA = try await a.hasChanges()
        let pendingB = try await b.hasChanges()
        #expect(!pendingA && !pendingB, "nothing left pending")
        // Both sides deleting agree: that is no conflict.
        let conflicted =
            scenario.local != .none && scenario.remote != .none && !(scenario.local == .delete && scenario.remote == .delete)
        #expect((report.conflictCount > 0) == conflicted, "conflicts reported: \(report.conflicts)")
    }

    /// Two stores that created the same record share no ancestor: the merge policy is not asked.
    /// The fields only one side holds are kept and a field both hold differently follows
    /// `join_prefers` (the cloud's by default, the store's with `store`), whatever the policy.
    @Test("create vs create of the same record name", arguments: Policy.all, Path.allCases)
    func createVersusCreate(policy: Policy, path: Path) async throws {
        for joinPrefers in JoinPreference.allCases {
            try await createVersusCreate(policy: policy, path: path, joinPrefers: joinPrefers)
        }
    }

    func createVersusCreate(policy: Policy, path: Path, joinPrefers: JoinPreference) async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(merge: policy.settings, joinPrefers: joinPrefers)
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        let mine: [String: FieldValue] = ["title": .string("A"), "rank": .int64(5)]
        let theirs: [String: FieldValue] = ["title": .string("B"), "rank": .int64(5), "body": .string("only B")]
        await a.save(F.note("x", mine))
        switch path {
        case .download:
            await b.save(F.note("x", theirs))
            try await fixture.sync(b, options: options)
        case .upload:
            fixture.cloud.script(.concurrentWrite([.create(F.note("x", theirs))]), on: .modify)
        }
        let report = try await fixture.sync(a, options: options)
        #expect(report.outcome == .synced)
        #expect(report.conflictCount == 1)
        try await fixture.sync(b, options: options)
        let expected: [String: FieldValue] =
            switch joinPrefers {
            case .cloud: theirs
            case .store: ["title": .string("A"), "rank": .int64(5), "body": .string("only B")]
            }
        #expect(await a.values["x"] == expected)
        #expect(await b.values["x"] == expected)
        #expect(try await fixture.cloudRecords()["x"] == expected)
    }

    struct LongestTitleWins: ConflictResolver {
        func resolve(_ conflict: ConflictContext) -> ConflictResolution {
            func length(_ record: Record?) -> Int {
                guard case .string(let title)? = record?.fields["title"] else { return -1 }
                return title.count
            }
            return length(conflict.local) >= length(conflict.server) ? .local : .server
        }
    }

    @Test("custom resolvers decide, per record type; a missing resolver fails clearly")
    func customResolver() async throws {
        let fixture = try SyncFixture()
        let options = AdapterSyncOptions(
            merge: MergeSettings(policy: .server),
            mergeByRecordType: ["Note": MergeSettings(policy: .custom, resolverName: "longest")])
        let configuration = SyncConfiguration(deviceID: "t", resolvers: ["longest": LongestTitleWins()])
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await b.save(F.note("r", ["title": .string("base")]))
        try await fixture.sync(b, options: options, configuration: configuration)
        try await fixture.sync(a, options: options, configuration: configuration)
        await b.save(F.note("r", ["title": .string("short")]))
        try await fixture.sync(b, options: options, configuration: configuration)
        await a.save(F.note("r", ["title": .string("a much longer title")]))
        let report = try await fixture.sync(a, options: options, configuration: configuration)
        #expect(report.conflicts[.localWon] == 1)
        #expect(try await fixture.cloudRecords()["r"]?["title"] == .string("a much longer title"))

        await b.save(F.note("r", ["title": .string("b again")]))
        let missing = try await fixture.sync(b, options: options, configuration: SyncConfiguration(deviceID: "t"))
        #expect(missing.error?.code == .unknownResolver)
        #expect(try await b.hasChanges(), "the edit stays pending")
    }
}
