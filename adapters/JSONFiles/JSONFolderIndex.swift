import Foundation
import GRDB
import SQLiteSupport

/// What the JSON folder store knows of its files: each document's size and modification time
/// (or its problem) and the records it held then, with a hash of each. A document whose size and
/// time are unchanged costs one `stat` instead of a parse.
///
/// The index is a cache of the folder, not sync state: every row says what a file held at a
/// given size and time, true whatever the kit has recorded. A lost or stale index costs a
/// re-parse of the folder, never a wrong sync, so it need not commit with the kit's state.
struct JSONFolderIndex: Sendable {
    let queue: DatabaseQueue
    let path: String

    init(path: String) throws {
        self.path = path
        // A lost commit is re-parsed from the files.
        queue = try SidecarDatabase.open(path: path)
        try queue.write { db in try Self.createTables(db) }
    }

    /// The same two tables as the state database of releases before the adapter kit, so that
    /// database's `files` and `records` carry over as they are.
    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL, problem TEXT);
                CREATE TABLE IF NOT EXISTS records (
                    record_name TEXT PRIMARY KEY, record_type TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS records_by_path ON records (path);
                """)
    }

    typealias Stamp = (size: Int64, mtime: Int64)

    static func stamp(of path: String, db: Database) throws -> Stamp? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT size, mtime FROM files WHERE path = ?"), arguments: [path]).map { ($0[0], $0[1]) }
    }

    static func problem(of path: String, db: Database) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT problem FROM files WHERE path = ?"), arguments: [path])
    }

    /// Record name → hash of the records a file held when last read.
    static func records(in path: String, db: Database) throws -> [String: String] {
        var records: [String: String] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT record_name, hash FROM records WHERE path = ?"), arguments: [path]) {
            records[row[0]] = row[1]
        }
        return records
    }

    static func place(of recordName: String, db: Database) throws -> (path: String, type: String, hash: String)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT path, record_type, hash FROM records WHERE record_name = ?"), arguments: [recordName])
            .map { ($0[0], $0[1], $0[2]) }
    }

    static func setFile(_ path: String, stamp: Stamp, problem: String?, db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO files (path, size, mtime, problem) VALUES (?, ?, ?, ?)")
            .execute(arguments: [path, stamp.size, stamp.mtime, problem])
    }

    /// Forgets a file and the records it held.
    static func removeFile(_ path: String, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM records WHERE path = ?").execute(arguments: [path])
        try db.cachedStatement(sql: "DELETE FROM files WHERE path = ?").execute(arguments: [path])
    }

    /// Replaces what the index holds of a file's records.
    static func setRecords(_ records: [String: String], type: String, path: String, db: Database) throws {
        let previous = try Self.records(in: path, db: db)
        for name in previous.keys where records[name] == nil {
            try db.cachedStatement(sql: "DELETE FROM records WHERE record_name = ?").execute(arguments: [name])
        }
        for (name, hash) in records where previous[name] != hash {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO records (record_name, record_type, path, hash) VALUES (?, ?, ?, ?)")
                .execute(arguments: [name, type, path, hash])
        }
    }
}
