import Crypto
import Foundation
import GRDB
import GatewayCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension JSONFilesAdapter {
    /// A file's size and modification time in nanoseconds, or `nil` when it is gone.
    static func stamp(_ url: URL) -> (size: Int64, mtime: Int64)? {
        stamp(path: url.path)
    }

    static func stamp(path: String) -> (size: Int64, mtime: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    /// The documents on disk: relative path → record type.
    func documentFiles() -> [String: String] {
        let manager = FileManager.default
        var files: [String: String] = [:]
        func isDocument(_ name: String) -> Bool { name.hasSuffix(".json") && !name.hasPrefix(".") }
        switch configuration.layout {
        case .collection:
            for name in (try? manager.contentsOfDirectory(atPath: root.path)) ?? [] where isDocument(name) {
                let base = String(name.dropLast(5))
                files[name] = SafeFileName.decode(base) ?? base
            }
        case .filePerRecord:
            for folder in documentFolders() {
                let type = SafeFileName.decode(folder) ?? folder
                for name in (try? manager.contentsOfDirectory(atPath: root.path + "/" + folder)) ?? [] where isDocument(name) {
                    files[folder + "/" + name] = type
                }
            }
        }
        return files
    }

    /// The record name of a file-per-record document.
    func recordName(forFile path: String) -> String {
        let file = String((path.split(separator: "/").last ?? Substring(path)).dropLast(5))
        return SafeFileName.decode(file) ?? file
    }

    /// The records a document holds, by name.
    /// - Throws: ``JSONValue/ParseError`` or ``JSONFilesAdapterError`` for a document that is not
    ///   what the layout needs.
    /// - Parameter knownName: the record a file-per-record document is known to hold (names too
    ///   long for a file name are shortened, so the file name alone does not give them back).
    func read(path: String, recordType: String, knownName: String? = nil) throws -> [String: [String: JSONValue]] {
        let data = try Data(contentsOf: root.appendingPathComponent(path))
        let value = try JSONValue.parse(data)
        guard case .object(let members) = value else { throw JSONFilesAdapterError("\(path) does not hold a JSON object") }
        switch configuration.layout {
        case .filePerRecord:
            return [knownName ?? recordName(forFile: path): members]
        case .collection:
            var records: [String: [String: JSONValue]] = [:]
            for (name, member) in members {
                guard case .object(let fields) = member else {
                    throw JSONFilesAdapterError("\(path): the entry of record \(name) is not a JSON object")
                }
                records[name] = fields
            }
            return records
        }
    }

    static func hash(_ object: [String: JSONValue]) -> String {
        SHA256.hash(data: Data(JSONValue.object(object).text().utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    static func problem(_ error: any Error, path: String) -> String {
        if let parse = error as? JSONValue.ParseError {
            return "\(path) line \(parse.line) column \(parse.column): \(parse.reason); fix the file, it is not synced until then"
        }
        if let adapterError = error as? JSONFilesAdapterError { return adapterError.message + "; fix the file, it is not synced until then" }
        if let mapping = error as? JSONFieldMapping.Problem { return "\(path): \(mapping.message); fix the file, it is not synced until then" }
        return "\(path) cannot be read; fix the file, it is not synced until then"
    }

    /// Compares the folder with the state and logs what changed. Unchanged files cost one `stat`.
    func scan(_ db: Database) throws {
        var known: [String: (size: Int64, mtime: Int64)] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT path, size, mtime FROM files")
        while let row = try rows.next() { known[row[0]] = (row[1], row[2]) }
        let onDisk = documentFiles()
        let prefix = root.path + "/"
        // Changed files in the order they were written, so changes are logged oldest first.
        var changed: [(path: String, type: String, stamp: (size: Int64, mtime: Int64))] = []
        for (path, type) in onDisk {
            guard let stamp = Self.stamp(path: prefix + path) else { continue }
            if let previous = known[path], previous == stamp { continue }
            changed.append((path, type, stamp))
        }
        changed.sort { ($0.stamp.mtime, $0.path) < ($1.stamp.mtime, $1.path) }
        for file in changed {
            try refresh(path: file.path, recordType: file.type, stamp: file.stamp, db: db)
        }
        for path in known.keys where onDisk[path] == nil {
            for name in try String.fetchAll(db, sql: "SELECT record_name FROM records WHERE path = ?", arguments: [path]) {
                try db.execute(sql: "DELETE FROM records WHERE record_name = ?", arguments: [name])
                try Self.logChange(name, db: db)
            }
            try db.execute(sql: "DELETE FROM files WHERE path = ?", arguments: [path])
        }
    }

    /// Brings the state of the files that hold (or would hold) these records up to date, as a
    /// scan would, without looking at the rest of the folder.
    func refreshFiles(of recordIDs: [RecordID], db: Database) throws {
        var paths: [String: String] = [:]
        for id in recordIDs {
            if let row = try Row.fetchOne(db, sql: "SELECT path, record_type FROM records WHERE record_name = ?", arguments: [id.recordName]) {
                paths[row[0]] = row[1]
            } else if configuration.layout == .filePerRecord {
                // A file for this name made locally since the last scan.
                let encoded = SafeFileName.encode(id.recordName) + ".json"
                for folder in documentFolders() where Self.stamp(path: root.path + "/" + folder + "/" + encoded) != nil {
                    paths[folder + "/" + encoded] = SafeFileName.decode(folder) ?? folder
                }
            }
        }
        for (path, type) in paths {
            let known = try Row.fetchOne(db, sql: "SELECT size, mtime FROM files WHERE path = ?", arguments: [path])
            let stamp = Self.stamp(path: root.path + "/" + path)
            switch (known, stamp) {
            case (nil, nil): continue
            case (let known?, let stamp?) where (known[0] as Int64, known[1] as Int64) == stamp: continue
            case (_, let stamp?): try refresh(path: path, recordType: type, stamp: stamp, db: db)
            case (_?, nil):
                for name in try String.fetchAll(db, sql: "SELECT record_name FROM records WHERE path = ?", arguments: [path]) {
                    try db.execute(sql: "DELETE FROM records WHERE record_name = ?", arguments: [name])
                    try Self.logChange(name, db: db)
                }
                try db.execute(sql: "DELETE FROM files WHERE path = ?", arguments: [path])
            }
        }
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

    /// Reads a changed document and logs its records that changed, appeared or disappeared. An
    /// invalid document is remembered with its problem and its records are left as they were.
    private func refresh(path: String, recordType: String, stamp: (size: Int64, mtime: Int64), db: Database) throws {
        let records: [String: [String: JSONValue]]
        let knownNames = try String.fetchAll(db, sql: "SELECT record_name FROM records WHERE path = ?", arguments: [path])
        do {
            records = try read(
                path: path, recordType: recordType,
                knownName: configuration.layout == .filePerRecord && knownNames.count == 1 ? knownNames[0] : nil)
            for object in records.values { _ = try mapping.fields(of: object) }
        } catch {
            try db.execute(
                sql: "INSERT OR REPLACE INTO files (path, size, mtime, problem) VALUES (?, ?, ?, ?)",
                arguments: [path, stamp.size, stamp.mtime, Self.problem(error, path: path)])
            return
        }
        var previous: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT record_name, hash FROM records WHERE path = ?", arguments: [path]) {
            previous[row[0]] = row[1]
        }
        for (name, object) in records.sorted(by: { $0.key < $1.key }) {
            let hash = Self.hash(object)
            guard previous[name] != hash else { continue }
            try db.execute(
                sql: "INSERT OR REPLACE INTO records (record_name, record_type, path, hash) VALUES (?, ?, ?, ?)",
                arguments: [name, recordType, path, hash])
            try Self.logChange(name, db: db)
        }
        for name in previous.keys where records[name] == nil {
            try db.execute(sql: "DELETE FROM records WHERE record_name = ?", arguments: [name])
            try Self.logChange(name, db: db)
        }
        try db.execute(
            sql: "INSERT OR REPLACE INTO files (path, size, mtime, problem) VALUES (?, ?, ?, NULL)",
            arguments: [path, stamp.size, stamp.mtime])
    }

    /// Where a record from the cloud is written: its current file, or a new safe path.
    private func path(for record: Record, db: Database) throws -> String {
        if let path = try String.fetchOne(db, sql: "SELECT path FROM records WHERE record_name = ?", arguments: [record.id.recordName]) {
            return path
        }
        switch configuration.layout {
        case .filePerRecord: return SafeFileName.encode(record.recordType) + "/" + SafeFileName.encode(record.id.recordName) + ".json"
        case .collection: return SafeFileName.encode(record.recordType) + ".json"
        }
    }

    /// Writes downloaded records and deletions to their documents and records the result in the
    /// state, so the next scan does not take them for local changes. Documents that are invalid
    /// on disk are left untouched, with their records.
    func writeDocuments(_ writes: [Record], deletes: [RecordID], db: Database) throws {
        // Clouds refuse NUL in names (CloudKit does); one arriving anyway is refused whole.
        for record in writes where record.id.recordName.utf8.contains(0) || record.recordType.utf8.contains(0) {
            throw JSONFilesAdapterError(
                "record \(SafeFileName.encode(record.id.recordName)) of type \(SafeFileName.encode(record.recordType)) has a NUL character in its name; nothing was written")
        }
        var documents: [String: (type: String, set: [String: [String: FieldValue]], remove: Set<String>)] = [:]
        for record in writes {
            let path = try path(for: record, db: db)
            documents[path, default: (record.recordType, [:], [])].set[record.id.recordName] = record.fields
        }
        for id in deletes {
            guard let path = try String.fetchOne(db, sql: "SELECT path FROM records WHERE record_name = ?", arguments: [id.recordName])
            else { continue }
            let type = try String.fetchOne(db, sql: "SELECT record_type FROM records WHERE record_name = ?", arguments: [id.recordName]) ?? ""
            documents[path, default: (type, [:], [])].remove.insert(id.recordName)
        }
        // Every document is prepared in a temporary file first, so a failure leaves the folder as
        // it was; then the files are moved into place and the state records them.
        var prepared: [(path: String, url: URL, temporary: URL?, type: String, current: [String: [String: JSONValue]], change: (set: [String: [String: FieldValue]], remove: Set<String>))] = []
        do {
            for (path, change) in documents.sorted(by: { $0.key < $1.key }) {
                let url = root.appendingPathComponent(path)
                let known = try Row.fetchOne(db, sql: "SELECT size, mtime, problem FROM files WHERE path = ?", arguments: [path])
                if let known, known["problem"] as String? != nil { continue }
                if known == nil, let stamp = Self.stamp(url) {
                    // A file made locally that no scan has seen yet.
                    if configuration.layout == .filePerRecord { continue }  // the next scan takes it as a local change
                    try refresh(path: path, recordType: change.type, stamp: stamp, db: db)  // log its records, then merge into it
                }
                if let known, let stamp = Self.stamp(url), stamp != (known["size"] as Int64, known["mtime"] as Int64) {
                    continue  // edited in the moments since the scan: the next scan takes it as a local change
                }
                let knownName = change.set.keys.first ?? change.remove.first
                if Self.stamp(url) != nil, (try? read(path: path, recordType: change.type, knownName: knownName)) == nil {
                    continue  // invalid on disk since the last scan: never overwritten
                }
                var current = (try? read(path: path, recordType: change.type, knownName: knownName)) ?? [:]
                for name in change.remove { current[name] = nil }
                for (name, fields) in change.set {
                    current[name] = try mapping.object(for: fields, previous: current[name])
                }
                var temporary: URL?
                if !current.isEmpty {
                    let document: JSONValue =
                        configuration.layout == .filePerRecord
                        ? .object(current.values.first ?? [:]) : .object(current.mapValues { JSONValue.object($0) })
                    temporary = try AtomicFile.prepare(Data(document.text().utf8), for: url)
                }
                prepared.append((path, url, temporary, change.type, current, (change.set, change.remove)))
            }
        } catch {
            for item in prepared { if let temporary = item.temporary { try? FileManager.default.removeItem(at: temporary) } }
            throw error
        }
        for item in prepared {
            if let temporary = item.temporary {
                try AtomicFile.commit(temporary, to: item.url)
                if let stamp = Self.stamp(item.url) {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO files (path, size, mtime, problem) VALUES (?, ?, ?, NULL)",
                        arguments: [item.path, stamp.size, stamp.mtime])
                }
            } else {
                try? FileManager.default.removeItem(at: item.url)
                try db.execute(sql: "DELETE FROM files WHERE path = ?", arguments: [item.path])
            }
            for name in item.change.remove {
                try db.execute(sql: "DELETE FROM records WHERE record_name = ?", arguments: [name])
            }
            for name in item.change.set.keys {
                guard let object = item.current[name] else { continue }
                try db.execute(
                    sql: "INSERT OR REPLACE INTO records (record_name, record_type, path, hash) VALUES (?, ?, ?, ?)",
                    arguments: [name, item.type, item.path, Self.hash(object)])
            }
        }
    }
}
