import GatewayCore
import Synchronization

/// Runs the adapter conformance suite against scratch stores: each case gets a new one from
/// `makeStore`.
public final class ScratchStoreHarness: AdapterConformanceHarness {
    private let makeStore: @Sendable (ZoneID) async throws -> any ScratchStore
    private let stores = Mutex<[any ScratchStore]>([])
    public let detectsChangesByScanning: Bool
    public let keepsFailureMarks: Bool
    public let signalsChanges: Bool

    /// - Parameters:
    ///   - scanning: whether the stores find edits by looking, as
    ///     ``AdapterConformanceHarness/detectsChangesByScanning`` says.
    ///   - keepsFailureMarks: as ``AdapterConformanceHarness/keepsFailureMarks`` says.
    ///   - signalsChanges: as ``AdapterConformanceHarness/signalsChanges`` says.
    ///   - makeStore: makes a fresh, empty store bound to a zone, once per conformance case. Its
    ///     adapter must be a class: the harness tells the stores apart by their adapters' identity.
    public init(
        scanning: Bool, keepsFailureMarks: Bool = true, signalsChanges: Bool = true,
        makeStore: @escaping @Sendable (ZoneID) async throws -> any ScratchStore
    ) {
        self.makeStore = makeStore
        detectsChangesByScanning = scanning
        self.keepsFailureMarks = keepsFailureMarks
        self.signalsChanges = signalsChanges
    }

    public func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        let store = try await makeStore(zone)
        stores.withLock { $0.append(store) }
        return store.adapter
    }

    public func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        try await store(of: adapter).saveLocally(record)
    }

    public func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        try await store(of: adapter).deleteLocally(id)
    }

    public func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        try await store(of: adapter).storedRecords()
    }

    public func recordThatFailsToApply(zone: ZoneID) -> Record {
        stores.withLock { $0.first }?.recordThatFailsToApply(zone: zone)
            ?? Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: "Note")
    }

    /// Stops every store made so far.
    public func closeAll() async {
        let all = stores.withLock { stores in
            defer { stores = [] }
            return stores
        }
        for store in all { await store.close() }
    }

    private func store(of adapter: any ModelAdapter) throws -> any ScratchStore {
        let found = stores.withLock { stores in stores.last { ($0.adapter as AnyObject) === (adapter as AnyObject) } }
        return try unwrap(found, "the harness made adapter \(adapter.name) (a scratch store's adapter must be a class: the harness tells stores apart by identity)")
    }
}
