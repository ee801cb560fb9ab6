import Foundation
import GRDB
import GatewayCore
import SQLiteSupport
import Synchronization

/// Keeps tables of a SQLite database, written by any program, in sync with one zone.
///
/// Triggers installed in the database append every insert, update and delete, whoever makes
/// them, to `_gateway_log` with the clock; the gateway folds that log into `_gateway_changes`,
/// numbering each record's change from the clock (so versions keep growing across a restore of
/// the file). The gateway's own writes are not logged because a flag row exists only inside its
/// transactions. Sync metadata, failure marks and the zone state live
/// in `_gateway_*` tables of the same database and commit with the data. A column added to a
/// synced table is picked up on the next operation.
public final class SQLiteAdapter: ModelAdapter {
    public let configuration: SQLiteAdapterConfiguration
    let pool: DatabasePool
    /// Checkpoints the database's WAL beside the pool's writer.
    private let checkpointer: WALCheckpointer
    private let catalog: Mutex<TableCatalog>
    /// The file the pool opened (device and inode), to notice a file replaced or removed behind it.
    private let openedFile: FileIdentity?
    /// Set by ``close()``: the change signals say so once, so that a listener still waiting on
    /// them (the adapter was replaced meanwhile) wakes up and follows the new one.
    private let closedFlag = ClosedFlag()

    /// Whether the adapter was closed, shared with its change signals' probe.
    private final class ClosedFlag: Sendable {
        let isSet = Atomic<Bool>(false)
    }

    public var name: String { configuration.name }
    public var zoneID: ZoneID { configuration.zoneID }

    /// The configured tables as the database has them, refreshed when the schema changes.
    struct TableCatalog: Sendable {
        var schemaVersion: Int
        var byTable: [String: ResolvedTable]
        var byType: [String: ResolvedTable]

        /// The configured table whose record names `name` fits, `nil` when none or (for names
        /// that only look alike byte for byte) more than one does; the callers then read it from
        /// the change table.
        func table(ofRecordNamed name: String) -> String? {
            var found: String?
            for table in byTable.values where table.template.fits(name) {
                guard found == nil else { return nil }
                found = table.table
            }
            return found
        }
    }

    /// Opens the database, checks every configured table, and installs the change capture.
    /// - Throws: ``SQLiteAdapterError`` naming the file, table or column that does not fit.
    public init(configuration: SQLiteAdapterConfiguration) throws {
        self.configuration = configuration
        var grdb = GRDB.Configuration()
        grdb.busyMode = .timeout(Double(configuration.busyTimeout.components.seconds))
        // The schema cookie as the first connection (the writer) found it, before the pool's
        // own setup: GRDB creates and drops a table when the WAL file is missing or empty (after
        // a clean close removed it), which moves the cookie by 2 without changing any table.
        let cookieAtOpen = Mutex<Int?>(nil)
        let walWasEmpty = ((try? FileManager.default.attributesOfItem(atPath: configuration.path + "-wal")[.size] as? Int) ?? 0) == 0
        grdb.prepareDatabase { db in
            if walWasEmpty, cookieAtOpen.withLock({ $0 == nil }) {
                let cookie = try Int.fetchOne(db, sql: "PRAGMA schema_version")
                cookieAtOpen.withLock { if $0 == nil { $0 = cookie } }
            }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try WALCheckpointer.prepareWriter(db)
        }
        checkpointer = WALCheckpointer(path: configuration.path, configuration: grdb)
        guard FileManager.default.fileExists(atPath: configuration.path) else {
            throw SQLiteAdapterError(.databaseFailed, "the database \(configuration.path) of adapter \(configuration.name) does not exist")
        }
        do {
            pool = try Self.openPool(configuration.path, grdb, waitingUpTo: configuration.busyTimeout)
        } catch {
            throw SQLiteAdapterError(.databaseFailed, SQLiteFailureReason.describe(error, path: configuration.path), underlying: error)
        }
        let loaded = try Self.guarded(configuration.path) { [pool] in
            try pool.writeWithoutTransaction { db in
                var catalog: TableCatalog?
                try db.inTransaction(.immediate) {
                    if let before = cookieAtOpen.withLock({ $0 }), try Self.schemaVersion(db) == before + 2 {
                        // Only the pool's setup moved the cookie: what was checked at `before`
                        // still holds (a schema change made meanwhile moved it before the open).
                        try GatewayTables.carrySchemaCheck(from: before, to: before + 2, db: db)
                    }
                    try GatewayTables.createTables(db)
                    // Intents kept aside are metadata like any other before the tables are
                    // checked: a column added since must leave their ancestor too.
                    try Self.foldIntents(db)
                    catalog = try Self.resolve(configuration, db: db)
                    try Self.install(catalog!, configuration: configuration, db: db)
                    catalog!.schemaVersion = try Self.schemaVersion(db)
                    return .commit
                }
                return catalog!
            }
        }
        catalog = Mutex(loaded)
        openedFile = FileIdentity(path: configuration.path)
    }

    /// The device and inode of a file, which a restore or a move replaces and an edit keeps.
    struct FileIdentity: Equatable, Sendable, CustomStringConvertible {
        let device: UInt64
        let inode: UInt64

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

        var description: String { "\(device):\(inode)" }
    }

    /// Throws when the path no longer names the file the pool opened: writes would go to a file
    /// nobody reads any more, and edits made in the new one would never be seen.
    private func checkFileUnchanged() throws {
        guard let openedFile, FileIdentity(path: configuration.path) != openedFile else { return }
        let what = FileManager.default.fileExists(atPath: configuration.path) ? "replaced" : "removed"
        throw SQLiteAdapterError(
            .databaseReplaced,
            "the database \(configuration.path) was \(what) after the gateway opened it; the adapter opens the file its path names now")
    }

    /// Opens the pool, trying again while another program holds the database's write lock.
    ///
    /// Switching a file to WAL mode needs that lock, and SQLite reports it busy at once rather
    /// than wait in its busy handler when another connection is writing (waiting could deadlock),
    /// so a gateway starting while a program writes would otherwise fail to open its store.
    private static func openPool(_ path: String, _ configuration: GRDB.Configuration, waitingUpTo timeout: Duration) throws -> DatabasePool {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error as DatabaseError where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode) && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }

    /// Closes the database, its WAL checkpointed and removed when nothing else has it open
    /// (`closeRemovingWAL`). A connection still in use keeps it open.
    public func close() async {
        closedFlag.isSet.store(true, ordering: .sequentiallyConsistent)
        checkpointer.close()
        let (path, openedFile) = (configuration.path, openedFile)
        await pool.closeRemovingWAL(path: path) { openedFile != nil && FileIdentity(path: path) == openedFile }
    }

    // MARK: ModelAdapter

    public func loadZoneState() async throws -> Data? {
        try checkFileUnchanged()
        let zone = zoneID
        // A schema changed since the last write (a column added, a table restored) is checked
        // before the pass starts: the check may forget the download position (GatewayTables.install).
        let cached = catalog.withLock { $0.schemaVersion }
        if try await pool.read({ db in try Self.schemaVersion(db) }) != cached {
            _ = try await write { _, _ in () }
        }
        return try await read { db, _ in
            try Data.fetchOne(
                db, sql: #"SELECT state FROM "_gateway_zone" WHERE zone_name = ? AND owner_name = ?"#,
                arguments: [zone.zoneName, zone.ownerName])
        }
    }

    public func hasChanges() async throws -> Bool {
        try await read { db, _ in try Bool.fetchOne(db, sql: GatewayTables.hasChangesSQL) ?? false }
    }

    public func pendingChangeCount() async throws -> Int {
        try await read { db, _ in try Int.fetchOne(db, sql: GatewayTables.pendingCountSQL) ?? 0 }
    }

    public func pendingChanges(limit: Int, after: Int64?) async throws -> PendingChanges {
        let zone = zoneID
        // With the trigger log folded and the capture installed for this schema, the change table
        // holds every pending change, and a read transaction finds them beside the writer (the
        // synchronizer commits the outcome of the batch before meanwhile). Otherwise the log is
        // folded first, which takes the write lock.
        let cachedSchema = catalog.withLock(\.schemaVersion)
        let unfolded = try await read { db, catalog -> PendingChanges? in
            guard try Self.schemaVersion(db) == cachedSchema, try !GatewayTables.hasUnfoldedLog(db) else { return nil }
            return try Self.pendingChanges(limit: limit, after: after, zone: zone, catalog: catalog, db: db)
        }
        if let unfolded { return unfolded }
        return try await write(foldingIntents: false) { db, catalog in
            try Self.pendingChanges(limit: limit, after: after, zone: zone, catalog: catalog, db: db)
        }
    }

    /// Runs while the cloud saves the batch before, whose intents stay in the journal: the
    /// records read are not that batch's, and an intent of theirs is looked up here.
    private static func pendingChanges(limit: Int, after: Int64?, zone: ZoneID, catalog: TableCatalog, db: Database) throws -> PendingChanges {
        // One synced table with a plain key: the changes come with their rows in one statement.
        let joined = catalog.byTable.count == 1 ? catalog.byTable.values.first.flatMap { $0.pendingWithRowsSQL == nil ? nil : $0 } : nil
        let changes = BoundStatement(try db.cachedStatement(sql: joined?.pendingWithRowsSQL ?? GatewayTables.plainPendingChangesSQL))
        var entries: [PendingEntry] = []
        entries.reserveCapacity(max(0, min(limit, 10_000)))
        var joinedRows: [Record?] = []
        try changes.forEachRow([.integer(after ?? 0), .integer(Int64(max(0, limit)))]) { row in
            guard let name = row.text(at: 0), let table = row.text(at: 1) else { return }
            entries.append(PendingEntry(name: name, table: table, version: row.int64(at: 2), metadata: row.data(at: 3)))
            if let joined {
                joinedRows.append(row.isNull(at: 4) ? nil : joined.record(from: row, id: RecordID(recordName: name, zoneID: zone), offset: 5))
            }
        }
        let names = Set(entries.lazy.map { RecordName($0.name) })
        let intents = try IntentJournal.entries(db) { names.contains(RecordName($0)) }
        if !intents.isEmpty {
            for index in entries.indices {
                if let intent = intents[RecordName(entries[index].name)] { entries[index].metadata = intent }
            }
        }
        var rows: [Record?]
        if joined != nil {
            // Changes whose row the join did not find (deleted rows, names that fit no key) are
            // looked up as before.
            rows = joinedRows
            let unmatched = rows.indices.filter { rows[$0] == nil }
            if !unmatched.isEmpty {
                let found = try Self.rows(of: unmatched.map { entries[$0] }, catalog: catalog, zone: zone, db: db)
                for (position, record) in zip(unmatched, found) { rows[position] = record }
            }
        } else {
            rows = try Self.rows(of: entries, catalog: catalog, zone: zone, db: db)
        }
        try TypedCells.restore(&rows, db: db)
        var pending = PendingChanges()
        pending.saves.reserveCapacity(entries.count)
        for (entry, record) in zip(entries, rows) where catalog.byTable[entry.table] != nil {
            if let record {
                pending.saves.append(PendingSave(record: record, metadata: entry.metadata, version: entry.version))
            } else {
                pending.deletes.append(
                    PendingDelete(recordID: RecordID(recordName: entry.name, zoneID: zone), metadata: entry.metadata, version: entry.version))
            }
        }
        return pending
    }

    /// A pending change as the change table lists it.
    private struct PendingEntry {
        var name: String
        var table: String
        var version: Int64
        var metadata: Data?
    }

    /// The current rows of the entries' records, in the entries' order (`nil`: no row, or a table
    /// no longer synced): one query per table where the key allows it
    /// (``ResolvedTable/selectRowsSQL``), one per record otherwise.
    private static func rows(of entries: [PendingEntry], catalog: TableCatalog, zone: ZoneID, db: Database) throws -> [Record?] {
        var found = [Record?](repeating: nil, count: entries.count)
        // Positions of the entries by table, then by key.
        var batched: [String: (integers: [Int64: Int], texts: [ExactText.Key: Int])] = [:]
        for (position, entry) in entries.enumerated() {
            guard let table = catalog.byTable[entry.table] else { continue }
            guard table.selectRowsSQL != nil, let key = try? table.keyValues(of: entry.name).first else {
                found[position] = try row(of: RecordID(recordName: entry.name, zoneID: zone), in: table, db: db)
                continue
            }
            switch key.storage {
            case .int64(let integer): batched[entry.table, default: ([:], [:])].integers[integer] = position
            case .string(let text): batched[entry.table, default: ([:], [:])].texts[ExactText.Key(text)] = position
            default: continue
            }
        }
        for (tableName, keys) in batched {
            guard let table = catalog.byTable[tableName], let sql = table.selectRowsSQL else { continue }
            let integerKey = table.keyColumns[0].kind == .integer
            let statement = BoundStatement(try db.cachedStatement(sql: sql))
            let list = integerKey ? JSONArrayText.of(keys.integers.keys) : JSONArrayText.of(keys.texts.keys.lazy.map(\.text))
            try statement.forEachRow([.text(list)]) { row in
                let position: Int?
                switch row[0].storage {
                case .int64(let integer): position = integerKey ? keys.integers[integer] : nil
                case .string(let text): position = integerKey ? nil : keys.texts[ExactText.Key(text)]
                default: position = nil
                }
                guard let position else { return }
                found[position] = table.record(from: row, id: RecordID(recordName: entries[position].name, zoneID: zone), offset: 1)
            }
        }
        return found
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        // One query per table for the whole page (names passed as a JSON array) rather than two
        // point queries per record.
        let names = JSONArrayText.of(recordIDs.lazy.map(\.recordName))
        return try await write { db, catalog in
            // Keyed by bytes, as SQLite compares names (see RecordName).
            var metadataRows: [RecordName: (table: String, metadata: Data?)] = [:]
            let metadataCursor = try Row.fetchCursor(
                db.cachedStatement(
                    sql: #"SELECT record_name, table_name, metadata FROM "_gateway_records" WHERE record_name IN (SELECT value FROM json_each(?))"#),
                arguments: [names])
            while let row = try metadataCursor.next() { metadataRows[RecordName(row[0])] = (row[1], row[2]) }
            var changeRows: [RecordName: (table: String, version: Int64)] = [:]
            let changeCursor = try Row.fetchCursor(
                db.cachedStatement(
                    sql: #"SELECT record_name, table_name, version FROM "_gateway_changes" WHERE record_name IN (SELECT value FROM json_each(?))"#),
                arguments: [names])
            while let row = try changeCursor.next() { changeRows[RecordName(row[0])] = (row[1], row[2]) }

            var states: [RecordID: LocalRecordState] = [:]
            for id in recordIDs {
                let metadataRow = metadataRows[id.name]
                let changeRow = changeRows[id.name]
                guard metadataRow != nil || changeRow != nil else { continue }
                var record: Record?
                // Values matter only for merging local edits, so rows without one are not read.
                if let changeRow, let table = catalog.byTable[changeRow.table] {
                    record = try Self.row(of: id, in: table, db: db)
                }
                states[id] = LocalRecordState(record: record, metadata: metadataRow?.metadata, pendingVersion: changeRow?.version)
            }
            return states
        }
    }

    public func syncedRecordIDs() async throws -> [RecordID] {
        let zone = zoneID
        return try await read { db, _ in
            var names = try String.fetchAll(db, sql: #"SELECT record_name FROM "_gateway_records""#)
            let intents = try IntentJournal.entries(db)
            if !intents.isEmpty {
                // Records first sent in a batch whose answer is still outstanding.
                let known = Set(names.map { RecordName($0) })
                names += intents.keys.filter { !known.contains($0) }.map(\.text).sorted()
            }
            return names.map { RecordID(recordName: $0, zoneID: zone) }
        }
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        do {
            try await apply(changes, oneRowAtATime: false)
        } catch let error as SQLiteAdapterError where error.underlying is ManyRowStatement.RowsSkipped {
            // A trigger skipped a row of a group: the page is written again a row at a time,
            // which names it (and fails the same way).
            try await apply(changes, oneRowAtATime: true)
        }
    }

    private func apply(_ changes: DownloadedChanges, oneRowAtATime: Bool) async throws {
        let zone = zoneID
        // Pending versions are compared for the whole page in one query (names as a JSON array).
        let expectedNames = JSONArrayText.of(changes.expectedPendingVersions.keys.lazy.map(\.recordName))
        try await write { db, catalog in
            try db.cachedStatement(sql: #"INSERT INTO "_gateway_applying" (flag) VALUES (1)"#).execute()
            try db.cachedStatement(sql: "PRAGMA defer_foreign_keys = ON").execute()
            var current: [RecordName: Int64] = [:]
            // The write folded the trigger log first: with no pending change at all, every
            // record's current pending version is none, and no name needs looking up.
            if !changes.expectedPendingVersions.isEmpty, try Self.hasPendingChanges(db) {
                let cursor = try Row.fetchCursor(
                    db.cachedStatement(
                        sql: #"SELECT record_name, version FROM "_gateway_changes" WHERE record_name IN (SELECT value FROM json_each(?))"#),
                    arguments: [expectedNames])
                while let row = try cursor.next() { current[RecordName(row[0])] = row[1] }
            }
            var skipped = Set<RecordID>()
            for (id, expected) in changes.expectedPendingVersions where (current[id.name] ?? 0) != expected {
                skipped.insert(id)
            }
            var tables: [RecordID: String] = [:]
            var kept: [TypedCells.Kept] = []
            var touched: [String] = []
            var mapped: (layout: RecordLayout, table: ResolvedTable, mapping: LayoutMapping, upserts: ManyRowStatement)?
            // Rows that leave columns out (``EmptyColumnRule``), by the columns.
            var partial: [Set<Int>: ManyRowStatement] = [:]
            // The fields each written record's synced version held, read once for the page when a
            // record lacks a value.
            var syncedFields: [String: Set<String>]?
            // Rows of groups that wrote nothing (``ManyRowStatement/RowsSkipped``).
            var unwritten = 0
            for record in changes.writes where !skipped.contains(record.id) {
                guard let table = catalog.byType[record.recordType] else {
                    skipped.insert(record.id)  // a record type this store does not hold
                    continue
                }
                if mapped?.layout !== record.layout || mapped?.table !== table {
                    // Rows held for one table are written before another statement runs.
                    try mapped?.upserts.finish()
                    for var statement in partial.values { try statement.finish() }
                    unwritten += (mapped?.upserts.unwrittenRows ?? 0) + partial.values.reduce(0) { $0 + $1.unwrittenRows }
                    partial = [:]
                    mapped = (record.layout, table, table.mapping(from: record.layout), try table.upserts(db, oneRowAtATime: oneRowAtATime))
                }
                let values: [BindableValue]
                do {
                    values = try table.upsertValues(for: record, mapping: mapped!.mapping)
                } catch let error as SQLiteAdapterError where error.code == .invalidRecordName {
                    // A name that cannot be a key of this table (another store's naming, a name
                    // written by hand): left out, as a record of a type with no table is, rather
                    // than failing every page that holds it.
                    skipped.insert(record.id)
                    continue
                }
                let empty = table.emptyColumnRule.emptyColumns(of: record, mapping: mapped!.mapping)
                var omitted: Set<Int> = []
                if !empty.isEmpty {
                    if syncedFields == nil { syncedFields = try Self.syncedFields(of: changes.writes, db: db) }
                    omitted = table.emptyColumnRule.leftOut(of: empty, synced: syncedFields![record.id.recordName])
                }
                if omitted.isEmpty {
                    try mapped!.upserts.add(values, naming: record.id.recordName)
                } else {
                    let keyCount = table.keyColumns.count
                    let kept = values.indices.filter { $0 < keyCount || !omitted.contains($0 - keyCount) }.map { values[$0] }
                    if partial[omitted] == nil { partial[omitted] = try table.upserts(db, omitting: omitted, oneRowAtATime: oneRowAtATime) }
                    try partial[omitted]!.add(kept, naming: record.id.recordName)
                }
                tables[record.id] = table.table
                touched.append(record.id.recordName)
                kept += TypedCells.kept(in: record, table: table, mapping: mapped!.mapping)
            }
            try mapped?.upserts.finish()
            for var statement in partial.values { try statement.finish() }
            unwritten += (mapped?.upserts.unwrittenRows ?? 0) + partial.values.reduce(0) { $0 + $1.unwrittenRows }
            // A row a trigger skipped without an error is not written: committing its metadata
            // would take the store's older values for the cloud's.
            if unwritten > 0 { throw ManyRowStatement.RowsSkipped() }
            for id in changes.deletes where !skipped.contains(id) {
                guard let tableName = try Self.tableName(of: id, db: db), let table = catalog.byTable[tableName],
                    let keys = try? table.keyValues(of: id.recordName)
                else { continue }
                try db.cachedStatement(sql: table.deleteRowSQL).execute(arguments: StatementArguments(keys))
                touched.append(id.recordName)
            }
            try TypedCells.replace(written: touched, with: kept, db: db)
            try Self.commit(
                changes.state, zone: zone, skipping: skipped, tableOf: { id in tables[id] ?? catalog.table(ofRecordNamed: id.recordName) }, db: db)
            try db.cachedStatement(sql: #"DELETE FROM "_gateway_applying""#).execute()
        }
    }

    public func commit(_ update: SyncStateUpdate) async throws {
        let zone = zoneID
        try await write(foldingIntents: false) { db, catalog in
            // The journal holds the intents of the batch this update answers (or, after a failure,
            // of one that was never answered): what the update writes supersedes them. Those of a
            // batch still being sent stay journaled.
            try Self.foldIntents(
                db,
                unlessReplacedBy: { name in
                    let id = RecordID(recordName: name, zoneID: zone)
                    return update.metadata[id] != nil || (!update.removedMetadata.isEmpty && update.removedMetadata.contains(id))
                },
                keeping: { name in !update.stillSending.isEmpty && update.stillSending.contains(RecordID(recordName: name, zoneID: zone)) })
            try Self.commit(
                update, zone: zone, skipping: [], tableOf: { catalog.table(ofRecordNamed: $0.recordName) }, journalingIntents: true, db: db)
        }
    }

    public func failedRecords() async throws -> [FailedRecord] {
        let zone = zoneID
        return try await read { db, _ in try Self.failedRecords(zone: zone, db: db) }
    }

    /// The failure marks that still count (those of the change still pending), in name order;
    /// at most `limit` of them when one is given.
    static func failedRecords(zone: ZoneID, limit: Int? = nil, db: Database) throws -> [FailedRecord] {
        try Row.fetchAll(
            db, sql: "SELECT f.record_name, f.version, f.code, f.message \(GatewayTables.currentFailuresSQL) ORDER BY f.record_name LIMIT ?",
            arguments: [limit ?? -1]
        ).map { row in
            FailedRecord(recordID: RecordID(recordName: row[0], zoneID: zone), failure: RecordFailure(version: row[1], code: row[2], message: row[3]))
        }
    }

    public func retryFailedRecords() async throws {
        try await write { db, _ in try db.execute(sql: #"DELETE FROM "_gateway_failures""#) }
    }

    public func resetSyncState(keepData: Bool) async throws {
        let zone = zoneID
        try await write { db, catalog in
            try db.execute(sql: #"DELETE FROM "_gateway_records""#)
            try db.execute(sql: #"DELETE FROM "_gateway_failures""#)
            try db.execute(
                sql: #"DELETE FROM "_gateway_zone" WHERE zone_name = ? AND owner_name = ?"#,
                arguments: [zone.zoneName, zone.ownerName])
            if keepData {
                for table in catalog.byTable.values { try GatewayTables.backfill(table, db: db) }
                try GatewayTables.compact(db)
            } else {
                try db.execute(sql: #"INSERT INTO "_gateway_applying" (flag) VALUES (1)"#)
                try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
                for table in catalog.byTable.values { try db.execute(sql: "DELETE FROM \(table.quotedTable)") }
                // Folded first, so the blanked log row keeps the highest version handed out.
                try GatewayTables.compact(db)
                try db.execute(sql: #"DELETE FROM "_gateway_changes""#)
                try db.execute(sql: #"DELETE FROM "_gateway_applying""#)
            }
        }
    }

    public func changeSignals() -> ChangeSignals {
        let pool = pool
        // Every captured change takes the next log position (`_gateway_log.version`, its rowid),
        // and the newest log row is never deleted, so the largest moves with each local change
        // (and only then, the fold and backfills keep it): a change
        // made while an earlier one is still pending signals too.
        let path = configuration.path
        // The file's identity is part of the stamp: a file replaced behind the pool signals, so
        // the next pass notices it (`loadZoneState`) and the adapter is opened on the new file.
        // It is read apart from the log: once the file is replaced, a connection the pool opens
        // by path finds a database without the log, and a failed read must not hide the change.
        let closedFlag = closedFlag
        return .polling(every: configuration.signalPollInterval) {
            // A closed adapter's last stamp: nothing it read before can equal it.
            if closedFlag.isSet.load(ordering: .sequentiallyConsistent) { return "closed" }
            let identity = FileIdentity(path: path).map(String.init(describing:)) ?? "removed"
            let version = try? await pool.read { db in try Int64.fetchOne(db, sql: #"SELECT COALESCE(MAX(version), 0) FROM "_gateway_log""#) ?? 0 }
            return "\(identity):\(version.map(String.init) ?? "unreadable")"
        }
    }

    // MARK: Plumbing

    private static func row(of id: RecordID, in table: ResolvedTable, db: Database) throws -> Record? {
        guard let keys = try? table.keyValues(of: id.recordName) else { return nil }
        // Read through a bound statement: a text value holding a NUL character is read whole.
        var record: Record?
        try BoundStatement(db.cachedStatement(sql: table.selectRowSQL)).forEachRow(keys.map { .value($0) }) { row in
            if record == nil { record = table.record(from: row, id: id, offset: 0) }
        }
        return try TypedCells.restore(record, db: db)
    }

    /// The names of the fields whose values each of `records` was last synced with, by record
    /// name; records the store has no metadata for are absent.
    private static func syncedFields(of records: [Record], db: Database) throws -> [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: #"SELECT record_name, metadata FROM "_gateway_records" WHERE record_name IN (SELECT value FROM json_each(?))"#),
            arguments: [JSONArrayText.of(records.lazy.map(\.id.recordName))])
        while let row = try rows.next() {
            guard let metadata = try? RecordMetadata(decoding: row[1] as Data) else { continue }
            fields[row[0]] = Set(metadata.fingerprints.keys)
        }
        return fields
    }

    private static func hasPendingChanges(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_changes")"#)) == true
    }

    private static func tableName(of id: RecordID, db: Database) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT table_name FROM "_gateway_changes" WHERE record_name = ?1
                    UNION ALL SELECT table_name FROM "_gateway_records" WHERE record_name = ?1 LIMIT 1
                    """), arguments: [id.recordName])
    }

    private static func commit(
        _ updateSet: SyncStateUpdate, zone: ZoneID, skipping skipped: Set<RecordID>, tableOf: (RecordID) -> String?,
        journalingIntents: Bool = false, db: Database
    ) throws {
        // An upload's update skips nothing: no lookup per record then.
        let isSkipped: (RecordID) -> Bool = skipped.isEmpty ? { _ in false } : { skipped.contains($0) }
        var writer = try MetadataWriter(db)
        for (id, metadata) in updateSet.metadata where !isSkipped(id) {
            if journalingIntents && updateSet.sending.contains(id) { continue }
            try writer.write(id.recordName, metadata, table: tableOf(id))
        }
        try writer.finish()
        let removeMetadata = BoundStatement(try db.cachedStatement(sql: #"DELETE FROM "_gateway_records" WHERE record_name = ?"#))
        for id in updateSet.removedMetadata where !isSkipped(id) {
            try removeMetadata.execute(.text(id.recordName))
        }
        // A record whose deletion is synced keeps no typed values: a row inserted later under its
        // name is a new record, whatever text its cells hold.
        if try TypedCells.any(db) {
            let deletion = RecordMetadata.encodedDeletion()
            var gone = updateSet.removedMetadata.filter { !isSkipped($0) }.map(\.recordName)
            for (id, metadata) in updateSet.metadata where metadata == deletion && !isSkipped(id) { gone.append(id.recordName) }
            try TypedCells.replace(written: gone, with: [], db: db)
        }
        let settle = BoundStatement(try db.cachedStatement(sql: #"DELETE FROM "_gateway_changes" WHERE record_name = ? AND version <= ?"#))
        let clearFailure = BoundStatement(try db.cachedStatement(sql: #"DELETE FROM "_gateway_failures" WHERE record_name = ? AND version <= ?"#))
        // Failure marks are rare: skip clearing them, a statement per record, when there are none.
        let hasFailures = try Bool.fetchOne(db.cachedStatement(sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_failures")"#)) ?? true
        for (id, version) in updateSet.settled where !isSkipped(id) {
            try settle.execute(.text(id.recordName), .integer(version))
            if hasFailures { try clearFailure.execute(.text(id.recordName), .integer(version)) }
        }
        let markFailed = try db.cachedStatement(
            sql: #"INSERT OR REPLACE INTO "_gateway_failures" (record_name, version, code, message) VALUES (?, ?, ?, ?)"#)
        for (id, failure) in updateSet.failures {
            try markFailed.execute(arguments: [id.recordName, failure.version, failure.code, failure.message])
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO "_gateway_zone" (zone_name, owner_name, state) VALUES (?, ?, ?)
                ON CONFLICT (zone_name, owner_name) DO UPDATE SET state = excluded.state
                """
        ).execute(arguments: [zone.zoneName, zone.ownerName, updateSet.zoneState])
        if journalingIntents {
            try IntentJournal.append(
                updateSet.sending.lazy.compactMap { id in updateSet.metadata[id].map { (name: id.recordName, metadata: $0) } }, db: db)
        }
    }

    /// Writes records' metadata into `_gateway_records`.
    private struct MetadataWriter {
        /// Upserts of records whose table is known, 50 to a statement.
        private var upserts: ManyRowStatement
        private let upsertChanged: BoundStatement
        private let update: BoundStatement
        private let db: Database

        init(_ db: Database) throws {
            self.db = db
            upserts = try ManyRowStatement(db, argumentsPerRow: 3, sql: Self.upsertSQL)
            // For a caller that does not know the table (an intent folded after a lost answer): a
            // record with a pending change takes its table from the change log (one statement for
            // both a new and a known record); any other record is already known and keeps its table.
            upsertChanged = BoundStatement(
                try db.cachedStatement(
                    sql: """
                        INSERT INTO "_gateway_records" (record_name, table_name, metadata)
                        SELECT record_name, table_name, ?2 FROM "_gateway_changes" WHERE record_name = ?1
                        ON CONFLICT (record_name) DO UPDATE SET metadata = excluded.metadata
                        """))
            update = BoundStatement(try db.cachedStatement(sql: #"UPDATE "_gateway_records" SET metadata = ?2 WHERE record_name = ?1"#))
        }

        /// An upsert of records, each row given as the names of its parameters (name, table,
        /// metadata). Later rows win, as later statements would.
        private static func upsertSQL(_ rows: [[String]]) -> String {
            """
                INSERT INTO "_gateway_records" (record_name, table_name, metadata) VALUES \(ManyRowStatement.valuesList(rows))
                ON CONFLICT (record_name) DO UPDATE SET metadata = excluded.metadata, table_name = excluded.table_name
                """
        }

        /// Writes `metadata` for the record named `name`, of `table` when the caller knows it
        /// (a plain upsert, cheaper than reading the table from the change table inside it), by
        /// ``finish()`` at the latest.
        mutating func write(_ name: String, _ metadata: Data, table: String?) throws {
            if let table { return try upserts.add([.text(name), .text(table), .blob(metadata)]) }
            // Held upserts go first: a later write of the same record must win.
            try finish()
            try upsertChanged.execute(.text(name), .blob(metadata))
            if db.changesCount == 0 { try update.execute(.text(name), .blob(metadata)) }
        }

        /// Writes the upserts still held.
        mutating func finish() throws {
            try upserts.finish()
        }
    }

    /// Writes every journaled intent into `_gateway_records` but those `replaced` says a later
    /// write in the same transaction supersedes, and empties the journal.
    private static func foldIntents(
        _ db: Database, unlessReplacedBy replaced: (String) -> Bool = { _ in false }, keeping kept: (String) -> Bool = { _ in false }
    ) throws {
        let left = try IntentJournal.take(db, unlessReplacedBy: replaced, keeping: kept)
        guard !left.isEmpty else { return }
        var writer = try MetadataWriter(db)
        for (name, metadata) in left { try writer.write(name, metadata, table: nil) }
        try writer.finish()
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database, TableCatalog) throws -> T) async throws -> T {
        let path = configuration.path
        return try await Self.guardedAsync(path) { [self] in
            try await pool.read { db in try body(db, try self.currentCatalog(db, writing: false)) }
        }
    }

    /// Runs `body` in an IMMEDIATE transaction, after folding the trigger log and, unless the
    /// caller handles it (`foldingIntents: false`), the upload journal.
    private func write<T: Sendable>(
        foldingIntents: Bool = true, _ body: @escaping @Sendable (Database, TableCatalog) throws -> T
    ) async throws -> T {
        let path = configuration.path
        return try await Self.guardedAsync(path) { [self] in
            let result = try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    try GatewayTables.compact(db)
                    if foldingIntents { try Self.foldIntents(db) }
                    result = try body(db, try self.currentCatalog(db, writing: true))
                    return .commit
                }
                return result!
            }
            checkpointer.noteWrite()
            return result
        }
    }

    /// The table catalog, re-read when the database schema changed (a column was added, a table
    /// created again). Inside a write transaction the capture triggers are checked then too, and
    /// put back where a table was dropped and created again; a read only resolves, without keeping
    /// the result, so that the next write still checks.
    private func currentCatalog(_ db: Database, writing: Bool) throws -> TableCatalog {
        let version = try Self.schemaVersion(db)
        let cached = catalog.withLock { $0 }
        if cached.schemaVersion == version { return cached }
        var fresh = try Self.resolve(configuration, db: db)
        guard writing else { return fresh }
        for table in fresh.byTable.values.sorted(by: { $0.table < $1.table }) {
            try GatewayTables.install(table, db: db)
        }
        try GatewayTables.compact(db)
        try GatewayTables.noteSchemaChecked(try Self.schemaVersion(db), db: db)
        fresh.schemaVersion = try Self.schemaVersion(db)
        catalog.withLock { $0 = fresh }
        return fresh
    }

    private static func schemaVersion(_ db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "PRAGMA schema_version")) ?? 0
    }

    static func resolve(_ configuration: SQLiteAdapterConfiguration, db: Database) throws -> TableCatalog {
        var byTable: [String: ResolvedTable] = [:]
        var byType: [String: ResolvedTable] = [:]
        for mapping in configuration.tables {
            let table: ResolvedTable
            do {
                table = try ResolvedTable(mapping, db: db, path: configuration.path)
            } catch var error as SQLiteAdapterError {
                error.table = mapping.table
                throw error
            }
            guard byTable[table.table] == nil else {
                throw SQLiteAdapterError(
                    .invalidMapping, "table \(table.table) is configured twice in adapter \(configuration.name)", table: mapping.table)
            }
            guard byType[table.recordType] == nil else {
                throw SQLiteAdapterError(
                    .invalidMapping, "record type \(table.recordType) is used by two tables of adapter \(configuration.name)",
                    table: mapping.table)
            }
            for other in byTable.values where RecordNameTemplate.mayCollide(table.template, other.template) {
                let synced = try [other.table, table.table].filter { try hasSyncedRecords($0, db: db) }
                throw SQLiteAdapterError(
                    .invalidMapping,
                    synced.isEmpty
                        ? "tables \(other.table) and \(table.table) would give records the same names; use record_name: \"<Type>.<pk>\""
                        : "tables \(other.table) and \(table.table) would give records the same names, and table \(synced.joined(separator: " and ")) is synced already under its names, which another record_name would change; sync the other table from an adapter of another database",
                    table: mapping.table)
            }
            try refuseRenamedRecords(of: table, db: db)
            byTable[table.table] = table
            byType[table.recordType] = table
        }
        return TableCatalog(schemaVersion: -1, byTable: byTable, byType: byType)
    }

    /// Whether rows of `table` were synced (the gateway keeps their metadata).
    private static func hasSyncedRecords(_ table: String, db: Database) throws -> Bool {
        guard try db.tableExists("_gateway_records") else { return false }
        return try Bool.fetchOne(db, sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_records" WHERE table_name = ?)"#, arguments: [table]) ?? false
    }

    /// Throws when the configured `record_name` would give rows of a table synced before other
    /// names than those they were synced under: the zone's records under the old names would stay
    /// behind, edits to them would no longer reach this store, and the stores would drift apart
    /// while every sync reports success.
    private static func refuseRenamedRecords(of table: ResolvedTable, db: Database) throws {
        guard try db.tableExists("_gateway_tables"),
            let synced = try String.fetchOne(db, sql: #"SELECT record_name_sql FROM "_gateway_tables" WHERE table_name = ?"#, arguments: [table.table])
        else { return }
        let configured = table.template.sqlExpression(keyColumns: table.keyColumns, row: "NEW")
        guard synced != configured, try hasSyncedRecords(table.table, db: db) else { return }
        // Compared on the rows themselves: the same names written another way are no rename.
        let renamed = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(table.quotedTable) AS NEW WHERE (\(synced)) IS NOT (\(configured)))") ?? false
        guard renamed else { return }
        throw SQLiteAdapterError(
            .invalidMapping,
            "the record_name configured for table \(table.table) would give its rows other names than those they were synced under, leaving the zone's records behind; keep the record_name it was synced with (without record_name, a row is named by its key alone)",
            table: table.table)
    }

    /// Installs triggers for the configured tables and removes those of tables no longer synced.
    private static func install(_ catalog: TableCatalog, configuration: SQLiteAdapterConfiguration, db: Database) throws {
        for table in catalog.byTable.values.sorted(by: { $0.table < $1.table }) {
            try GatewayTables.install(table, db: db)
        }
        let installed = try String.fetchAll(db, sql: #"SELECT table_name FROM "_gateway_tables""#)
        for table in installed where catalog.byTable[table] == nil {
            for kind in ["insert", "update", "delete"] {
                try db.execute(sql: "DROP TRIGGER IF EXISTS \(GatewayTables.triggerName(kind, table))")
            }
            try db.execute(sql: #"DELETE FROM "_gateway_changes" WHERE table_name = ?"#, arguments: [table])
            try db.execute(sql: #"DELETE FROM "_gateway_log" WHERE table_name = ? AND record_name <> ''"#, arguments: [table])
            try db.execute(sql: #"DELETE FROM "_gateway_tables" WHERE table_name = ?"#, arguments: [table])
        }
        // Sync state of another zone does not apply here: start over, keeping the data.
        let otherZones = try Int.fetchOne(
            db, sql: #"SELECT COUNT(*) FROM "_gateway_zone" WHERE NOT (zone_name = ? AND owner_name = ?)"#,
            arguments: [configuration.zoneID.zoneName, configuration.zoneID.ownerName]) ?? 0
        if otherZones > 0 {
            try db.execute(sql: #"DELETE FROM "_gateway_zone""#)
            try db.execute(sql: #"DELETE FROM "_gateway_records""#)
            try db.execute(sql: #"DELETE FROM "_gateway_failures""#)
            for table in catalog.byTable.values { try GatewayTables.backfill(table, db: db) }
        }
        try GatewayTables.compact(db)
        try GatewayTables.noteSchemaChecked(try schemaVersion(db), db: db)
    }

    private static func guarded<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteAdapterError {
            throw error
        } catch {
            throw SQLiteAdapterError(.databaseFailed, SQLiteFailureReason.describe(error, path: path), underlying: error)
        }
    }

    private static func guardedAsync<T>(_ path: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SQLiteAdapterError {
            throw error
        } catch let skipped as ManyRowStatement.RowSkipped {
            throw SQLiteAdapterError(
                .databaseFailed,
                "writing downloaded record \(skipped.row) into \(path) was skipped by a trigger without an error (RAISE(IGNORE)); the store keeps its row as it was. Veto with RAISE(ABORT) to say why, or let the trigger take the row",
                refusedRecordName: skipped.row)
        } catch let skipped as ManyRowStatement.RowsSkipped {
            throw SQLiteAdapterError(.databaseFailed, "a trigger skipped writing downloaded rows into \(path) without an error", underlying: skipped)
        } catch let failure as ManyRowStatement.RowFailure {
            // A constraint, a type or a size is the record's values; a full disk or a lock is not.
            let code = (failure.underlying as? DatabaseError)?.resultCode
            let isValues = code == .SQLITE_CONSTRAINT || code == .SQLITE_MISMATCH || code == .SQLITE_TOOBIG
            throw SQLiteAdapterError(
                .databaseFailed, "writing downloaded record \(failure.row): " + SQLiteFailureReason.describe(failure.underlying, path: path),
                underlying: failure.underlying, refusedRecordName: isValues ? failure.row : nil)
        } catch {
            throw SQLiteAdapterError(.databaseFailed, SQLiteFailureReason.describe(error, path: path), underlying: error)
        }
    }

}

/// GRDB also has a `Record`; in this module the word always means the gateway's record.
typealias Record = GatewayCore.Record
