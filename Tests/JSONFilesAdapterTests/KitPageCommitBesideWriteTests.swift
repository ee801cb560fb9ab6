@testable import AdapterKit
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Testing

/// While a download has more pages to come, the kit commits a page's state beside the next
/// page's write. Until it commits, the page's journal stays: a crash replays it, a failed next
/// write does not lose it, and any other operation commits it first.
@Suite("Kit: a page's state committed beside the next page's write")
struct KitPageCommitBesideWriteTests {
    typealias Fixture = KitLocalStateBesideApplyTests

    struct Setup {
        let directory: TemporaryDirectory
        let store = HeldWriteStore()
        var statePath: String { directory.path("state.sqlite") }

        init() throws { directory = try TemporaryDirectory(prefix: "kit-pipeline") }

        func adapter() throws -> KitAdapter {
            try KitAdapter(configuration: KitAdapterConfiguration(name: "notes", zoneID: Fixture.zone, statePath: statePath), store: store)
        }

        /// A page of records `names`, each with metadata, and the zone state `zone`.
        static func page(_ names: [String], zone: String, moreComing: Bool) -> DownloadedChanges {
            var metadata: [RecordID: Data] = [:]
            for name in names { metadata[Fixture.id(name)] = Data("fields of \(name)".utf8) }
            return DownloadedChanges(
                writes: names.map { Fixture.record($0, title: "cloud \($0)") },
                state: SyncStateUpdate(metadata: metadata, zoneState: Data(zone.utf8)), moreComing: moreComing)
        }

        /// What the state file holds: journals left, records with metadata, the zone state.
        func recorded() throws -> (journals: Int, synced: Set<String>, zone: String?) {
            let queue = try DatabaseQueue(path: statePath)
            defer { try? queue.close() }
            return try queue.read { db in
                let journals = try Int.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM journal) + (SELECT COUNT(*) FROM journal_pages)") ?? 0
                let synced = Set(try String.fetchAll(db, sql: "SELECT record_name FROM metadata"))
                let zone = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1").map { String(decoding: $0, as: UTF8.self) }
                return (journals, synced, zone)
            }
        }
    }

    @Test("pages commit in order, the last one before its apply returns")
    func pagesCommitInOrder() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let adapter = try setup.adapter()
        try await adapter.apply(Setup.page(["a", "b"], zone: "z1", moreComing: true))
        var recorded = try setup.recorded()
        #expect(recorded.journals == 1, "the first page's state waits for the next page's write")
        #expect(recorded.synced.isEmpty)
        try await adapter.apply(Setup.page(["c", "d"], zone: "z2", moreComing: true))
        recorded = try setup.recorded()
        #expect(recorded.journals == 1)
        #expect(recorded.synced == ["a", "b"])
        #expect(recorded.zone == "z1")
        try await adapter.apply(Setup.page(["e"], zone: "z3", moreComing: false))
        recorded = try setup.recorded()
        #expect(recorded.journals == 0)
        #expect(recorded.synced == ["a", "b", "c", "d", "e"])
        #expect(recorded.zone == "z3")
        #expect(try await adapter.pendingChangeCount() == 0, "the kit's own writes are no local edits")
        await adapter.close()
    }

    @Test("a gateway killed before a written page commits replays it when the adapter opens again; nothing becomes a local edit")
    func crashBeforeCommit() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let killed = try setup.adapter()
        try await killed.apply(Setup.page(["a", "b"], zone: "z1", moreComing: true))
        // The next page is written, the first committed beside it, then the process dies.
        try await killed.apply(Setup.page(["c"], zone: "z2", moreComing: true))
        #expect(try setup.recorded().journals == 1)

        // Not closed: as after SIGKILL, the state file holds what was committed.
        let reopened = try setup.adapter()
        #expect(try await reopened.loadZoneState() == Data("z2".utf8))
        let recorded = try setup.recorded()
        #expect(recorded.journals == 0)
        #expect(recorded.synced == ["a", "b", "c"])
        #expect(try await reopened.pendingChangeCount() == 0)
        #expect(setup.store.record("c")?["title"] == .string("cloud c"))
        await reopened.close()
    }

    @Test("two journals left by a crash replay in the order they were journaled")
    func twoJournalsReplayInOrder() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        // The first page was written; the second journaled, its write never sent.
        let first = KitJournal(
            saves: [Fixture.record("a", title: "first")], deletes: [], before: [:],
            update: SyncStateUpdate(metadata: [Fixture.id("a"): Data("one".utf8)], zoneState: Data("z1".utf8)), skipped: [])
        let second = KitJournal(
            saves: [Fixture.record("b", title: "second")], deletes: [], before: [:],
            update: SyncStateUpdate(metadata: [Fixture.id("b"): Data("two".utf8)], zoneState: Data("z2".utf8)), skipped: [])
        do {
            let adapter = try setup.adapter()
            await adapter.close()
        }
        _ = try await setup.store.write(saves: first.saves, deletes: [])
        let queue = try DatabaseQueue(path: setup.statePath)
        try await queue.write { db in
            var (first, second) = (first, second)
            try first.save(db)
            try second.save(db)
        }
        try queue.close()

        let adapter = try setup.adapter()
        #expect(try await adapter.loadZoneState() == Data("z2".utf8), "the later page's zone state is the one kept")
        let recorded = try setup.recorded()
        #expect(recorded.journals == 0)
        #expect(recorded.synced == ["a", "b"])
        #expect(setup.store.record("b")?["title"] == .string("second"))
        #expect(try await adapter.pendingChangeCount() == 0)
        await adapter.close()
    }

    @Test("a write the store refuses still commits the page written before it, and commits nothing of its own")
    func refusedWriteAfterWrittenPage() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let adapter = try setup.adapter()
        try await adapter.apply(Setup.page(["a"], zone: "z1", moreComing: true))
        setup.store.failNextWrite()
        await #expect(throws: KitAdapterError.self) {
            try await adapter.apply(Setup.page(["b"], zone: "z2", moreComing: true))
        }
        let recorded = try setup.recorded()
        #expect(recorded.journals == 0)
        #expect(recorded.synced == ["a"])
        #expect(recorded.zone == "z1", "the refused page downloads again")
        #expect(try await adapter.pendingChangeCount() == 0)
        await adapter.close()
    }

    @Test("any other operation, and closing, commit a written page first")
    func otherOperationsCommitFirst() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let adapter = try setup.adapter()
        try await adapter.apply(Setup.page(["a"], zone: "z1", moreComing: true))
        #expect(try await adapter.syncedRecordIDs() == [Fixture.id("a")])
        #expect(try setup.recorded().journals == 0)

        try await adapter.apply(Setup.page(["b"], zone: "z2", moreComing: true))
        let state = try await adapter.localState(for: [Fixture.id("b")])
        #expect(state[Fixture.id("b")]?.metadata == Data("fields of b".utf8))

        try await adapter.apply(Setup.page(["c"], zone: "z3", moreComing: true))
        await adapter.close()
        let recorded = try setup.recorded()
        #expect(recorded.journals == 0)
        #expect(recorded.zone == "z3")
    }

    @Test("a page sharing a record with the written page before it reads that record's state as committed")
    func sharedRecordWaitsForCommit() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let adapter = try setup.adapter()
        try await adapter.apply(Setup.page(["a"], zone: "z1", moreComing: true))
        // The same record again in the next page, as the cloud's newer version: written over the
        // kit's own write, not mistaken for a store edit left alone.
        var next = Setup.page(["a"], zone: "z2", moreComing: false)
        next.writes = [Fixture.record("a", title: "newer")]
        try await adapter.apply(next)
        #expect(setup.store.record("a")?["title"] == .string("newer"))
        #expect(try await adapter.pendingChangeCount() == 0)
        #expect(try setup.recorded().zone == "z2")
        await adapter.close()
    }
}
