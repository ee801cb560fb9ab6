import AdapterKit
import Foundation
import GatewayCore

/// A store kept as one JSON file holding every record: the smallest useful `KitStore`. The kit
/// keeps all sync state, so the store only lists, reads and writes.
/// Record names must be printable ASCII, a rule of this store (the conformance check needs one
/// record the store refuses).
final class RecordsFileStore: KitStore {
    let path: String
    let recordTypes: Set<String>
    /// One operation at a time touches the file.
    private let gate = KitGate()

    init(path: String, recordTypes: Set<String>) {
        self.path = path
        self.recordTypes = recordTypes
    }

    func list(since cursor: String?) async throws -> KitListing {
        let records = try await gate.run { try load() }
        // In name order, so the changes one look finds are queued in the same order every time.
        let entries = records.values.sorted { $0.id.recordName < $1.id.recordName }.map(Self.entry)
        return KitListing(entries: entries, isComplete: true)
    }

    func read(_ keys: [KitRecordKey]) async throws -> [KitEntry] {
        let records = try await gate.run { try load() }
        return keys.compactMap { records[$0.recordName].map(Self.entry) }
    }

    func write(saves: [Record], deletes: [KitRecordKey]) async throws -> [KitEntry] {
        if let bad = saves.first(where: { !$0.id.recordName.unicodeScalars.allSatisfy { (32...126).contains($0.value) } }) {
            throw RecordsFileError(message: "\(path) takes printable ASCII record names only; record \(bad.id.recordName) was not written")
        }
        try await gate.run {
            var records = try load()
            for record in saves { records[record.id.recordName] = record }
            for key in deletes { records[key.recordName] = nil }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            // Atomic: a crash leaves the old file or the new one, never half of one.
            let file = URL(fileURLWithPath: path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try encoder.encode(records.values.sorted { $0.id.recordName < $1.id.recordName }).write(to: file, options: .atomic)
        }
        return []
    }

    func servedRecordTypes() async throws -> Set<String>? { recordTypes }

    private func load() throws -> [String: Record] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        let records = try JSONDecoder().decode([Record].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        return Dictionary(records.map { ($0.id.recordName, $0) }, uniquingKeysWith: { _, last in last })
    }

    private static func entry(_ record: Record) -> KitEntry {
        KitEntry(key: KitRecordKey(recordName: record.id.recordName, recordType: record.recordType), record: record)
    }
}

/// A record the file cannot take; nothing of the write happened.
struct RecordsFileError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
