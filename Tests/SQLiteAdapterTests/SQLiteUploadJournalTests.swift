import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import Testing

/// The upload journal (`_gateway_intents`): a batch's intents are one row, answered by the next
/// commit, and still known after a sync that failed or a gateway that restarted.
@Suite("SQLite upload journal")
struct SQLiteUploadJournalTests {
    static let instant = SyncEnvironment(sleep: { _ in }, now: { Date() }, jitter: { 0 })
    static let fewAttempts = RetryPolicy(maxAttempts: 2)

    static func synchronizer(
        _ cloud: any CloudDatabase, _ adapter: SQLiteAdapter, device: String, batchSize: Int = 200
    ) -> Synchronizer {
        Synchronizer(
            cloud: cloud,
            adapters: [
                SyncedAdapter(adapter, options: AdapterSyncOptions(batchSize: batchSize, merge: MergeSettings(policy: .merge, prefers: .server)))
            ],
            configuration: SyncConfiguration(deviceID: device, retry: fewAttempts), environment: instant)
    }

    /// A new folder with an embedded cloud in it, behind a fault wrapper that injects only what a
    /// test scripts.
    static func cloudInNewFolder() throws -> (TemporaryDirectory, EmbeddedCloud, FaultInjectingCloud) {
        let directory = try TemporaryDirectory(prefix: "sqlite-journal")
        let embedded = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        return (directory, embedded, FaultInjectingCloud(wrapping: embedded, plan: .none, seed: 1))
    }

    @Test("a save whose answer was lost is still known after a restart, and does not beat a newer local edit")
    func lostAnswerAcrossRestart() async throws {
        let (directory, embedded, cloud) = try Self.cloudInNewFolder()
        defer { directory.remove() }
        let fileA = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        let fileB = try SQLiteFile(directory, name: "b.sqlite", schema: Notes.schema)
        try fileA.execute(#"INSERT INTO "Note" VALUES ('r', 'v1', 1)"#)

        // The create is saved but its answer lost; the retry fails too, so the sync gives up.
        cloud.script(.lostResponse, on: .modify)
        cloud.script(.error(CloudError(.networkFailure, "reset")), on: .modify)
        let failed = try await Self.synchronizer(cloud, try Notes.adapter(fileA, name: "a"), device: "gateway-a").sync()
        #expect(failed.adapters[0].error?.code == .retriesExhausted)
        #expect(try await zoneContents(of: embedded, zone: Notes.zone)["r"] == ["title": .string("v1"), "rank": .int64(1)])
        #expect(try fileA.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 1, "the batch's intents are one journal row")
        #expect(try fileA.count(#"SELECT COUNT(*) FROM "_gateway_records""#) == 0, "and no per-record metadata row")

        // Another replica writes on top, so the cloud's version no longer carries a's stamp.
        let b = Self.synchronizer(cloud, try Notes.adapter(fileB, name: "b"), device: "gateway-b")
        #expect(try await b.sync().succeeded)
        try fileB.execute(#"UPDATE "Note" SET title = 'from b' WHERE name = 'r'"#)
        #expect(try await b.sync().succeeded)

        // The gateway restarts (a new adapter on the same file) and the row is edited again.
        try fileA.execute(#"UPDATE "Note" SET rank = 2 WHERE name = 'r'"#)
        let report = try await Self.synchronizer(cloud, try Notes.adapter(fileA, name: "a"), device: "gateway-a").sync()
        #expect(report.succeeded)
        let expected: [String: FieldValue] = ["title": .string("from b"), "rank": .int64(2)]
        #expect(try Notes.contents(fileA)["r"] == expected, "b's edit and a's newer edit are both kept")
        #expect(try await zoneContents(of: embedded, zone: Notes.zone)["r"] == expected)
        #expect(try fileA.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 0, "nothing left in the journal")
        #expect(try await b.sync().succeeded)
        #expect(try Notes.contents(fileB)["r"] == expected)
    }

    @Test("an upload that fails between batches keeps what was answered and resumes without conflicts")
    func failureBetweenBatches() async throws {
        let (directory, embedded, cloud) = try Self.cloudInNewFolder()
        defer { directory.remove() }
        let file = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        for index in 0..<12 { try file.execute(#"INSERT INTO "Note" VALUES (?, 'row', ?)"#, ["n\(index)", index]) }

        // Batches of 5: the first is answered, the second is saved with its answer lost.
        cloud.script(.passThrough, on: .modify)
        cloud.script(.lostResponse, on: .modify)
        cloud.script(.error(CloudError(.networkFailure, "reset")), on: .modify)
        let adapter = try Notes.adapter(file, name: "a")
        let failed = try await Self.synchronizer(cloud, adapter, device: "gateway-a", batchSize: 5).sync()
        #expect(failed.adapters[0].error?.code == .retriesExhausted)
        #expect(failed.adapters[0].uploaded == 5)
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_records""#) == 5, "the answered batch's metadata")
        // The third batch was prepared, its intents committed, while the second was in flight.
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 2, "the unanswered batch's intents, and the next one's")
        #expect(try await adapter.syncedRecordIDs().count == 12, "records with an intent count as possibly in the cloud")
        let pending = try await adapter.pendingChanges(limit: 20)
        #expect(pending.saves.count == 7)
        #expect(pending.saves.filter { $0.metadata != nil }.count == 7, "pending records read their intents from the journal")

        let report = try await Self.synchronizer(cloud, adapter, device: "gateway-a", batchSize: 5).sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0, "the lost batch is recognised as this replica's own")
        #expect(try await adapter.pendingChangeCount() == 0)
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 0)
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_records""#) == 12)
        #expect(try await zoneContents(of: embedded, zone: Notes.zone).count == 12)
    }

    @Test("a corrupt journal row is an error that names the table, and changes nothing")
    func corruptJournal() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-journal")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        try file.execute(#"INSERT INTO "Note" VALUES ('r', 'v1', 1)"#)
        let adapter = try Notes.adapter(file, name: "a")
        try file.execute(#"INSERT INTO "_gateway_intents" (intents) VALUES (x'05ff')"#)
        await #expect {
            try await adapter.localState(for: [RecordID(recordName: "r", zoneID: Notes.zone)])
        } throws: { error in
            (error as? SQLiteAdapterError)?.code == .databaseFailed && "\(error)".contains("_gateway_intents")
        }
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 1, "the journal row is kept")
        #expect(try await adapter.pendingChangeCount() == 1)
    }

    @Test("an outcome committed while the next batch is in flight leaves that batch's intents journaled, not stored per record")
    func stillSendingStaysJournaled() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-journal")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        for name in ["a", "b", "c"] { try file.execute(#"INSERT INTO "Note" VALUES (?, 'row', 1)"#, [name]) }
        let adapter = try Notes.adapter(file, name: "a")
        func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: Notes.zone) }
        let intent = Data([1, 2, 3])
        let saved = Data([4, 5, 6])
        // Batch 1 goes out; then, while batch 2 is in flight, batch 1's outcome commits with batch 3's intents.
        try await adapter.commit(SyncStateUpdate(metadata: [id("a"): intent], zoneState: Data(), sending: [id("a")]))
        try await adapter.commit(SyncStateUpdate(metadata: [id("b"): intent], zoneState: Data(), sending: [id("b")]))
        let inFlightRow = try file.rows(#"SELECT batch, intents FROM "_gateway_intents" ORDER BY batch"#).last
        try await adapter.commit(
            SyncStateUpdate(metadata: [id("a"): saved, id("c"): intent], zoneState: Data(), sending: [id("c")], stillSending: [id("b")]))
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_records""#) == 1, "only batch 1's outcome is stored per record")
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 2, "batch 2's intents and batch 3's are journaled")
        #expect(
            try file.rows(#"SELECT batch, intents FROM "_gateway_intents" ORDER BY batch"#).first == inFlightRow,
            "batch 2's row stays as it was, not written again")
        let states = try await adapter.localState(for: [id("a"), id("b"), id("c")])
        #expect(states[id("a")]?.metadata == saved)
        #expect(states[id("b")]?.metadata == intent, "reads still see the intents of the batch in flight")
        #expect(states[id("c")]?.metadata == intent)
        // Batch 2's outcome, without a batch in flight: its journal entries go, batch 3's are stored.
        try await adapter.commit(SyncStateUpdate(metadata: [id("b"): saved], zoneState: Data()))
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 0)
        #expect(try await adapter.localState(for: [id("c")])[id("c")]?.metadata == intent)
    }

    @Test("a journal row mixing a batch in flight with answered and unanswered intents is split: kept ones journaled again, the rest stored")
    func mixedRowIsSplit() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-journal")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        for name in ["a", "b", "c", "d"] { try file.execute(#"INSERT INTO "Note" VALUES (?, 'row', 1)"#, [name]) }
        let adapter = try Notes.adapter(file, name: "a")
        func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: Notes.zone) }
        let (intent, saved) = (Data([1]), Data([2]))
        // One row with a (answered now), b (still in flight) and c (never answered).
        try await adapter.commit(
            SyncStateUpdate(metadata: [id("a"): intent, id("b"): intent, id("c"): intent], zoneState: Data(), sending: [id("a"), id("b"), id("c")]))
        try await adapter.commit(SyncStateUpdate(metadata: [id("a"): saved], zoneState: Data(), stillSending: [id("b")]))
        #expect(try file.count(#"SELECT COUNT(*) FROM "_gateway_intents""#) == 1, "b alone is journaled again")
        #expect(try file.rows(#"SELECT record_name FROM "_gateway_records" ORDER BY record_name"#).map { $0[0] as String } == ["a", "c"],
            "the answered and the unanswered intents are stored per record")
        let states = try await adapter.localState(for: [id("a"), id("b"), id("c"), id("d")])
        #expect(states[id("a")]?.metadata == saved)
        #expect(states[id("b")]?.metadata == intent)
        #expect(states[id("c")]?.metadata == intent)
        #expect(states[id("d")]?.metadata == nil)
    }
}
