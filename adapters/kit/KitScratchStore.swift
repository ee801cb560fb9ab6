import GatewayCore

/// A kit adapter over a scratch store, for the conformance check: edits "by another program" go
/// straight to the store, behind the kit's back.
public struct KitScratchStore: ScratchStore {
    /// The kit adapter the conformance suite drives.
    public let kit: KitAdapter
    private let failingRecord: @Sendable (ZoneID) -> Record

    /// - Parameters:
    ///   - kit: the kit adapter under test, over a store this harness may also edit directly.
    ///   - failingRecord: a `Note` the store refuses to write.
    public init(kit: KitAdapter, failingRecord: @escaping @Sendable (ZoneID) -> Record) {
        self.kit = kit
        self.failingRecord = failingRecord
    }

    public var adapter: any ModelAdapter { kit }

    public func saveLocally(_ record: Record) async throws {
        try await kit.store.writeAsAnotherProgram(saves: [record], deletes: [])
    }

    public func deleteLocally(_ id: RecordID) async throws {
        let listing = try await kit.store.list(since: nil)
        let keys = listing.entries.map(\.key).filter { $0.recordName == id.recordName }
        if !keys.isEmpty { try await kit.store.writeAsAnotherProgram(saves: [], deletes: keys) }
    }

    public func storedRecords() async throws -> [RecordID: Record] {
        let listing = try await kit.store.list(since: nil)
        var records: [RecordID: Record] = [:]
        let unread = listing.entries.filter { $0.record == nil }.map(\.key)
        let read = unread.isEmpty ? [] : try await kit.store.read(unread)
        for entry in listing.entries + read {
            guard var record = entry.record else { continue }
            record.id = RecordID(recordName: entry.key.recordName, zoneID: kit.zoneID)
            records[record.id] = record
        }
        return records
    }

    public func recordThatFailsToApply(zone: ZoneID) -> Record { failingRecord(zone) }

    public var detectsChangesByScanning: Bool { true }

    public func close() async { await kit.close() }
}
