import Foundation
import GatewayCore

/// What the adapter conformance suite needs from an adapter under test.
///
/// The store must accept records of type `Note` with a string field `title` and an int64 field
/// `rank` (both optional), named by any record name made of letters, digits and dashes.
public protocol AdapterConformanceHarness: Sendable {
    /// A new adapter over a new, empty store, syncing `zone`.
    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter

    /// Saves a record into the store the way another program would, so that the adapter's change
    /// capture sees it.
    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws

    /// Deletes a record from the store the way another program would.
    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws

    /// Every record the store holds (values only: no change tags or times).
    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record]

    /// A record the store refuses to write, such as one of a type it has no table for.
    func recordThatFailsToApply(zone: ZoneID) -> Record

    /// Whether the store finds local edits by scanning (a folder of files) rather than by
    /// capturing each one (triggers). A scanning store cannot order edits made between two of
    /// its scans, so the suite lets it look (`hasChanges()`) after each edit whose order it checks,
    /// as the service's change signals would. Default `false`.
    var detectsChangesByScanning: Bool { get }

    /// Whether the adapter keeps failure marks (implements `failedRecords()` and
    /// `retryFailedRecords()`). Without them, the suite checks instead that a failed record stays
    /// pending and is offered again. Default `true`.
    var keepsFailureMarks: Bool { get }

    /// Whether the adapter signals its changes (implements `changeSignals()`). Without signals,
    /// the suite leaves the signal cases out: local changes wait for the interval sync.
    /// Default `true`.
    var signalsChanges: Bool { get }
}

extension AdapterConformanceHarness {
    public var detectsChangesByScanning: Bool { false }
    public var keepsFailureMarks: Bool { true }
    public var signalsChanges: Bool { true }

    /// Lets a scanning store see the edit just made; nothing for stores that capture edits.
    func observe(_ adapter: any ModelAdapter) async throws {
        if detectsChangesByScanning { _ = try await adapter.hasChanges() }
    }
}

/// The behaviours every `ModelAdapter` must show, as DESIGN §5 states them.
public enum AdapterConformanceSuite {
    static let zone = ZoneID(zoneName: "AdapterZone")

    static func note(_ name: String, title: String, rank: Int64 = 1) -> Record {
        Record(
            id: RecordID(recordName: name, zoneID: zone), recordType: "Note",
            fields: ["title": .string(title), "rank": .int64(rank)])
    }

    static func metadata(_ tag: String, for record: Record) -> Data {
        var synced = record
        synced.changeTag = tag
        return RecordMetadata(syncedRecord: synced).encoded()
    }

    static func zoneState(_ marker: String) -> Data {
        ZoneSyncState(token: ChangeToken(data: Data(marker.utf8))).encoded()
    }

    /// A download of `records` with metadata and a zone state named `marker`.
    static func download(_ records: [Record], marker: String, deletes: [RecordID] = []) -> DownloadedChanges {
        var state = SyncStateUpdate(zoneState: zoneState(marker))
        for record in records { state.metadata[record.id] = metadata("tag-\(marker)", for: record) }
        for id in deletes { state.removedMetadata.insert(id) }
        var expected: [RecordID: Int64] = [:]
        for id in records.map(\.id) + deletes { expected[id] = 0 }
        return DownloadedChanges(writes: records, deletes: deletes, state: state, expectedPendingVersions: expected)
    }

    static func values(_ records: [RecordID: Record]) -> [RecordID: [String: FieldValue]] {
        records.mapValues(\.fields)
    }

    /// Every case of the suite.
    public static var cases: [AdapterConformanceCase] { stateCases + changeCases }

    static let stateCases: [AdapterConformanceCase] = [
        AdapterConformanceCase("a new store has no zone state and nothing pending") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try expectEqual(adapter.zoneID, zone, "the adapter's zone")
            try expectEqual(try await adapter.loadZoneState(), nil, "zone state of a new store")
            try expectEqual(try await adapter.hasChanges(), false, "hasChanges of a new store")
            try expectEqual(try await adapter.pendingChangeCount(), 0, "pending count of a new store")
            try expect(try await adapter.pendingChanges(limit: 10).isEmpty, "no pending changes")
            try expect(try await adapter.syncedRecordIDs().isEmpty, "no synced records")
        },
        AdapterConformanceCase("apply writes data, metadata and the zone state together, without change-log entries") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            let records = [note("a", title: "A", rank: 1), note("b", title: "B", rank: 2)]
            try await adapter.apply(download(records, marker: "t1"))
            try expectEqual(
                values(try await harness.storedRecords(in: adapter)), values(Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })),
                "stored records")
            try expectEqual(try await adapter.loadZoneState(), zoneState("t1"), "zone state after apply")
            try expectEqual(try await adapter.hasChanges(), false, "remote writes are not local changes")
            try expectEqual(try await adapter.pendingChangeCount(), 0, "pending count after a remote write")
            let state = try await adapter.localState(for: records.map(\.id))
            try expectEqual(state[records[0].id]?.metadata, metadata("tag-t1", for: records[0]), "stored metadata")
            try expectEqual(state[records[1].id]?.pendingVersion, nil, "no pending version after a remote write")
            try expectEqual(Set(try await adapter.syncedRecordIDs()), Set(records.map(\.id)), "synced records")
        },
        AdapterConformanceCase("apply is idempotent") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            let records = [note("a", title: "A"), note("b", title: "B")]
            let changes = download(records, marker: "t1")
            try await adapter.apply(changes)
            let once = try await harness.storedRecords(in: adapter)
            try expectEqual(values(once), values(Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })), "records after applying once")
            try await adapter.apply(changes)
            try expectEqual(values(try await harness.storedRecords(in: adapter)), values(once), "records after applying twice")
            try expectEqual(try await adapter.pendingChangeCount(), 0, "nothing pending after applying twice")
            try expectEqual(try await adapter.loadZoneState(), zoneState("t1"), "zone state after applying twice")
        },
        AdapterConformanceCase("records marked absent locally are written even when they exist after all") { harness in
            // The hint is what the merge saw; a stale one must neither fail the page nor double a record.
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("a", title: "A"), note("b", title: "B")], marker: "t1"))
            let records = [note("a", title: "A2", rank: 2), note("b", title: "B2", rank: 3), note("c", title: "C", rank: 4)]
            var changes = download(records, marker: "t2")
            changes.absentLocally = Set(records.map(\.id))
            try await adapter.apply(changes)
            try expectEqual(
                values(try await harness.storedRecords(in: adapter)), values(Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0) })),
                "stored records")
            let state = try await adapter.localState(for: records.map(\.id))
            for record in records {
                try expectEqual(state[record.id]?.metadata, metadata("tag-t2", for: record), "metadata of \(record.id.recordName)")
            }
            try expectEqual(try await adapter.loadZoneState(), zoneState("t2"), "zone state")
            try expectEqual(try await adapter.pendingChangeCount(), 0, "nothing pending")
        },
        AdapterConformanceCase("a failure in the middle of apply leaves data, metadata and token as they were") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("a", title: "A")], marker: "t1"))
            let before = try await harness.storedRecords(in: adapter)
            var failing = download(
                [note("a", title: "changed"), harness.recordThatFailsToApply(zone: zone), note("c", title: "C")],
                marker: "t2", deletes: [])
            failing.state.metadata[note("a", title: "").id] = metadata("tag-t2", for: note("a", title: "changed"))
            var threw = false
            do { try await adapter.apply(failing) } catch { threw = true }
            try expect(threw, "apply of a record the store refuses throws")
            try expectEqual(values(try await harness.storedRecords(in: adapter)), values(before), "records after a failed apply")
            try expectEqual(try await adapter.loadZoneState(), zoneState("t1"), "the token did not move")
            let state = try await adapter.localState(for: [note("a", title: "").id])
            try expectEqual(state.values.first?.metadata, metadata("tag-t1", for: note("a", title: "A")), "metadata after a failed apply")
        },
        AdapterConformanceCase("remote deletes remove the record and its metadata") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            let records = [note("a", title: "A"), note("b", title: "B")]
            try await adapter.apply(download(records, marker: "t1"))
            try await adapter.apply(download([], marker: "t2", deletes: [records[0].id]))
            let stored = try await harness.storedRecords(in: adapter)
            try expectEqual(Set(stored.keys), [records[1].id], "records after a remote delete")
            try expectEqual(try await adapter.hasChanges(), false, "a remote delete is not a local change")
            try expectEqual(try await adapter.syncedRecordIDs(), [records[1].id], "synced records after a remote delete")
        },
        AdapterConformanceCase("reset keeps the data as pending changes, or clears it, as asked") { harness in
            let keep = try await harness.makeAdapter(zone: zone)
            let records = [note("a", title: "A"), note("b", title: "B")]
            try await keep.apply(download(records, marker: "t1"))
            try await keep.resetSyncState(keepData: true)
            try expectEqual(try await keep.loadZoneState(), nil, "zone state after reset")
            try expect(try await keep.syncedRecordIDs().isEmpty, "metadata after reset")
            try expectEqual(Set(try await harness.storedRecords(in: keep).keys), Set(records.map(\.id)), "data kept")
            let pending = try await keep.pendingChanges(limit: 10)
            try expectEqual(Set(pending.saves.map(\.record.id)), Set(records.map(\.id)), "every kept record is pending")
            try expect(pending.saves.allSatisfy { $0.metadata == nil }, "pending records have no metadata after reset")

            let clear = try await harness.makeAdapter(zone: zone)
            try await clear.apply(download(records, marker: "t1"))
            try await harness.saveLocally(note("c", title: "C"), in: clear)
            try await clear.resetSyncState(keepData: false)
            try expect(try await harness.storedRecords(in: clear).isEmpty, "data cleared")
            try expectEqual(try await clear.hasChanges(), false, "nothing pending after clearing")
            try expectEqual(try await clear.loadZoneState(), nil, "zone state after clearing")
        },
    ]
}
