import AdapterKit
import Crypto
import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder of JSON documents as a ``KitStore``: config repositories, content folders, exports.
///
/// A record's version is a hash of its JSON object, so the kit logs a change only for records
/// whose content changed, even when a collection file holding many was rewritten. Listing costs
/// one `stat` per unchanged file (``JSONFolderIndex`` remembers what each file held). A document
/// that is not valid JSON is a problem naming its line and column: its records keep the values
/// last read, it is never uploaded, deleted or overwritten, and the other files keep syncing.
/// Files are written atomically (temporary file, fsync, rename) in a stable form; record names
/// from the cloud become safe file names (``SafeFileName``).
public struct JSONFolderStore: KitStore {
    /// The folder.
    public let directory: String
    public let layout: JSONFilesAdapterConfiguration.Layout
    let root: URL
    /// `root.path` once: computing it per file costs a tenth of a rescan of 100,000 files.
    let rootPath: String
    let mapping: JSONFieldMapping
    let index: JSONFolderIndex
    /// A test's seam: runs once a write has prepared its documents, before it moves any into place
    /// (where another program's edit meanwhile must be found).
    var afterPreparing: (@Sendable () -> Void)?

    /// Opens the folder, which must exist, with its index at `indexPath` (created when missing).
    public init(directory: String, layout: JSONFilesAdapterConfiguration.Layout, zoneID: ZoneID, indexPath: String) throws {
        self.directory = directory
        self.layout = layout
        root = URL(fileURLWithPath: directory).standardizedFileURL
        rootPath = root.path
        mapping = JSONFieldMapping(directory: root, zoneID: zoneID)
        do {
            index = try JSONFolderIndex(path: indexPath)
        } catch {
            throw JSONFilesAdapterError(
                .fileFailed, "cannot open the file index of \(directory): \(SQLiteFailureReason.describe(error, path: indexPath))", underlying: error)
        }
    }

    // MARK: KitStore

    /// Lists after a scan: with a cursor of this index, only the records stamped since (and
    /// those removed since); a complete listing without one, or when a file's problem appeared or
    /// went away (a fixed collection file's problem is named after the file, not a record).
    public func list(since cursor: String?) async throws -> KitListing {
        try await indexWrite { db, store in
            try store.scan(db)
            let generation = try JSONFolderIndex.generation(db)
            var since: Int64?
            if let cursor, let colon = cursor.lastIndex(of: ":"), cursor[..<colon] == generation.identity {
                since = Int64(cursor[cursor.index(after: colon)...])
            }
            let complete = since == nil || generation.problemsChanged
            var entries: [KitEntry] = []
            let rows = try Row.fetchCursor(
                db, sql: "SELECT record_name, record_type, hash FROM records WHERE generation > ?", arguments: [complete ? Int64.min : since!])
            while let row = try rows.next() {
                entries.append(KitEntry(key: KitRecordKey(recordName: row[0], recordType: row[1]), record: nil, version: row[2]))
            }
            let deleted =
                complete
                ? []
                : try String.fetchAll(
                    db, sql: "SELECT r.record_name FROM removed r WHERE r.generation > ? AND NOT EXISTS (SELECT 1 FROM records x WHERE x.record_name = r.record_name)",
                    arguments: [since!])
            var problems: [KitProblem] = []
            for row in try Row.fetchAll(
                db, sql: "SELECT path, problem, COALESCE(problem_code, 'invalidJSON') FROM files WHERE problem IS NOT NULL ORDER BY path")
            {
                let path: String = row[0]
                let names = store.layout == .filePerRecord ? try Array(JSONFolderIndex.records(in: path, db: db).keys) : []
                for name in names.isEmpty ? [store.recordName(forFile: path)] : names {
                    problems.append(KitProblem(recordName: name, code: row[2], message: row[1]))
                }
            }
            try JSONFolderIndex.reportRolledBack(&entries, db: db)
            try JSONFolderIndex.advance(past: since, db: db)
            return KitListing(
                entries: entries, deleted: deleted, problems: problems, isComplete: complete,
                cursor: "\(generation.identity):\(generation.value)")
        }
    }

    public func read(_ keys: [KitRecordKey]) async throws -> [KitEntry] {
        try await indexWrite { db, store in
            // Paths and names by bytes, as the file system tells them apart (see ExactText).
            var byPath: [ExactText.Key: (type: String, names: [String])] = [:]
            for key in keys {
                let path = try JSONFolderIndex.place(of: key.recordName, db: db)?.path ?? store.newPath(for: key)
                byPath[ExactText.Key(path), default: (key.recordType, [])].names.append(key.recordName)
            }
            var entries: [KitEntry] = []
            for (pathKey, wanted) in byPath.sorted(by: { $0.key.text < $1.key.text }) {
                let path = pathKey.text
                // A file-per-record document holds the record it was looked up by.
                let knownName = store.layout == .filePerRecord ? wanted.names.first : nil
                guard let document = try store.current(path: path, recordType: wanted.type, knownName: knownName, db: db) else {
                    // Invalid: the records keep the versions last read, so nothing looks changed
                    // (or deleted) until the file is fixed; their values are not offered.
                    let known = try JSONFolderIndex.records(in: path, db: db)
                    for name in wanted.names {
                        if let hash = known[name] {
                            entries.append(KitEntry(key: KitRecordKey(recordName: name, recordType: wanted.type), record: nil, version: hash))
                        }
                    }
                    continue
                }
                // By bytes: a collection's objects are keyed by `String`, which would hand the
                // record "é" (composed) to a read of "e\u{301}", a record it does not hold.
                var objects: [RecordName: [String: JSONValue]] = [:]
                if store.layout == .collection {
                    for (key, object) in document.objects { objects[RecordName(key)] = object }
                }
                for name in wanted.names {
                    let found = store.layout == .collection ? objects[RecordName(name)] : document.objects[name]
                    guard let object = found, let fields = try? store.mapping.namedFields(of: object) else { continue }
                    entries.append(
                        KitEntry(
                            key: KitRecordKey(recordName: name, recordType: document.type),
                            record: Record(id: RecordID(recordName: name, zoneID: store.mapping.zoneID), recordType: document.type, namedFields: fields),
                            version: store.version(of: object)))
                }
            }
            try JSONFolderIndex.reportRolledBack(&entries, db: db)
            return entries
        }
    }

    public func write(saves: [GatewayCore.Record], deletes: [KitRecordKey]) async throws -> [KitEntry] {
        // Clouds refuse NUL in names (CloudKit does); one arriving anyway is refused whole.
        for record in saves where record.id.recordName.utf8.contains(0) || record.recordType.utf8.contains(0) {
            throw JSONFilesAdapterError(
                .unwritableName, "record \(SafeFileName.encode(record.id.recordName)) of type \(SafeFileName.encode(record.recordType)) has a NUL character in its name; nothing was written")
        }
        return try await indexWrite { db, store in try store.writeDocuments(saves, deletes: deletes, db: db) }
    }

    // MARK: Identity

    /// The folder keeps the kit's identity marker in `.gateway/store.json`: a folder restored
    /// from a copy (`cp -a`) brings back the older marker, a new or replaced folder has none.
    public func keepsIdentity() async throws -> Bool { true }

    /// Where the identity marker lives: inside the folder, so it travels with every copy of it.
    var identityURL: URL { root.appendingPathComponent(".gateway/store.json") }

    public func readIdentity() async throws -> KitStoreIdentity? {
        guard let data = FileManager.default.contents(atPath: identityURL.path) else { return nil }
        guard case .object(let members)? = try? JSONValue.parse(data, numbers: .exact),
            case .string(let store)? = members["store"], case .integer(let epoch)? = members["epoch"]
        else {
            // A damaged marker says nothing about which store this is: the folder joins again,
            // which loses nothing.
            return nil
        }
        return KitStoreIdentity(store: store, epoch: epoch)
    }

    public func writeIdentity(_ identity: KitStoreIdentity) async throws {
        let text = JSONValue.object(["store": .string(identity.store), "epoch": .integer(identity.epoch)]).prettyText()
        do {
            try AtomicFile.write(Data(text.utf8), to: identityURL)
        } catch {
            throw JSONFilesAdapterError(
                .fileFailed, Self.failureReason(error, indexPath: index.path, folder: root.path), underlying: error)
        }
    }

    // MARK: Files

    /// Runs `body` in one transaction of the index, naming the file on failure.
    private func indexWrite<T: Sendable>(_ body: @escaping @Sendable (Database, JSONFolderStore) throws -> T) async throws -> T {
        do {
            return try await index.queue.write { [self] db in try body(db, self) }
        } catch let error as JSONFilesAdapterError {
            throw error
        } catch {
            throw JSONFilesAdapterError(.fileFailed, Self.failureReason(error, indexPath: index.path, folder: root.path), underlying: error)
        }
    }

    /// What went wrong, naming the file: the index, or a document being written.
    static func failureReason(_ error: any Error, indexPath: String, folder: String) -> String {
        if error is DatabaseError { return SQLiteFailureReason.describe(error, path: indexPath) }
        let cocoa = error as NSError
        let path = (cocoa.userInfo[NSFilePathErrorKey] as? String) ?? (cocoa.userInfo[NSURLErrorKey] as? URL)?.path
        let posix = (cocoa.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
        let place = path ?? folder
        switch posix {
        case ENOSPC?, EDQUOT?: return "the disk holding \(place) is full; free space, then sync again (the documents were left as they were)"
        case EROFS?: return "\(place) cannot be written: its filesystem is mounted read-only"
        case EACCES?, EPERM?: return "\(place) cannot be written: permission denied to this user"
        default: return "\(place): \(cocoa.localizedDescription)"
        }
    }

    /// A file's size and modification time in nanoseconds, or `nil` when it is gone.
    static func stamp(path: String) -> JSONFolderIndex.Stamp? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    func stamp(_ path: String) -> JSONFolderIndex.Stamp? { Self.stamp(path: rootPath + "/" + path) }

    /// Whether two looks at a file saw the same file (or both no file).
    static func same(_ one: JSONFolderIndex.Stamp?, _ other: JSONFolderIndex.Stamp?) -> Bool {
        switch (one, other) {
        case (nil, nil): true
        case let (one?, other?): one == other
        default: false
        }
    }

    /// Whether the file's modification time was set rather than written: older than its status
    /// change time (which no program can set) by more than a second. A copy that keeps times
    /// (`cp -a`, `rsync -t`, `tar x`) or `touch -d` sets it; a write, even under a clock that was
    /// stepped back, stamps both alike (an atomic save's rename moves the status time by far less).
    static func timesWereSet(path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        let changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        return changed - modified > 1_000_000_000
    }

    /// The documents on disk: relative path (by bytes: "é.json" and "e\u{301}.json" are two files)
    /// → record type.
    func documentFiles() -> [ExactText.Key: String] {
        let manager = FileManager.default
        var files: [ExactText.Key: String] = [:]
        func isDocument(_ name: String) -> Bool { name.hasSuffix(".json") && !name.hasPrefix(".") }
        switch layout {
        case .collection:
            for name in (try? manager.contentsOfDirectory(atPath: root.path)) ?? [] where isDocument(name) {
                let base = String(name.dropLast(5))
                files[ExactText.Key(name)] = SafeFileName.decode(base) ?? base
            }
        case .filePerRecord:
            for folder in documentFolders() {
                let type = SafeFileName.decode(folder) ?? folder
                for name in (try? manager.contentsOfDirectory(atPath: rootPath + "/" + folder)) ?? [] where isDocument(name) {
                    files[ExactText.Key(folder + "/" + name)] = type
                }
            }
        }
        return files
    }

    /// The record-type folders of a file-per-record layout.
    func documentFolders() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).filter { folder in
            var isDirectory: ObjCBool = false
            return !folder.hasPrefix(".")
                && FileManager.default.fileExists(atPath: root.appendingPathComponent(folder).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }
    }

    /// The record name of a file-per-record document (or the record type of a collection).
    func recordName(forFile path: String) -> String {
        let file = String((path.split(separator: "/").last ?? Substring(path)).dropLast(5))
        return SafeFileName.decode(file) ?? file
    }

    /// Where a record the folder does not hold yet goes.
    func newPath(for key: KitRecordKey) -> String {
        switch layout {
        case .filePerRecord: return SafeFileName.encode(key.recordType) + "/" + SafeFileName.encode(key.recordName) + ".json"
        case .collection: return SafeFileName.encode(key.recordType) + ".json"
        }
    }

    /// The records a document holds, by name.
    /// - Throws: ``JSONValue/ParseError`` or ``JSONFilesAdapterError`` for a document that is not
    ///   what the layout needs.
    /// - Parameter knownName: the record a file-per-record document is known to hold (names too
    ///   long for a file name are shortened, so the file name alone does not give them back).
    func parse(path: String, knownName: String?) throws -> [String: [String: JSONValue]] {
        let data = try Data(contentsOf: root.appendingPathComponent(path))
        let value = try JSONValue.parse(data, numbers: .exact)
        guard case .object(let members) = value else { throw JSONFilesAdapterError(.invalidDocument, "\(path) does not hold a JSON object") }
        switch layout {
        case .filePerRecord:
            return [knownName ?? recordName(forFile: path): members]
        case .collection:
            var records: [String: [String: JSONValue]] = [:]
            for (name, member) in members {
                guard case .object(let fields) = member else {
                    throw JSONFilesAdapterError(.invalidDocument, "\(path): the entry of record \(name) is not a JSON object")
                }
                records[name] = fields
            }
            return records
        }
    }

    /// A record's version: the hash of its object and, where it names files with `$file`, of
    /// their sizes and modification times, so that editing such a file alone is an edit of the
    /// record.
    func version(of object: [String: JSONValue]) -> String {
        let files = JSONFieldMapping.linkedFiles(of: object)
        guard !files.isEmpty else { return Self.hash(object) }
        var text = JSONValue.object(object).prettyText()
        for file in files.sorted() {
            let stamp = linkedStamp(file)
            text += "\n\(file) \(stamp?.size ?? -1) \(stamp?.mtime ?? -1)"
        }
        return Data(SHA256.hash(data: Data(text.utf8)).prefix(16)).hexText
    }

    /// The stamp of a file a `$file` field names; `nil` when it is missing or not in the folder.
    func linkedStamp(_ file: String) -> JSONFolderIndex.Stamp? {
        mapping.resolve(file).flatMap { Self.stamp(path: $0.path) }
    }

    /// Whether a download may write a `$file` field's bytes to `file` for `document`: not when
    /// another document names the same file (its record would change too), nor when the file is
    /// a document itself (another record's, or this one's).
    func mayWriteLinkedFile(_ file: String, for document: String, db: Database) throws -> Bool {
        guard let url = mapping.resolve(file) else { return false }
        let inside = String(url.path.dropFirst(root.resolvingSymlinksInPath().path.count + 1))
        if try JSONFolderIndex.file(inside, db: db) != nil || inside.hasSuffix(".json") { return false }
        return try !JSONFolderIndex.isLinked(file, byOtherThan: document, db: db)
    }

    /// The files the `$file` fields of `objects` name, with their stamps now.
    func links(of objects: some Sequence<[String: JSONValue]>) -> [(file: String, stamp: JSONFolderIndex.Stamp?)] {
        Set(objects.flatMap(JSONFieldMapping.linkedFiles)).sorted().map { ($0, linkedStamp($0)) }
    }

    static func hash(_ object: [String: JSONValue]) -> String {
        // The first 16 bytes in lowercase hex: the same text earlier releases stored, so their state carries over.
        Data(SHA256.hash(data: Data(JSONValue.object(object).prettyText().utf8)).prefix(16)).hexText
    }

    static func problem(_ error: any Error, path: String) -> String {
        if let parse = error as? JSONParseError {
            return "\(path) line \(parse.line) column \(parse.column): \(parse.reason); fix the file, it is not synced until then"
        }
        if let adapterError = error as? JSONFilesAdapterError {
            // A twin's message says what to do already.
            return adapterError.message + (adapterError.code == .duplicateRecordName ? "; the record is not uploaded until then" : "; fix the file, it is not synced until then")
        }
        if let mapping = error as? JSONFieldMapping.Problem { return "\(path): \(mapping.message); fix the file, it is not synced until then" }
        return "\(path) cannot be read; fix the file, it is not synced until then"
    }

    /// Brings the index up to date with the folder. Unchanged files cost one `stat`.
    func scan(_ db: Database) throws {
        var known: [ExactText.Key: (stamp: JSONFolderIndex.Stamp, hasProblem: Bool)] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT path, size, mtime, problem IS NOT NULL FROM files")
        while let row = try rows.next() { known[ExactText.Key(row[0])] = ((row[1], row[2]), row[3]) }
        let onDisk = documentFiles()
        // Files gone first, so that a record moved to another file, or a file's twin removed
        // (below), finds its name free.
        for path in known.keys where onDisk[path] == nil {
            try JSONFolderIndex.removeFile(path.text, db: db)
        }
        var refreshed: Set<ExactText.Key> = []
        for (path, type) in onDisk.sorted(by: { $0.key.text < $1.key.text }) {
            guard let stamp = stamp(path.text) else { continue }
            // A file with a problem is read again even unchanged: its twin may have gone.
            if let previous = known[path], previous.stamp == stamp, !previous.hasProblem { continue }
            _ = try refresh(path: path.text, recordType: type, db: db)
            refreshed.insert(path)
        }
        // A document one of whose `$file` files changed is read again: that file's contents are
        // a field of its record.
        for link in try JSONFolderIndex.allLinks(db) where !Self.same(linkedStamp(link.file), link.stamp) {
            let path = ExactText.Key(link.document)
            guard let type = onDisk[path], refreshed.insert(path).inserted else { continue }
            _ = try refresh(path: link.document, recordType: type, db: db)
        }
    }

    /// A document as read: its record type and objects by record name.
    struct Document {
        var type: String
        var objects: [String: [String: JSONValue]]
    }

    /// A document as it is now: parsed as the index knows it when its stamp is unchanged (no
    /// index write), else refreshed (``refresh(path:recordType:db:)``).
    func current(path: String, recordType: String, knownName: String?, db: Database) throws -> Document? {
        guard let known = try JSONFolderIndex.file(path, db: db), known.problem == nil, let now = stamp(path), known.stamp == now
        else { return try refresh(path: path, recordType: recordType, db: db) }
        do {
            return Document(type: recordType, objects: try parse(path: path, knownName: knownName))
        } catch {
            return try refresh(path: path, recordType: recordType, db: db)  // changed within the stamp's resolution
        }
    }

    /// Reads a document whose stamp differs from the index's and records what it holds; returns
    /// it (empty when the file is gone). An invalid document keeps its records as they were and
    /// is remembered with its problem: `nil`.
    func refresh(path: String, recordType: String, db: Database) throws -> Document? {
        guard let stamp = stamp(path) else {
            try JSONFolderIndex.removeFile(path, db: db)
            return Document(type: recordType, objects: [:])
        }
        let knownNames = try JSONFolderIndex.records(in: path, db: db)
        let previousStamp = try JSONFolderIndex.file(path, db: db)?.stamp
        let objects: [String: [String: JSONValue]]
        do {
            objects = try parse(path: path, knownName: layout == .filePerRecord && knownNames.count == 1 ? knownNames.keys.first : nil)
            for object in objects.values { _ = try mapping.fields(of: object) }
            try refuseTwin(of: objects.keys, in: path, db: db)
        } catch {
            let twin = (error as? JSONFilesAdapterError)?.code == .duplicateRecordName
            try JSONFolderIndex.setFile(path, stamp: stamp, problem: Self.problem(error, path: path), code: twin ? "duplicateRecordName" : nil, db: db)
            return nil
        }
        let hashes = objects.mapValues(version(of:))
        if let previousStamp, stamp.mtime < previousStamp.mtime, Self.timesWereSet(path: rootPath + "/" + path) {
            // Older than when it was last read, different, and its time was set, not written: a
            // copy from before was put back (`cp -a`, `rsync -t`, `tar x` of a backup), not an
            // edit. (An edit made after the clock was stepped back is older too, but written.)
            try JSONFolderIndex.markRolledBack(hashes.filter { knownNames[$0.key] != $0.value }.map(\.key), db: db)
        }
        try JSONFolderIndex.setRecords(hashes, type: recordType, path: path, db: db)
        try JSONFolderIndex.setFile(path, stamp: stamp, problem: nil, db: db)
        try JSONFolderIndex.setLinks(links(of: objects.values), of: path, db: db)
        return Document(type: recordType, objects: objects)
    }

    /// Throws when another document on disk holds one of `names` already: two file names that
    /// stand for one record name (`a b.json` and `a%20b.json`, or a record in two collections).
    /// Taking either would sync one of them and silently leave the other out of step.
    func refuseTwin(of names: Dictionary<String, [String: JSONValue]>.Keys, in path: String, db: Database) throws {
        for name in names {
            guard let holder = try JSONFolderIndex.place(of: name, db: db)?.path, !ExactText.equal(holder, path), stamp(holder) != nil else { continue }
            throw JSONFilesAdapterError(
                .duplicateRecordName,
                "\(path) holds record \(name), which \(holder) holds already (two file names can stand for one record name, such as 'a b.json' and 'a%20b.json'); rename or remove one of them")
        }
    }

    /// Writes records from the cloud and deletions into their documents and records the result
    /// in the index. Documents invalid on disk are left untouched, with their records; so are
    /// documents edited since the kit last read them (the kit finds the edit on its next look).
    /// - Returns: the version of every record written, and ``KitEntry/heldBack(_:)`` for the
    ///   records of documents left untouched.
    func writeDocuments(_ saves: [Record], deletes: [KitRecordKey], db: Database) throws -> [KitEntry] {
        // Documents by path bytes ("é.json" and "e\u{301}.json" are two files). Within one
        // document, records are keyed by `String`, which cannot hold apart names that differ only
        // in Unicode normalization: a collection asked to hold both is refused, writing nothing.
        var documents: [ExactText.Key: (type: String, set: [String: Record], remove: Set<String>)] = [:]
        for record in saves {
            let key = KitRecordKey(recordName: record.id.recordName, recordType: record.recordType)
            let path = try JSONFolderIndex.place(of: key.recordName, db: db)?.path ?? newPath(for: key)
            try Self.refuseNormalizationTwin(of: key.recordName, among: documents[ExactText.Key(path)]?.set.keys, path: path)
            documents[ExactText.Key(path), default: (record.recordType, [:], [])].set[record.id.recordName] = record
        }
        for key in deletes {
            guard let place = try JSONFolderIndex.place(of: key.recordName, db: db) else { continue }
            documents[ExactText.Key(place.path), default: (place.type, [:], [])].remove.insert(key.recordName)
        }
        var entries: [KitEntry] = []
        // Every document is prepared in a temporary file first, so a failure leaves the folder as
        // it was; then the files are moved into place and the index records them.
        var prepared:
            [(
                path: String, url: URL, temporary: URL?, type: String, current: [String: [String: JSONValue]], seen: JSONFolderIndex.Stamp?,
                names: [String], heldBack: [KitEntry], files: [JSONFieldMapping.PendingFile], seenFiles: [JSONFolderIndex.Stamp?]
            )] = []
        do {
            for (pathKey, change) in documents.sorted(by: { $0.key.text < $1.key.text }) {
                let path = pathKey.text
                let url = root.appendingPathComponent(path)
                let file = try JSONFolderIndex.file(path, db: db)
                let known = file?.stamp
                let onDisk = stamp(path)
                // A document left as it is holds its records back: the kit keeps their state.
                let heldBack = (change.set.keys.sorted() + change.remove.sorted()).map { KitEntry.heldBack(KitRecordKey(recordName: $0, recordType: change.type)) }
                let holdBack = { entries += heldBack }
                if file?.problem != nil {
                    holdBack()
                    continue
                }
                var current: [String: [String: JSONValue]] = [:]
                if let onDisk {
                    // Edited since the kit looked, or made locally since its last look: the next
                    // look finds the edit.
                    if known.map({ onDisk != $0 }) ?? (layout == .filePerRecord) {
                        holdBack()
                        continue
                    }
                    let knownName = layout == .filePerRecord ? change.set.keys.first ?? change.remove.first : nil
                    guard let document = try self.current(path: path, recordType: change.type, knownName: knownName, db: db) else {
                        holdBack()  // invalid now
                        continue
                    }
                    current = document.objects
                }
                // A file a `$file` field names, edited since the document was read: that edit is
                // its record's, and the next look reads it, so nothing here writes over it.
                if try JSONFolderIndex.links(of: path, db: db).contains(where: { !Self.same(linkedStamp($0.file), $0.stamp) }) {
                    holdBack()
                    continue
                }
                for name in change.remove {
                    try Self.refuseNormalizationTwin(of: name, among: current.keys, path: path)
                    current[name] = nil
                }
                var files: [JSONFieldMapping.PendingFile] = []
                for (name, record) in change.set {
                    try Self.refuseNormalizationTwin(of: name, among: current.keys, path: path)
                    current[name] = try mapping.object(
                        for: record, previous: current[name], files: &files, mayWrite: { try mayWriteLinkedFile($0, for: path, db: db) })
                }
                var temporary: URL?
                if !current.isEmpty {
                    let document: JSONValue =
                        layout == .filePerRecord ? .object(current.values.first ?? [:]) : .object(current.mapValues { JSONValue.object($0) })
                    temporary = try AtomicFile.prepare(Data(document.prettyText().utf8), for: url)
                }
                prepared.append((path, url, temporary, change.type, current, onDisk, change.set.keys.sorted(), heldBack, files, files.map { linkedStamp($0.path) }))
            }
        } catch {
            for item in prepared { if let temporary = item.temporary { try? FileManager.default.removeItem(at: temporary) } }
            throw error
        }
        afterPreparing?()
        for item in prepared {
            // Edited by another program since it was read above (preparing a large page takes a
            // while): left as it is, its records held back, so the next look finds the edit.
            guard Self.same(stamp(item.path), item.seen), zip(item.files, item.seenFiles).allSatisfy({ Self.same(linkedStamp($0.path), $1) }) else {
                if let temporary = item.temporary { try? FileManager.default.removeItem(at: temporary) }
                entries += item.heldBack
                continue
            }
            for file in item.files { try AtomicFile.write(file.data, to: file.url) }
            var versions: [String: String] = [:]
            if let temporary = item.temporary {
                // The stamp is the temporary file's, which the rename keeps: an edit made right
                // after the rename differs from it.
                let written = Self.stamp(path: temporary.path)
                try AtomicFile.commit(temporary, to: item.url)
                versions = item.current.mapValues(version(of:))
                try JSONFolderIndex.setRecords(versions, type: item.type, path: item.path, db: db)
                if let written { try JSONFolderIndex.setFile(item.path, stamp: written, problem: nil, db: db) }
                try JSONFolderIndex.setLinks(links(of: item.current.values), of: item.path, db: db)
            } else {
                try? FileManager.default.removeItem(at: item.url)
                try JSONFolderIndex.removeFile(item.path, db: db)
            }
            entries += item.names.compactMap { name in
                versions[name].map { KitEntry(key: KitRecordKey(recordName: name, recordType: item.type), record: nil, version: $0) }
            }
        }
        return entries
    }
}

extension JSONFolderStore {
    /// Throws when `names` holds a name equal to `name` as a `String` but not byte for byte: the
    /// composed and decomposed forms of the same text, two records that one document's
    /// `String`-keyed members cannot hold apart.
    static func refuseNormalizationTwin(of name: String, among names: Dictionary<String, some Any>.Keys?, path: String) throws {
        guard let names, let index = names.firstIndex(of: name), !ExactText.equal(names[index], name) else { return }
        throw JSONFilesAdapterError(
            .unwritableName,
            "\(path) would hold two records whose names differ only in Unicode normalization (composed and decomposed forms of the same characters); a JSON document cannot keep them apart, so nothing was written. Use the file-per-record layout, or rename one record")
    }
}

/// GRDB has a `Record` type too.
typealias Record = GatewayCore.Record
