import AdapterKit
import Foundation
import GatewayCore
import GatewayTesting
import Synchronization
import Testing

/// The synchronizer reads the next page's local state while the store writes the page before it.
/// The kit answers that from its state alone when the store holds none of the records, without
/// waiting for the write; otherwise the store must be read, after the write.
@Suite("Kit: local state read beside a page's write")
struct KitLocalStateBesideApplyTests {
    static let zone = ZoneID(zoneName: "Notes")

    static func record(_ name: String, title: String) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: ["title": .string(title)])
    }

    static func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: zone) }

    // Should the read wait for the write after all, it would wait for ever: the time limit fails
    // the test instead of hanging the run.
    @Test(
        "records the store does not hold are answered while the write waits; a held one after it, as the store holds it then",
        .timeLimit(.minutes(1)))
    func besideApply() async throws {
        let directory = try TemporaryDirectory(prefix: "kit-beside")
        let store = HeldWriteStore()
        let adapter = try KitAdapter(
            configuration: KitAdapterConfiguration(name: "notes", zoneID: Self.zone, statePath: directory.path("state.sqlite")), store: store)
        defer { Task { await adapter.close() } }

        // "gone" is synced, then deleted in the store: a pending delete with metadata. "held" is
        // synced and still held.
        let metadata = Data("system fields".utf8)
        try await adapter.apply(
            DownloadedChanges(
                writes: [Self.record("gone", title: "a"), Self.record("held", title: "b")],
                state: SyncStateUpdate(metadata: [Self.id("gone"): metadata, Self.id("held"): metadata], zoneState: Data("z1".utf8))))
        store.remove("gone")
        #expect(try await adapter.pendingChangeCount() == 1)

        store.holdWrites()
        let applying = Task {
            try await adapter.apply(
                DownloadedChanges(
                    writes: [Self.record("page", title: "c"), Self.record("held", title: "from the cloud")],
                    state: SyncStateUpdate(metadata: [Self.id("page"): metadata, Self.id("held"): metadata], zoneState: Data("z2".utf8))))
        }
        await store.writeStarted()

        // Not held by the store: answered from the kit's state while the write is still waiting.
        let states = try await adapter.localState(for: [Self.id("gone"), Self.id("fresh")])
        #expect(states.count == 1)
        #expect(states[Self.id("gone")]?.metadata == metadata)
        #expect(states[Self.id("gone")]?.pendingVersion != nil)
        #expect(states[Self.id("gone")]?.record == nil)
        #expect(store.writesFinished == 1)

        // Held by the store: its current form is read from the store, once the write is done.
        let heldState = Task { try await adapter.localState(for: [Self.id("held")]) }
        store.releaseWrites()
        try await applying.value
        let held = try await heldState.value
        #expect(store.writesFinished == 2)
        #expect(held[Self.id("held")]?.metadata == metadata)
        #expect(held[Self.id("held")]?.pendingVersion == nil)
    }
}

/// A store in memory whose writes can be held until the test lets them go.
final class HeldWriteStore: KitStore {
    private struct State {
        var records: [String: Record] = [:]
        var holding = false
        var released: CheckedContinuation<Void, Never>?
        var started: CheckedContinuation<Void, Never>?
        var writeHasStarted = false
        var finished = 0
        var failing = false
    }
    private let state = Mutex(State())

    /// Writes from now on wait for ``releaseWrites()``.
    func holdWrites() { state.withLock { $0.holding = true } }

    /// Lets a held write go on.
    func releaseWrites() {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.holding = false
            defer { state.released = nil }
            return state.released
        }
        waiting?.resume()
    }

    /// Returns once a held write has started.
    func writeStarted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.writeHasStarted { return true }
                state.started = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// The next write fails without writing anything, as a store that refuses it.
    func failNextWrite() { state.withLock { $0.failing = true } }

    /// The record the store holds under `name`.
    func record(_ name: String) -> Record? { state.withLock { $0.records[name] } }

    /// How many writes have finished.
    var writesFinished: Int { state.withLock { $0.finished } }

    /// Deletes a record behind the kit's back.
    func remove(_ name: String) { _ = state.withLock { $0.records.removeValue(forKey: name) } }

    func list(since cursor: String?) async throws -> KitListing {
        let records = state.withLock { Array($0.records.values) }
        return KitListing(
            entries: records.map { KitEntry(key: KitRecordKey(recordName: $0.id.recordName, recordType: $0.recordType), record: $0) },
            isComplete: true)
    }

    func read(_ keys: [KitRecordKey]) async throws -> [KitEntry] {
        let records = state.withLock { $0.records }
        return keys.compactMap { key in records[key.recordName].map { KitEntry(key: key, record: $0) } }
    }

    func write(saves: [Record], deletes: [KitRecordKey]) async throws -> [KitEntry] {
        let (hold, started) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.holding else { return (false, nil) }
            state.writeHasStarted = true
            defer { state.started = nil }
            return (true, state.started)
        }
        started?.resume()
        if hold {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if !state.holding { return true }
                    state.released = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }
        try state.withLock { state in
            if state.failing {
                state.failing = false
                throw KitAdapterError(.storeFailed, "the store refused the write")
            }
            for record in saves { state.records[record.id.recordName] = record }
            for key in deletes { state.records.removeValue(forKey: key.recordName) }
            state.finished += 1
        }
        return []
    }
}
