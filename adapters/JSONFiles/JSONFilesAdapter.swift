import Crypto
import Foundation
import GRDB
import SQLiteSupport
import GatewayCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder of JSON documents as a store: config repositories, content folders, exports.
///
/// Changes are found by scanning: a file whose size and modification time are unchanged costs
/// one `stat`; others are parsed and compared by content hash with what the state database in
/// `<directory>/.gateway/state.sqlite` remembers. That database also holds the change log, sync
/// metadata and zone state, so they commit atomically. A file that is not valid JSON becomes a
/// failed record naming its line and column; it is never uploaded, deleted or overwritten, and the
/// other files keep syncing. Files are written atomically (temporary file, fsync, rename) in a
/// stable form; record names from the cloud become safe file names (``SafeFileName``).
public final class JSONFilesAdapter: ModelAdapter {
    public let configuration: JSONFilesAdapterConfiguration
    let queue: DatabaseQueue
    let root: URL
    let mapping: JSONFieldMapping

    public var name: String { configuration.name }
    public var zoneID: ZoneID { configuration.zoneID }

    /// Opens the folder (it must exist) and its state database, creating the latter.
    public init(configuration: JSONFilesAdapterConfiguration) throws {
        self.configuration = configuration
        root = URL(fileURLWithPath: configuration.directory).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw JSONFilesAdapterError("the folder \(configuration.directory) of adapter \(configuration.name) does not exist")
        }
        mapping = JSONFieldMapping(directory: root, zoneID: configuration.zoneID)
        do {
            let stateFolder = root.appendingPathComponent(".gateway")
            try FileManager.default.createDirectory(at: stateFolder, withIntermediateDirectories: true)
            var grdb = GRDB.Configuration()
            grdb.busyMode = .timeout(30)
            queue = try DatabaseQueue(path: stateFolder.appendingPathComponent("state.sqlite").path, configuration: grdb)
            try queue.write { db in try Self.createTables(db) }
        } catch {
            throw JSONFilesAdapterError(
                "cannot open the state of \(configuration.directory): \(Self.failureReason(error, statePath: root.appendingPathComponent(".gateway/state.sqlite").path))",
                underlying: error)
        }
    }

    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL, problem TEXT);
                CREATE TABLE IF NOT EXISTS records (
                    record_name TEXT PRIMARY KEY, record_type TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS records_by_path ON records (path);
                CREATE TABLE IF NOT EXISTS changes (record_name TEXT PRIMARY KEY, version INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS changes_by_version ON changes (version);
                CREATE TABLE IF NOT EXISTS metadata (record_name TEXT PRIMARY KEY, data BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS failures (record_name TEXT PRIMARY KEY, version INTEGER NOT NULL, code TEXT NOT NULL, message TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS zone (id INTEGER PRIMARY KEY CHECK (id = 1), state BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                INSERT OR IGNORE INTO counter (id, version) VALUES (1, 0);
                """)
    }

    // MARK: ModelAdapter

    public func loadZoneState() async throws -> Data? {
        try await write { db, adapter in
            try adapter.scan(db)
            return try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1")
        }
    }

    public func hasChanges() async throws -> Bool {
        try await pendingChangeCount() > 0
    }

    public func pendingChangeCount() async throws -> Int {
        try await write { db, adapter in
            try adapter.scan(db)
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM changes") ?? 0
        }
    }

    public func pendingChanges(limit: Int, after: Int64?) async throws -> PendingChanges {
        try await write { db, adapter in
            if after == nil { try adapter.scan(db) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT c.record_name, c.version, m.data, r.record_type, r.path FROM changes c
                    LEFT JOIN metadata m ON m.record_name = c.record_name
                    LEFT JOIN records r ON r.record_name = c.record_name
                    WHERE c.version > ? AND NOT EXISTS (
                        SELECT 1 FROM failures f WHERE f.record_name = c.record_name AND f.version = c.version)
                    ORDER BY c.version LIMIT ?
                    """, arguments: [after ?? 0, max(0, limit)])
            var pending = PendingChanges()
            var documents: [String: [String: [String: JSONValue]]] = [:]
            for row in rows {
                let id = RecordID(recordName: row[0], zoneID: adapter.zoneID)
                let version: Int64 = row[1]
                let metadata: Data? = row[2]
                if let type: String = row[3], let path: String = row[4] {
                    if documents[path] == nil {
                        documents[path] = (try? adapter.read(path: path, recordType: type, knownName: id.recordName)) ?? [:]
                    }
                    guard let object = documents[path]?[id.recordName], let fields = try? adapter.mapping.fields(of: object) else {
                        continue  // the file changed into something unreadable since the scan; the next scan freezes it
                    }
                    pending.saves.append(
                        PendingSave(record: Record(id: id, recordType: type, fields: fields), metadata: metadata, version: version))
                } else {
                    pending.deletes.append(PendingDelete(recordID: id, metadata: metadata, version: version))
                }
            }
            return pending
        }
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        try await write { db, adapter in
            // Only the files of these records are looked at: a full scan per downloaded page would
            // make a large folder's download cost grow with the square of its size.
            try adapter.refreshFiles(of: recordIDs, db: db)
            var states: [RecordID: LocalRecordState] = [:]
            var documents: [String: [String: [String: JSONValue]]] = [:]
            // One query for the whole page: metadata, pending version and place of every record.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT n.value, m.data, c.version, r.record_type, r.path FROM json_each(?) n
                    LEFT JOIN metadata m ON m.record_name = n.value
                    LEFT JOIN changes c ON c.record_name = n.value
                    LEFT JOIN records r ON r.record_name = n.value
                    """, arguments: [try Self.jsonArray(recordIDs.map(\.recordName))])
            for row in rows {
                let id = RecordID(recordName: row[0], zoneID: adapter.zoneID)
                let metadata: Data? = row[1]
                let version: Int64? = row[2]
                guard metadata != nil || version != nil else { continue }
                var record: Record?
                if version != nil, let type: String = row[3], let path: String = row[4] {
                    if documents[path] == nil {
                        documents[path] = (try? adapter.read(path: path, recordType: type, knownName: id.recordName)) ?? [:]
                    }
                    if let object = documents[path]?[id.recordName], let fields = try? adapter.mapping.fields(of: object) {
                        record = Record(id: id, recordType: type, fields: fields)
                    }
                }
                states[id] = LocalRecordState(record: record, metadata: metadata, pendingVersion: version)
            }
            return states
        }
    }

    /// Record names as a JSON array, the argument of `json_each(?)`.
    static func jsonArray(_ names: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(names), as: UTF8.self)
    }

    public func syncedRecordIDs() async throws -> [RecordID] {
        let zone = zoneID
        return try await queue.read { db in
            try String.fetchAll(db, sql: "SELECT record_name FROM metadata").map { RecordID(recordName: $0, zoneID: zone) }
        }
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        try await write { db, adapter in
            // Edits made since the synchronizer read the local state get a new version here, so
            // the comparison below leaves them alone.
            try adapter.refreshFiles(of: changes.writes.map(\.id) + changes.deletes, db: db)
            var current: [String: Int64] = [:]
            let rows = try Row.fetchAll(
                db, sql: "SELECT c.record_name, c.version FROM json_each(?) n JOIN changes c ON c.record_name = n.value",
                arguments: [try Self.jsonArray(changes.expectedPendingVersions.keys.map(\.recordName))])
            for row in rows { current[row[0]] = row[1] }
            var skipped = Set<RecordID>()
            for (id, expected) in changes.expectedPendingVersions where (current[id.recordName] ?? 0) != expected {
                skipped.insert(id)
            }
            try adapter.writeDocuments(changes.writes.filter { !skipped.contains($0.id) }, deletes: changes.deletes.filter { !skipped.contains($0) }, db: db)
            try Self.commit(changes.state, skipping: skipped, db: db)
        }
    }

    public func markUploaded(_ update: SyncStateUpdate) async throws {
        try await write { db, _ in try Self.commit(update, skipping: [], db: db) }
    }

    public func failedRecords() async throws -> [FailedRecord] {
        let zone = zoneID
        return try await write { db, adapter in
            try adapter.scan(db)
            // A failure mark counts only while the change it failed is the current one.
            let marks = try Row.fetchAll(
                db,
                sql: """
                    SELECT f.record_name, f.version, f.code, f.message FROM failures f
                    JOIN changes c ON c.record_name = f.record_name AND c.version = f.version
                    """)
            var failed = marks.map { row in
                FailedRecord(
                    recordID: RecordID(recordName: row[0], zoneID: zone),
                    failure: RecordFailure(version: row[1], code: row[2], message: row[3]))
            }
            for row in try Row.fetchAll(db, sql: "SELECT path, problem FROM files WHERE problem IS NOT NULL") {
                let path: String = row[0]
                failed.append(
                    FailedRecord(
                        recordID: RecordID(recordName: adapter.recordName(forFile: path), zoneID: zone),
                        failure: RecordFailure(version: 0, code: "invalidJSON", message: row[1])))
            }
            return failed
        }
    }

    public func retryFailedRecords() async throws {
        try await write { db, _ in try db.execute(sql: "DELETE FROM failures") }
    }

    public func resetSyncState(keepData: Bool) async throws {
        try await write { db, adapter in
            try db.execute(sql: "DELETE FROM metadata; DELETE FROM failures; DELETE FROM zone;")
            if keepData {
                try adapter.scan(db)
                for name in try String.fetchAll(db, sql: "SELECT record_name FROM records") { try Self.logChange(name, db: db) }
            } else {
                try adapter.scan(db)
                let names = try String.fetchAll(db, sql: "SELECT record_name FROM records")
                try adapter.writeDocuments([], deletes: names.map { RecordID(recordName: $0, zoneID: adapter.zoneID) }, db: db)
                try db.execute(sql: "DELETE FROM changes")
            }
        }
    }

    public func changeSignals() -> ChangeSignals {
        // A scan gives every change it finds the next version, so the counter moves with each
        // local change: a change made while an earlier one is still pending signals too.
        .polling(every: configuration.pollInterval) { [self] in
            try await write { db, adapter in
                try adapter.scan(db)
                return try Int64.fetchOne(db, sql: "SELECT version FROM counter") ?? 0
            }
        }
    }

    // MARK: State

    private func write<T: Sendable>(_ body: @escaping @Sendable (Database, JSONFilesAdapter) throws -> T) async throws -> T {
        do {
            return try await queue.write { [self] db in try body(db, self) }
        } catch let error as JSONFilesAdapterError {
            throw error
        } catch {
            throw JSONFilesAdapterError(Self.failureReason(error, statePath: statePath), underlying: error)
        }
    }

    /// Where the adapter keeps its sync state.
    var statePath: String { root.appendingPathComponent(".gateway/state.sqlite").path }

    /// What went wrong, naming the file: the state database, or a document being written.
    static func failureReason(_ error: any Error, statePath: String) -> String {
        if error is DatabaseError { return SQLiteFailureReason.describe(error, path: statePath) }
        let cocoa = error as NSError
        let path = (cocoa.userInfo[NSFilePathErrorKey] as? String) ?? (cocoa.userInfo[NSURLErrorKey] as? URL)?.path
        let posix = (cocoa.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil }
        let place = path ?? (statePath as NSString).deletingLastPathComponent
        switch posix {
        case ENOSPC?, EDQUOT?: return "the disk holding \(place) is full; free space, then sync again (the documents were left as they were)"
        case EROFS?: return "\(place) cannot be written: its filesystem is mounted read-only"
        case EACCES?, EPERM?: return "\(place) cannot be written: permission denied to this user"
        default: return "\(place): \(cocoa.localizedDescription)"
        }
    }

    static func logChange(_ recordName: String, db: Database) throws {
        try db.execute(sql: "UPDATE counter SET version = version + 1 WHERE id = 1")
        try db.execute(
            sql: """
                INSERT INTO changes (record_name, version) VALUES (?, (SELECT version FROM counter WHERE id = 1))
                ON CONFLICT (record_name) DO UPDATE SET version = excluded.version
                """, arguments: [recordName])
    }

    private static func commit(_ update: SyncStateUpdate, skipping skipped: Set<RecordID>, db: Database) throws {
        for (id, data) in update.metadata where !skipped.contains(id) {
            try db.execute(sql: "INSERT OR REPLACE INTO metadata (record_name, data) VALUES (?, ?)", arguments: [id.recordName, data])
        }
        for id in update.removedMetadata where !skipped.contains(id) {
            try db.execute(sql: "DELETE FROM metadata WHERE record_name = ?", arguments: [id.recordName])
        }
        for (id, version) in update.settled where !skipped.contains(id) {
            try db.execute(sql: "DELETE FROM changes WHERE record_name = ? AND version <= ?", arguments: [id.recordName, version])
            try db.execute(sql: "DELETE FROM failures WHERE record_name = ? AND version <= ?", arguments: [id.recordName, version])
        }
        for (id, failure) in update.failures {
            try db.execute(
                sql: "INSERT OR REPLACE INTO failures (record_name, version, code, message) VALUES (?, ?, ?, ?)",
                arguments: [id.recordName, failure.version, failure.code, failure.message])
        }
        try db.execute(sql: "INSERT OR REPLACE INTO zone (id, state) VALUES (1, ?)", arguments: [update.zoneState])
    }
}

/// GRDB has a `Record` type too.
typealias Record = GatewayCore.Record

