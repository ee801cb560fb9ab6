import Foundation
import AdapterKit
import GRDB
import GatewayCore
import SQLiteSupport

/// What the JSON folder store knows of its files: each document's size and modification time
/// (or its problem) and the records it held then, with a hash of each. A document whose size and
/// time are unchanged costs one `stat` instead of a parse.
///
/// Every change to a record row is stamped with the index's current generation, and removed
/// records are remembered with theirs, so a listing can return only what changed since the
/// generation a cursor names (`<identity>:<generation>`; a new index has a new identity, so a
/// cursor of an earlier one gets a complete listing).
///
/// The index is a cache of the folder, not sync state: every row says what a file held at a
/// given size and time, true whatever the kit has recorded. A lost or stale index costs a
/// re-parse of the folder, never a wrong sync, so it need not commit with the kit's state.
struct JSONFolderIndex: Sendable {
    /// The layout of the tables; an index of another layout is dropped and rebuilt from the files.
    static let layoutVersion = 1
    let queue: DatabaseQueue
    let path: String

    init(path: String) throws {
        self.path = path
        // A lost commit is re-parsed from the files.
        queue = try SidecarDatabase.open(path: path)
        try queue.write { db in try Self.createTables(db) }
    }

    /// `files` and `records` as in the state database of releases before the adapter kit (whose
    /// rows carry over), plus the generations.
    static func createTables(_ db: Database) throws {
        if try Int.fetchOne(db, sql: "PRAGMA user_version") != layoutVersion {
            try db.execute(sql: "DROP TABLE IF EXISTS files; DROP TABLE IF EXISTS records; DROP TABLE IF EXISTS removed; DROP TABLE IF EXISTS generation;")
            try db.execute(sql: "PRAGMA user_version = \(layoutVersion)")
        }
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL, problem TEXT);
                CREATE TABLE IF NOT EXISTS records (
                    record_name TEXT PRIMARY KEY, record_type TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL,
                    generation INTEGER NOT NULL DEFAULT 0);
                CREATE INDEX IF NOT EXISTS files_with_problems ON files (path) WHERE problem IS NOT NULL;
                CREATE INDEX IF NOT EXISTS records_by_path ON records (path);
                CREATE INDEX IF NOT EXISTS records_by_generation ON records (generation);
                CREATE TABLE IF NOT EXISTS removed (record_name TEXT PRIMARY KEY, generation INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS rolled_back (record_name TEXT PRIMARY KEY) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS links (
                    document TEXT NOT NULL, file TEXT NOT NULL, size INTEGER, mtime INTEGER, PRIMARY KEY (document, file)) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS links_by_file ON links (file);
                CREATE TABLE IF NOT EXISTS generation (
                    id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL, identity TEXT NOT NULL, problems_changed INTEGER NOT NULL);
                """)
        try db.execute(
            sql: "INSERT OR IGNORE INTO generation (id, value, identity, problems_changed) VALUES (1, 1, ?, 1)",
            arguments: [UUID().uuidString])
        // A problem's code (NULL: the file does not parse, `invalidJSON`); an index of an earlier
        // release gains the column, its problems read as they did.
        if try !Row.fetchAll(db, sql: "PRAGMA table_info(files)").contains(where: { $0["name"] == "problem_code" }) {
            try db.execute(sql: "ALTER TABLE files ADD COLUMN problem_code TEXT")
        }
    }

    typealias Stamp = (size: Int64, mtime: Int64)

    /// What the index knows of a file: its stamp when last read, and its problem if it had one.
    static func file(_ path: String, db: Database) throws -> (stamp: Stamp, problem: String?)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT size, mtime, problem FROM files WHERE path = ?"), arguments: [path])
            .map { (($0[0], $0[1]), $0[2]) }
    }

    /// Remembers records whose file went back to an older copy, until an entry reports them.
    static func markRolledBack(_ names: some Sequence<String>, db: Database) throws {
        for name in names {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO rolled_back (record_name) VALUES (?)").execute(arguments: [name])
        }
    }

    /// Marks the entries of records whose file went back to an older copy, and forgets those
    /// records: the kit drops their sync metadata as it records the entries.
    static func reportRolledBack(_ entries: inout [KitEntry], db: Database) throws {
        guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM rolled_back)") == true else { return }
        let names = Set(try String.fetchAll(db, sql: "SELECT record_name FROM rolled_back").map { RecordName($0) })
        for index in entries.indices where names.contains(entries[index].key.name) {
            entries[index].rolledBack = true
            try db.cachedStatement(sql: "DELETE FROM rolled_back WHERE record_name = ?").execute(arguments: [entries[index].key.recordName])
        }
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

    /// Records a file's stamp and its problem (`nil`: none), with the problem's code when it is
    /// not `invalidJSON`.
    static func setFile(_ path: String, stamp: Stamp, problem: String?, code: String? = nil, db: Database) throws {
        if try file(path, db: db)?.problem != problem { try noteProblemsChanged(db) }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO files (path, size, mtime, problem, problem_code) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [path, stamp.size, stamp.mtime, problem, problem == nil ? nil : code])
    }

    /// The files the `$file` fields of a document name, with their stamps when it was last read
    /// or written (`nil`: no such file then).
    static func links(of document: String, db: Database) throws -> [(file: String, stamp: Stamp?)] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT file, size, mtime FROM links WHERE document = ?"), arguments: [document]).map { row in
            let size: Int64? = row[1]
            let mtime: Int64? = row[2]
            return (row[0], size.flatMap { size in mtime.map { (size, $0) } })
        }
    }

    /// Every document's linked files, with their stamps (``links(of:db:)``).
    static func allLinks(_ db: Database) throws -> [(document: String, file: String, stamp: Stamp?)] {
        try Row.fetchAll(db, sql: "SELECT document, file, size, mtime FROM links").map { row in
            let size: Int64? = row[2]
            let mtime: Int64? = row[3]
            return (row[0], row[1], size.flatMap { size in mtime.map { (size, $0) } })
        }
    }

    /// Whether a document other than `document` names `file` in a `$file` field.
    static func isLinked(_ file: String, byOtherThan document: String, db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM links WHERE file = ? AND document <> ?)"), arguments: [file, document])
            == true
    }

    /// Replaces the linked files of a document.
    static func setLinks(_ links: [(file: String, stamp: Stamp?)], of document: String, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM links WHERE document = ?").execute(arguments: [document])
        for link in links {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO links (document, file, size, mtime) VALUES (?, ?, ?, ?)")
                .execute(arguments: [document, link.file, link.stamp?.size, link.stamp?.mtime])
        }
    }

    /// Forgets a file and the records it held.
    static func removeFile(_ path: String, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM links WHERE document = ?").execute(arguments: [path])
        if try file(path, db: db)?.problem != nil { try noteProblemsChanged(db) }
        try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO removed (record_name, generation) SELECT record_name, (SELECT value FROM generation) FROM records WHERE path = ?"
        ).execute(arguments: [path])
        try db.cachedStatement(sql: "DELETE FROM records WHERE path = ?").execute(arguments: [path])
        try db.cachedStatement(sql: "DELETE FROM files WHERE path = ?").execute(arguments: [path])
    }

    /// Replaces what the index holds of a file's records.
    static func setRecords(_ records: [String: String], type: String, path: String, db: Database) throws {
        let previous = try Self.records(in: path, db: db)
        for name in previous.keys where records[name] == nil {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO removed (record_name, generation) VALUES (?, (SELECT value FROM generation))")
                .execute(arguments: [name])
            try db.cachedStatement(sql: "DELETE FROM records WHERE record_name = ?").execute(arguments: [name])
        }
        for (name, hash) in records where previous[name] != hash {
            try db.cachedStatement(sql: "DELETE FROM removed WHERE record_name = ?").execute(arguments: [name])
            try db.cachedStatement(
                sql: "INSERT OR REPLACE INTO records (record_name, record_type, path, hash, generation) VALUES (?, ?, ?, ?, (SELECT value FROM generation))"
            ).execute(arguments: [name, type, path, hash])
        }
    }

    private static func noteProblemsChanged(_ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE generation SET problems_changed = 1").execute()
    }

    /// The index's identity, the generation changes are stamped with now, and whether a file's
    /// problem appeared or went away since the last ``advance(past:db:)``.
    static func generation(_ db: Database) throws -> (identity: String, value: Int64, problemsChanged: Bool) {
        let row = try Row.fetchOne(db, sql: "SELECT identity, value, problems_changed FROM generation")!
        return (row[0], row[1], row[2])
    }

    /// Starts a new generation once a listing has returned the current one; removals a listing
    /// since `consumed` has already returned are forgotten.
    static func advance(past consumed: Int64?, db: Database) throws {
        try db.execute(sql: "UPDATE generation SET value = value + 1, problems_changed = 0")
        if let consumed { try db.execute(sql: "DELETE FROM removed WHERE generation <= ?", arguments: [consumed]) }
    }
}
