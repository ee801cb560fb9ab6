import Foundation
import Synchronization

/// Turns records between the form a store holds and the form the zone holds: what SyncKit's
/// record processing delegate does ("remove specific fields from your records before they're
/// sent to CloudKit; read and write files from the file system to send them as CKAssets").
///
/// The synchronizer sees only the zone's form (``ProcessingAdapter``): merges, fingerprints and
/// encryption work on it, so processors run before encryption and asset extraction on the way
/// out and after them on the way in. Records come in batches of one record type. A processor
/// must give back every record of a batch, in order, under its own name and type, and must undo
/// on the way in what it did on the way out (a store's record that goes out and comes back is the
/// record it was), or a store would see its own writes as edits. A field it computes on the way
/// out and leaves out on the way in fits that rule.
public protocol RecordProcessor: Sendable {
    /// The store's `records` as the zone holds them.
    /// - Throws: ``RecordProcessorError`` when a record cannot be sent as it is (a path naming
    ///   no file, a processor process that failed): the adapter's sync stops with it, naming the
    ///   record, and nothing is lost.
    func outgoing(_ records: [Record]) async throws -> [Record]
    /// The zone's `records` as the store holds them.
    /// - Throws: ``RecordProcessorError`` when one cannot be held (a file that cannot be
    ///   written): the page is not applied, and its download is tried again next sync.
    func incoming(_ records: [Record]) async throws -> [Record]
    /// Stops what the processor runs (a process); called when its adapter closes.
    func close() async
    /// Whether ``ProcessingAdapter`` checks, each time records go out, that they come back as they
    /// were (`incoming` of what `outgoing` answered). A processor that loses a field on that
    /// round trip would have a downloaded record empty the store's value, or make the stores
    /// differ without a sign; the check stops the adapter's upload instead.
    var checksRoundTrips: Bool { get }
}

extension RecordProcessor {
    /// Nothing to stop.
    public func close() async {}
    /// A processor's round trips are checked unless it says otherwise.
    public var checksRoundTrips: Bool { true }
}

/// A processor that changes one record at a time, without waiting: the built-in ones.
public protocol PerRecordProcessor: RecordProcessor {
    /// The store's `record` as the zone holds it; the batch form, `outgoing(_ records:)`, maps
    /// each record through it.
    func outgoing(_ record: Record) throws -> Record
    /// The zone's `record` as the store holds it; the batch form, `incoming(_ records:)`, maps
    /// each record through it.
    func incoming(_ record: Record) throws -> Record
}

extension PerRecordProcessor {
    /// Each record through the single-record `outgoing`.
    public func outgoing(_ records: [Record]) throws -> [Record] { try records.map { try outgoing($0) } }
    /// Each record through the single-record `incoming`.
    public func incoming(_ records: [Record]) throws -> [Record] { try records.map { try incoming($0) } }
}

/// `rename`: the store's field `storeName` is the zone's field `zoneName`. A field the store also
/// holds under `zoneName` is not synced (the renamed one takes its place), and a zone field
/// named `storeName` is not written to the store.
public struct RenameFieldProcessor: PerRecordProcessor {
    /// The field's name in the store.
    public let storeName: String
    /// The field's name in the zone.
    public let zoneName: String
    private let outgoingLayouts = LayoutRenames()
    private let incomingLayouts = LayoutRenames()

    /// Renames `storeName` to `zoneName` on the way out, and back on the way in.
    public init(storeName: String, zoneName: String) {
        self.storeName = storeName
        self.zoneName = zoneName
    }

    /// A rename is a round trip by construction; it is not checked.
    public var checksRoundTrips: Bool { false }

    public func outgoing(_ record: Record) -> Record {
        outgoingLayouts.rename(record, from: storeName, to: zoneName)
    }

    public func incoming(_ record: Record) -> Record {
        incomingLayouts.rename(record, from: zoneName, to: storeName)
    }
}

/// Renamed layouts by source layout, so the records of one shape keep sharing one layout (the
/// stores map a layout onto their columns once, not once per record).
private final class LayoutRenames: Sendable {
    private let cache = Mutex<[RecordLayout: (layout: RecordLayout, positions: [Int])]>([:])

    func rename(_ record: Record, from old: String, to new: String) -> Record {
        guard record.layout.position(of: old) != nil || record.layout.position(of: new) != nil else { return record }
        let (layout, positions) = cache.withLock { cache in
            if let known = cache[record.layout] { return known }
            if cache.count >= 1_024 { cache.removeAll(keepingCapacity: true) }
            var names: [String] = []
            var positions: [Int] = []
            for (position, name) in record.layout.fieldNames.enumerated() where name != new {
                names.append(name == old ? new : name)
                positions.append(position)
            }
            let renamed = (layout: RecordLayout(names), positions: positions)
            cache[record.layout] = renamed
            return renamed
        }
        return Record(
            id: record.id, recordType: record.recordType, changeTag: record.changeTag, layout: layout,
            values: positions.map { record[position: $0] }, modifiedAt: record.modifiedAt, createdAt: record.createdAt)
    }
}

/// `file_reference`: the store's `field` holds the path of a file under `folder` (relative to
/// it); the zone holds the file's contents (bytes, sent as an asset). On the way in, the contents
/// are written to `folder/<SHA-256 of the contents>` (content-addressed: a file already there is
/// the same bytes and is not written again) and the field gets that name.
///
/// A path that is absolute, climbs out of the folder (`..`, or a link pointing out of it), or
/// names no readable file is left
/// out of the outgoing record: unknown to the zone, which keeps its value (a missing file is not
/// a clear). An empty field is null both ways. A value of another type passes through unchanged.
public struct FileReferenceProcessor: PerRecordProcessor {
    /// The field holding a path in the store, the file's contents in the zone.
    public let field: String
    /// The folder the paths are relative to, absolute.
    public let folder: URL

    /// Files under `folder` (an absolute path) for `field`.
    public init(field: String, folder: URL) {
        self.field = field
        self.folder = folder.standardizedFileURL
    }

    /// Not checked: a path comes back as its content's name, on purpose.
    public var checksRoundTrips: Bool { false }

    public func outgoing(_ record: Record) throws -> Record {
        guard case .string(let path)? = record[field] else { return record }
        guard let file = resolve(path) else {
            throw RecordProcessorError(
                "record \(record.id.recordName): field \(field) names '\(path)', which is not a path inside \(folder.path) (absolute, or leading out of it); fix or clear it")
        }
        guard let contents = FileManager.default.contents(atPath: file.path) else {
            throw RecordProcessorError(
                "record \(record.id.recordName): field \(field) names '\(path)', which is not a readable file in \(folder.path); fix the path, put the file there, or clear the field")
        }
        var named = Self.namedFields(of: record)
        named[field] = .some(.bytes(contents))
        return record.withFields(named)
    }

    public func incoming(_ record: Record) throws -> Record {
        guard case .bytes(let contents)? = record[field] else { return record }
        let name = AssetChecksum.of(contents)
        let file = folder.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: file.path) {
            do {
                try Self.write(contents, to: file, in: folder)
            } catch {
                // Left out, the field would empty the store's column: nothing is applied instead.
                throw RecordProcessorError("record \(record.id.recordName): field \(field): cannot write \(file.path) (\(error.localizedDescription)); check the folder")
            }
        }
        var named = Self.namedFields(of: record)
        named[field] = .some(.string(name))
        return record.withFields(named)
    }

    /// The file `path` names under the folder, or `nil` when it would be outside it.
    func resolve(_ path: String) -> URL? {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.split(separator: "/").contains("..") else { return nil }
        // Links are followed before the check: one inside the folder may point out of it.
        let file = folder.appendingPathComponent(path).standardizedFileURL.resolvingSymlinksInPath()
        guard file.path.hasPrefix(folder.resolvingSymlinksInPath().path + "/") else { return nil }
        return file
    }

    private static func write(_ contents: Data, to file: URL, in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try contents.write(to: file, options: .atomic)
    }

    private static func namedFields(of record: Record) -> [String: FieldValue?] {
        var named: [String: FieldValue?] = [:]
        for (position, name) in record.layout.fieldNames.enumerated() { named[name] = .some(record[position: position]) }
        return named
    }


}

/// A decorator that runs processors between its store and the synchronizer: each record
/// type's own, then those of every record type (the adapter's `processors`), in order on the way
/// out (``ModelAdapter/pendingChanges(limit:after:)``, ``ModelAdapter/localState(for:)``), in
/// reverse order on the way in (``ModelAdapter/apply(_:)``). Closing it closes its processors.
public struct ProcessingAdapter: ForwardingAdapter {
    private let target: any ModelAdapter
    private let processors: [String: [any RecordProcessor]]
    private let everyType: [any RecordProcessor]

    /// `target` with `processors` by record type, and `everyType` after them for any type.
    public init(_ target: any ModelAdapter, processors: [String: [any RecordProcessor]], everyType: [any RecordProcessor] = []) {
        self.target = target
        self.processors = processors
        self.everyType = everyType
    }

    /// The store's adapter's name.
    public var name: String { target.name }
    /// The store's adapter's zone.
    public var zoneID: ZoneID { target.zoneID }

    /// The store's adapter.
    public func forwardingTarget() async throws -> any ModelAdapter { target }

    private func chain(for recordType: String) -> [any RecordProcessor] {
        (processors[recordType] ?? []) + everyType
    }

    /// `records` through `step` of each processor of their type, a batch per type, in their order.
    private func process(
        _ records: [Record], reversed: Bool, _ step: (any RecordProcessor, [Record]) async throws -> [Record]
    ) async throws -> [Record] {
        guard let first = records.first?.recordType else { return records }
        // Most pages hold one record type: they go through as they are, without regrouping.
        if records.allSatisfy({ $0.recordType == first }) {
            return try await run(records, of: first, reversed: reversed, step)
        }
        var positions: [String: [Int]] = [:]
        for (index, record) in records.enumerated() { positions[record.recordType, default: []].append(index) }
        var processed = records
        for (recordType, indices) in positions {
            let batch = try await run(indices.map { records[$0] }, of: recordType, reversed: reversed, step)
            for (index, record) in zip(indices, batch) { processed[index] = record }
        }
        return processed
    }

    /// `batch`, all of `recordType`, through that type's chain.
    private func run(
        _ batch: [Record], of recordType: String, reversed: Bool, _ step: (any RecordProcessor, [Record]) async throws -> [Record]
    ) async throws -> [Record] {
        let chain = chain(for: recordType)
        var batch = batch
        for processor in reversed ? chain.reversed() : chain {
            let answer = try await step(processor, batch)
            guard answer.count == batch.count else {
                throw RecordProcessorError("a processor answered \(answer.count) records to \(batch.count) of type \(recordType)")
            }
            batch = answer
        }
        return batch
    }

    public func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        var pending = try await target.pendingChanges(limit: limit, after: version)
        let records = try await process(pending.saves.map(\.record), reversed: false, Self.outgoingChecked)
        for index in pending.saves.indices { pending.saves[index].record = records[index] }
        return pending
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        var states = try await target.localState(for: recordIDs)
        let held = states.compactMap { id, state in state.record.map { (id, $0) } }
        let records = try await process(held.map(\.1), reversed: false, Self.outgoingChecked)
        for ((id, _), record) in zip(held, records) { states[id]?.record = record }
        return states
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        var changes = changes
        changes.writes = try await process(changes.writes, reversed: true) { try await $0.incoming($1) }
        try await target.apply(changes)
    }

    /// `records` through `processor` on the way out; when it ``RecordProcessor/checksRoundTrips``,
    /// its answer also goes back in, and each record must come back with the values it had.
    /// - Throws: ``RecordProcessorError`` naming the first record and field that do not.
    static func outgoingChecked(_ processor: any RecordProcessor, _ records: [Record]) async throws -> [Record] {
        let sent = try await processor.outgoing(records)
        guard processor.checksRoundTrips, sent.count == records.count else { return sent }
        let back = try await processor.incoming(sent)
        guard back.count == records.count else {
            throw RecordProcessorError("\(processor) answered \(back.count) records on the way in to \(records.count) on the way out")
        }
        for (original, returned) in zip(records, back) where !returned.hasSameFields(as: original) {
            if let field = firstDifference(original, returned) {
                throw RecordProcessorError(
                    "record \(original.id.recordName): \(processor) does not give field '\(field)' back on the way in as it took it on the way out; "
                        + "a downloaded record would change the store's value. Make the processor undo on the way in what it does on the way out "
                        + "(to keep a column out of sync, use exclude instead); nothing of this record was sent")
            }
        }
        return sent
    }

    /// The first field (by name) whose value differs between `a` and `b` (which differ, by
    /// ``Record/hasSameFields(as:)``); an empty field and one not named are alike.
    static func firstDifference(_ a: Record, _ b: Record) -> String? {
        var values: [String: FieldValue] = [:]
        a.forEachField { name, value in values[name] = value }
        var differing: [String] = []
        b.forEachField { name, value in
            if values.removeValue(forKey: name) != value { differing.append(name) }
        }
        return (differing + values.keys).min()
    }

    /// Closes the processors, then the store's adapter.
    public func close() async {
        for processor in processors.values.flatMap({ $0 }) + everyType { await processor.close() }
        await target.close()
    }
}

/// A record a processor cannot send or take as it is, or a processor that failed; the message
/// names the record, the field or the processor, and what to do.
public struct RecordProcessorError: Error, CustomStringConvertible, FailureCoded {
    /// What is wrong, and what to do.
    public var message: String
    /// What failed underneath (a processor process's own failure), if anything.
    public var underlying: (any Error)?

    /// An error saying `message`, caused by `underlying`.
    public init(_ message: String, underlying: (any Error)? = nil) {
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }
    /// `processorFailed`.
    public var failureCode: String { "processorFailed" }
    /// None for failure codes: every processor failure is reported as `processorFailed` (what
    /// failed underneath, a process's exit say, is in ``message`` and ``underlying``), so one code
    /// covers a processor that stops an adapter.
    public var underlyingFailure: (any Error)? { nil }
}
