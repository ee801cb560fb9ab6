import Foundation
import Synchronization

/// Turns records between the form a store holds and the form the zone holds, per record type:
/// what SyncKit's record processing delegate does ("remove specific fields from your records
/// before they're sent to CloudKit; read and write files from the file system to send them as
/// CKAssets").
///
/// The synchronizer sees only the zone's form (``ProcessingAdapter``): merges, fingerprints and
/// encryption work on it, so processors run before encryption and asset extraction on the way
/// out and after them on the way in. A processor must be a bijection on the records it meets
/// (what goes out comes back as it was), or a store would see its own writes as edits.
public protocol RecordProcessor: Sendable {
    /// The store's `record` as the zone holds it.
    /// - Throws: ``RecordProcessorError`` when the record cannot be sent as it is (a path naming
    ///   no file): the adapter's sync stops with it, naming the record, and nothing is lost.
    func outgoing(_ record: Record) throws -> Record
    /// The zone's `record` as the store holds it.
    /// - Throws: ``RecordProcessorError`` when it cannot be held (a file that cannot be written):
    ///   the page is not applied, and its download is tried again next sync.
    func incoming(_ record: Record) throws -> Record
}

/// `rename`: the store's field `storeName` is the zone's field `zoneName`. A field the store also
/// holds under `zoneName` is not synced (the renamed one takes its place), and a zone field
/// named `storeName` is not written to the store.
public struct RenameFieldProcessor: RecordProcessor {
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
public struct FileReferenceProcessor: RecordProcessor {
    /// The field holding a path in the store, the file's contents in the zone.
    public let field: String
    /// The folder the paths are relative to, absolute.
    public let folder: URL

    /// Files under `folder` (an absolute path) for `field`.
    public init(field: String, folder: URL) {
        self.field = field
        self.folder = folder.standardizedFileURL
    }

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
        return Self.record(record, named)
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
        return Self.record(record, named)
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

    private static func record(_ original: Record, _ named: [String: FieldValue?]) -> Record {
        var record = Record(id: original.id, recordType: original.recordType, changeTag: original.changeTag, namedFields: named)
        record.modifiedAt = original.modifiedAt
        record.createdAt = original.createdAt
        return record
    }
}

/// A decorator that runs each record type's processors between its store and the synchronizer:
/// in order on the way out (``ModelAdapter/pendingChanges(limit:after:)``,
/// ``ModelAdapter/localState(for:)``), in reverse order on the way in
/// (``ModelAdapter/apply(_:)``).
public struct ProcessingAdapter: ForwardingAdapter {
    private let target: any ModelAdapter
    private let processors: [String: [any RecordProcessor]]

    /// `target` with `processors` by record type.
    public init(_ target: any ModelAdapter, processors: [String: [any RecordProcessor]]) {
        self.target = target
        self.processors = processors
    }

    /// The store's adapter's name.
    public var name: String { target.name }
    /// The store's adapter's zone.
    public var zoneID: ZoneID { target.zoneID }

    /// The store's adapter.
    public func forwardingTarget() async throws -> any ModelAdapter { target }

    func outgoing(_ record: Record) throws -> Record {
        guard let chain = processors[record.recordType] else { return record }
        return try chain.reduce(record) { try $1.outgoing($0) }
    }

    func incoming(_ record: Record) throws -> Record {
        guard let chain = processors[record.recordType] else { return record }
        return try chain.reversed().reduce(record) { try $1.incoming($0) }
    }

    public func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        var pending = try await target.pendingChanges(limit: limit, after: version)
        for index in pending.saves.indices { pending.saves[index].record = try outgoing(pending.saves[index].record) }
        return pending
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        var states = try await target.localState(for: recordIDs)
        for (id, state) in states {
            guard let record = state.record else { continue }
            states[id]?.record = try outgoing(record)
        }
        return states
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        var changes = changes
        changes.writes = try changes.writes.map(incoming)
        try await target.apply(changes)
    }
}

/// A record a processor cannot send as the store holds it; the message names the record, the
/// field and what to do.
public struct RecordProcessorError: Error, CustomStringConvertible, FailureCoded {
    /// What is wrong, and what to do.
    public var message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
    /// `processorFailed`.
    public var failureCode: String { "processorFailed" }
    /// None: the processor found the problem itself.
    public var underlyingFailure: (any Error)? { nil }
}
