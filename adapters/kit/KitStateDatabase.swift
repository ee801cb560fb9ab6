import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// The sidecar database where a kit adapter keeps its sync state: what it last saw of each
/// record, the change log, metadata, failures, the zone state, the store's cursor and the
/// journal of a write in progress.
struct KitStateDatabase: Sendable {
    static let schemaVersion = 1
    let queue: DatabaseQueue
    let path: String

    init(path: String) throws {
        self.path = path
        do {
            // WAL with synchronous NORMAL: a commit is an append without fsync (every downloaded
            // page commits twice: the journal, then the state). A crash of the process loses
            // nothing; a power loss may lose the last commits, which only repeats work: the
            // store acknowledged its writes durably, so they show as edits holding the cloud's
            // values (settled by the merge), and the token, committed in the same transaction as
            // the rest, downloads the same pages again.
            queue = try SidecarDatabase.open(path: path)
            try queue.write { db in try Self.createTables(db) }
        } catch let error as KitAdapterError {
            throw error
        } catch {
            throw KitAdapterError(.stateFailed, "cannot open the adapter state: \(SQLiteFailureReason.describe(error, path: path))", underlying: error)
        }
    }

    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS kit_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                INSERT OR IGNORE INTO kit_schema (id, version) VALUES (1, \(schemaVersion));
                CREATE TABLE IF NOT EXISTS records (
                    record_name TEXT PRIMARY KEY, record_type TEXT NOT NULL, observed TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS changes (record_name TEXT PRIMARY KEY, version INTEGER NOT NULL, record_type TEXT) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS changes_by_version ON changes (version);
                CREATE TABLE IF NOT EXISTS metadata (record_name TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS failures (
                    record_name TEXT PRIMARY KEY, version INTEGER NOT NULL, code TEXT NOT NULL, message TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS problems (record_name TEXT PRIMARY KEY, code TEXT NOT NULL, message TEXT NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS zone (id INTEGER PRIMARY KEY CHECK (id = 1), state BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                INSERT OR IGNORE INTO counter (id, version) VALUES (1, 0);
                CREATE TABLE IF NOT EXISTS cursor (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS journal (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS journal_pages (sequence INTEGER PRIMARY KEY, data BLOB NOT NULL);
                CREATE TABLE IF NOT EXISTS identity (id INTEGER PRIMARY KEY CHECK (id = 1), store TEXT NOT NULL, epoch INTEGER NOT NULL);
                """)
        // The store's epoch when the kit last recorded each record present: a copy of the store
        // with a later epoch was taken after that, so it held the record (unless the
        // application deleted it). Set by a trigger, so every path that records a record sets it;
        // state of an earlier release gains the column (NULL: unknown) and the trigger in place.
        if try !Row.fetchAll(db, sql: "PRAGMA table_info(records)").contains(where: { $0["name"] == "seen_epoch" }) {
            try db.execute(sql: "ALTER TABLE records ADD COLUMN seen_epoch INTEGER")
        }
        // A row inserted with the epoch already (``recordsWriter(_:)``) is not written twice.
        // State of an earlier release has the trigger without that condition: it is replaced.
        let epochTrigger = """
            CREATE TRIGGER records_seen_epoch AFTER INSERT ON records
            WHEN NEW.seen_epoch IS NOT (SELECT epoch FROM identity WHERE id = 1) BEGIN
                UPDATE records SET seen_epoch = (SELECT epoch FROM identity WHERE id = 1) WHERE record_name = NEW.record_name;
            END
            """
        let installed = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'records_seen_epoch'")
        if installed != epochTrigger {
            try db.execute(sql: "DROP TRIGGER IF EXISTS records_seen_epoch")
            try db.execute(sql: epochTrigger)
        }
        let version = try Int.fetchOne(db, sql: "SELECT version FROM kit_schema WHERE id = 1") ?? 0
        guard version <= schemaVersion else {
            throw KitAdapterError(
                .corruptState, "the adapter state was written by a newer release (schema \(version)); upgrade the gateway")
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.read(body)
        } catch let error as KitAdapterError {
            throw error
        } catch {
            throw KitAdapterError(.stateFailed, SQLiteFailureReason.describe(error, path: path), underlying: error)
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await queue.write(body)
        } catch let error as KitAdapterError {
            throw error
        } catch {
            throw KitAdapterError(.stateFailed, SQLiteFailureReason.describe(error, path: path), underlying: error)
        }
    }

    // MARK: Statements shared by the operations

    /// The failed records: failure marks of the change still pending (a mark counts only while
    /// the change it failed is the current one) and records the store cannot offer, in name
    /// order; at most `limit` of them when one is given.
    static func failedRecords(zone: ZoneID, limit: Int? = nil, db: Database) throws -> [FailedRecord] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT f.record_name, f.version, f.code, f.message FROM failures f
                JOIN changes c ON c.record_name = f.record_name AND c.version = f.version
                UNION ALL SELECT record_name, 0, code, message FROM problems
                ORDER BY 1 LIMIT ?
                """, arguments: [limit ?? -1]
        ).map { row in
            FailedRecord(recordID: RecordID(recordName: row[0], zoneID: zone), failure: RecordFailure(version: row[1], code: row[2], message: row[3]))
        }
    }

    /// Gives `recordName` the next change-log version: it is pending, as saved (`recordType`
    /// given) or deleted.
    static func logChange(_ recordName: String, recordType: String?, db: Database) throws {
        try db.cachedStatement(sql: "UPDATE counter SET version = version + 1 WHERE id = 1").execute()
        try db.cachedStatement(
            sql: """
                INSERT INTO changes (record_name, version, record_type) VALUES (?, (SELECT version FROM counter WHERE id = 1), ?)
                ON CONFLICT (record_name) DO UPDATE SET version = excluded.version, record_type = excluded.record_type
                """).execute(arguments: [recordName, recordType])
    }

    /// Commits a sync-state update, leaving out the records in `skipped` (edited meanwhile), and
    /// its zone state unless `advancingZone` is false.
    static func commit(_ update: SyncStateUpdate, skipping skipped: Set<RecordName>, advancingZone: Bool = true, db: Database) throws {
        try commitRecords(of: update, where: { !skipped.contains($0) }, db: db)
        for (id, failure) in update.failures {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO failures (record_name, version, code, message) VALUES (?, ?, ?, ?)")
                .execute(arguments: [id.recordName, failure.version, failure.code, failure.message])
        }
        if advancingZone {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO zone (id, state) VALUES (1, ?)").execute(arguments: [update.zoneState])
        }
    }

    /// Commits the per-record part of `update` (metadata, removals, settled versions) for the
    /// records `included` accepts, without failures or the zone state.
    static func commitRecords(of update: SyncStateUpdate, where included: (RecordName) -> Bool, db: Database) throws {
        // A page's metadata goes in 50 records to a statement: one execution per record was the
        // largest part of committing a downloaded page.
        var metadata = try ManyRowStatement(db, argumentsPerRow: 2) { rows in
            "INSERT OR REPLACE INTO metadata (record_name, data) VALUES " + ManyRowStatement.valuesList(rows)
        }
        for (id, data) in update.metadata where included(id.name) {
            try metadata.add([.text(id.recordName), .blob(data)])
        }
        try metadata.finish()
        let removeMetadata = BoundStatement(try db.cachedStatement(sql: "DELETE FROM metadata WHERE record_name = ?"))
        for id in update.removedMetadata where included(id.name) {
            try removeMetadata.execute(.text(id.recordName))
        }
        guard !update.settled.isEmpty else { return }
        let settle = BoundStatement(try db.cachedStatement(sql: "DELETE FROM changes WHERE record_name = ? AND version <= ?"))
        let clearFailure = BoundStatement(try db.cachedStatement(sql: "DELETE FROM failures WHERE record_name = ? AND version <= ?"))
        // Failure marks are rare: no statement per record to clear them when there are none.
        let hasFailures = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM failures)")) ?? true
        for (id, version) in update.settled where included(id.name) {
            try settle.execute(.text(id.recordName), .integer(version))
            if hasFailures { try clearFailure.execute(.text(id.recordName), .integer(version)) }
        }
    }

    /// Records what the kit knows of records the store holds (`records`: name, type, what was
    /// observed), 50 to a statement, with the store's current epoch (so the epoch trigger has
    /// nothing to do). Call ``ManyRowStatement/finish()`` before anything else reads or writes
    /// `records`.
    static func recordsWriter(_ db: Database) throws -> ManyRowStatement {
        try ManyRowStatement(db, argumentsPerRow: 3) { rows in
            "INSERT OR REPLACE INTO records (record_name, record_type, observed, seen_epoch) VALUES "
                + rows.map { "(\($0[0]), \($0[1]), \($0[2]), (SELECT epoch FROM identity WHERE id = 1))" }.joined(separator: ", ")
        }
    }

    /// Names as a JSON array, the argument of `json_each(?)`.
    static func jsonArray(_ names: some Sequence<String>) -> String {
        JSONArrayText.of(names)
    }
}
