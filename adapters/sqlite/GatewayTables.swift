import Foundation
import GatewayCore
import GRDB
import SQLiteSupport

/// The adapter's own tables in the user's database (all prefixed `_gateway_`) and the triggers
/// that capture changes, installed idempotently and versioned.
enum GatewayTables {
    /// Bump when the tables or the trigger bodies change; installed triggers are then replaced.
    static let version = 3

    /// What a trigger stores with each change: the clock, as SQLite reads it (a Julian day, to the
    /// millisecond). The fold numbers changes from it (``compact(_:)``); converting it there instead
    /// of in the trigger keeps the programs writing the database at the cost they had without it
    /// (`sqlite-insert`, `BENCHMARKS.md`).
    static let captureClockSQL = "julianday('now')"

    /// ``captureClockSQL``'s value in a log row, in microseconds since 1970.
    static let capturedMicrosecondsSQL = "COALESCE(CAST((at - 2440587.5) * 86400000.0 AS INTEGER) * 1000, 0)"

    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                -- Triggers only append here (one rightmost-page insert per row change: cheap for
                -- the programs writing the database), with the clock in "at" (a Julian day); the
                -- gateway folds the log into "_gateway_changes" inside its own transactions. The
                -- one blanked row (record_name '') the fold keeps holds in "at" the highest change
                -- version handed out instead.
                CREATE TABLE IF NOT EXISTS "_gateway_log" (
                    version INTEGER PRIMARY KEY,
                    record_name TEXT NOT NULL,
                    table_name TEXT NOT NULL,
                    at
                );
                -- The pending change per record, with its latest version.
                CREATE TABLE IF NOT EXISTS "_gateway_changes" (
                    record_name TEXT PRIMARY KEY NOT NULL,
                    table_name TEXT NOT NULL,
                    version INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS "_gateway_changes_by_version" ON "_gateway_changes" (version);
                CREATE TABLE IF NOT EXISTS "_gateway_records" (
                    record_name TEXT PRIMARY KEY NOT NULL,
                    table_name TEXT NOT NULL,
                    metadata BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS "_gateway_failures" (
                    record_name TEXT PRIMARY KEY NOT NULL,
                    version INTEGER NOT NULL,
                    code TEXT NOT NULL,
                    message TEXT NOT NULL
                );
                CREATE TABLE IF NOT EXISTS "_gateway_zone" (
                    zone_name TEXT NOT NULL,
                    owner_name TEXT NOT NULL,
                    state BLOB,
                    PRIMARY KEY (zone_name, owner_name)
                );
                CREATE TABLE IF NOT EXISTS "_gateway_tables" (
                    table_name TEXT PRIMARY KEY NOT NULL,
                    trigger_version INTEGER NOT NULL,
                    record_name_sql TEXT NOT NULL
                );
                -- Holds a row only inside the gateway's own write transactions, which no other
                -- connection can see: triggers skip changes made while it exists.
                CREATE TABLE IF NOT EXISTS "_gateway_applying" (flag INTEGER);
                """)
        try db.execute(sql: IntentJournal.createTableSQL)
        try db.execute(sql: TypedCells.createTableSQL)
        // The synced columns of each table, as last installed: a column added since gets the
        // cloud's values through a fresh download. Files of earlier releases lack the column.
        let columns = try Row.fetchAll(db, sql: #"PRAGMA table_info("_gateway_tables")"#).map { $0["name"] as String }
        if !columns.contains("value_columns") {
            try db.execute(sql: #"ALTER TABLE "_gateway_tables" ADD COLUMN value_columns TEXT"#)
        }
        // The database's schema version when the gateway last checked its tables: a schema
        // changed since may have changed values without a captured change.
        if !columns.contains("schema_version") {
            try db.execute(sql: #"ALTER TABLE "_gateway_tables" ADD COLUMN schema_version INTEGER"#)
        }
        // The capture clock (``captureClockSQL``); files of earlier releases lack the column.
        let logColumns = try Row.fetchAll(db, sql: #"PRAGMA table_info("_gateway_log")"#).map { $0["name"] as String }
        if !logColumns.contains("at") {
            try db.execute(sql: #"ALTER TABLE "_gateway_log" ADD COLUMN at"#)
        }
    }

    /// Moves the tables checked against the schema as of `old` to `new`, a version that only
    /// the gateway's own connection setup produced.
    static func carrySchemaCheck(from old: Int, to new: Int, db: Database) throws {
        guard try db.tableExists("_gateway_tables"), try db.columns(in: "_gateway_tables").contains(where: { $0.name == "schema_version" }) else { return }
        try db.execute(sql: #"UPDATE "_gateway_tables" SET schema_version = ? WHERE schema_version = ?"#, arguments: [new, old])
    }

    /// Records that every table was checked against the database's schema as of `version`.
    static func noteSchemaChecked(_ version: Int, db: Database) throws {
        try db.execute(sql: #"UPDATE "_gateway_tables" SET schema_version = ? WHERE schema_version IS NOT ?"#, arguments: [version, version])
    }

    /// Forgets the synced values of fields a schema change altered without a captured change —
    /// a column dropped and added again between two syncs comes back empty (or filled with its
    /// default), and no trigger fires for that — so that the next download fills them with the
    /// cloud's values, as for a column added later, instead of the store keeping them empty. In
    /// a row with a captured change the values are the application's, except an emptied field
    /// of a column that lost values: a NULL where a value was synced is then taken for the
    /// column's loss rather than a deliberate clear (the cloud's value comes back, also where
    /// the gateway sent the value in an upload whose answer never came). A column lost
    /// values only where a row without a captured change differs from what was synced in it: the
    /// schema version also moves for changes that touch no value (an index, another table), and
    /// there a NULL in an edited row is the application's clear, or a row deleted and inserted
    /// again.
    ///
    /// A row without a captured change that holds a value of its own (neither NULL nor the
    /// column's default) in one of the `known` columns where nothing was synced got it from a
    /// column renamed onto that name: the value is the application's, so the row is queued and
    /// the value uploaded (the field has no ancestor, so the cloud's absence of it is no edit),
    /// and the column counts as one that lost values.
    /// - Returns: whether any field was forgotten (the caller downloads the zone again).
    static func forgetUncapturedValues(of table: ResolvedTable, known: Set<String>, db: Database) throws -> Bool {
        var pending = Set<String>()
        for name in try String.fetchAll(
            db, sql: #"SELECT record_name FROM "_gateway_changes" WHERE table_name = ? UNION SELECT record_name FROM "_gateway_log" WHERE table_name = ?"#,
            arguments: [table.table, table.table])
        { pending.insert(name) }
        let synced = try syncedMetadata(of: table, db: db)
        guard !synced.isEmpty else { return false }
        var lostValues = Set<String>()
        var renamedOnto = Set<String>()
        let nameSQL = table.template.sqlExpression(keyColumns: table.keyColumns, row: table.quotedTable)
        let defaults = try columnDefaults(of: table, db: db)
        for column in table.valueColumns where known.contains(column.name) {
            let holding = try String.fetchAll(
                db, sql: "SELECT \(nameSQL) FROM \(table.quotedTable) WHERE \(holdsOwnValue(column.name, of: table, default: defaults[column.name]))")
            for record in holding where !pending.contains(record) {
                guard let metadata = synced[record], metadata.fingerprints[column.name] == nil else { continue }
                renamedOnto.insert(record)
                lostValues.insert(column.name)
            }
        }
        try forEachSyncedRow(of: table, in: synced, db: db) { name, record, metadata in
            guard !pending.contains(name) else { return }
            for column in table.valueColumns where !lostValues.contains(column.name) {
                if let known = metadata.fingerprints[column.name], known != record[column.name].map(FieldFingerprint.init) { lostValues.insert(column.name) }
            }
        }
        guard !lostValues.isEmpty else { return false }
        try db.execute(
            sql: #"INSERT INTO "_gateway_log" (record_name, table_name) SELECT value, ? FROM json_each(?)"#,
            arguments: [table.table, JSONArrayText.of(renamedOnto.sorted())])
        let update = try db.makeStatement(sql: #"UPDATE "_gateway_records" SET metadata = ? WHERE record_name = ?"#)
        var forgot = false
        try forEachSyncedRow(of: table, in: synced, db: db) { name, record, synced in
            var metadata = synced
            var changed = false
            let edited = pending.contains(name)
            for column in table.valueColumns where lostValues.contains(column.name) {
                let value = record[column.name]
                guard let known = metadata.fingerprints[column.name], known != value.map(FieldFingerprint.init), !edited || value == nil else { continue }
                metadata.fingerprints[column.name] = nil
                changed = true
            }
            guard changed else { return }
            metadata.changeTag = nil
            // The intents of an upload whose answer never came go too: the version it sent held
            // the lost values, so it is not an earlier state of the row any more.
            metadata.sent = []
            try update.execute(arguments: [metadata.encoded(), name])
            forgot = true
        }
        return forgot
    }

    /// The declared default of each column of `table` that has one, as SQL text (a constant
    /// expression: SQLite refuses others in `ADD COLUMN`), read from the database's own schema.
    private static func columnDefaults(of table: ResolvedTable, db: Database) throws -> [String: String] {
        var defaults: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "PRAGMA table_info(\(table.quotedTable))") {
            if let value = row["dflt_value"] as String? { defaults[row["name"]] = value }
        }
        return defaults
    }

    /// An SQL condition true for a row of `table` whose `column` holds a value of its own:
    /// neither NULL nor the column's declared default (what a store that did not know the
    /// column yet holds there).
    private static func holdsOwnValue(_ column: String, of table: ResolvedTable, default: String?) -> String {
        let quoted = "\(table.quotedTable).\(SQLQuoting.identifier(column))"
        return `default`.map { "(\(quoted) IS NOT NULL AND \(quoted) IS NOT (\($0)))" } ?? "\(quoted) IS NOT NULL"
    }

    /// The metadata of the records of `table`, by record name; a damaged blob throws, or is left
    /// out when `skippingDamaged`.
    private static func syncedMetadata(of table: ResolvedTable, skippingDamaged: Bool = false, db: Database) throws -> [String: RecordMetadata] {
        var synced: [String: RecordMetadata] = [:]
        for row in try Row.fetchAll(db, sql: #"SELECT record_name, metadata FROM "_gateway_records" WHERE table_name = ?"#, arguments: [table.table]) {
            let data: Data = row["metadata"]
            guard let metadata = skippingDamaged ? try? RecordMetadata(decoding: data) : try RecordMetadata(decoding: data) else { continue }
            synced[row["record_name"]] = metadata
        }
        return synced
    }

    /// Calls `body` with each row of `table` that has metadata in `synced`: its record name, its
    /// record and that metadata, one row at a time.
    private static func forEachSyncedRow(
        of table: ResolvedTable, in synced: [String: RecordMetadata], db: Database, _ body: (String, Record, RecordMetadata) throws -> Void
    ) throws {
        let nameSQL = table.template.sqlExpression(keyColumns: table.keyColumns, row: table.quotedTable)
        let values = table.valueColumns.map { "\(table.quotedTable).\(SQLQuoting.identifier($0.name))" }
        // Through a bound statement, which reads a text value holding a NUL character whole.
        let typed = try TypedCells.any(db)
        let rows = BoundStatement(try db.makeStatement(sql: "SELECT \(([nameSQL] + values).joined(separator: ", ")) FROM \(table.quotedTable)"))
        try rows.forEachRow([]) { row in
            guard let name = row.text(at: 0), let metadata = synced[name] else { return }
            // (The zone does not matter to the comparison.)
            let record = table.record(from: row, id: RecordID(recordName: name, zoneID: ZoneID(zoneName: "")), offset: 1)
            try body(name, typed ? try TypedCells.restore(record, db: db) ?? record : record, metadata)
        }
    }

    /// Forgets the synced records of a table that joins the zone again, except those whose row
    /// holds exactly the values last synced (``RecordMetadata/holdsSyncedValues(of:)``): such a row
    /// is a copy of the synced version, not an edit, so it keeps its ancestor (without the intents
    /// of writes the restore undid) and takes the cloud's newer values and deletions as any
    /// unchanged row does. Joined, it would put back fields the zone cleared since (the record
    /// deleted and created again without them), since a join keeps a field only one side holds.
    /// Returns the names of the records kept.
    static func forgetRecordsUnlikeTheirRows(of table: ResolvedTable, db: Database) throws -> [String] {
        // (A damaged blob is forgotten with the rest: the table joins anyway.)
        let synced = try syncedMetadata(of: table, skippingDamaged: true, db: db).filter { $0.value.hasSyncedVersion }
        var kept: [String] = []
        if !synced.isEmpty {
            let update = try db.makeStatement(sql: #"UPDATE "_gateway_records" SET metadata = ? WHERE record_name = ?"#)
            try forEachSyncedRow(of: table, in: synced, db: db) { name, record, synced in
                guard synced.holdsSyncedValues(of: record) else { return }
                var metadata = synced
                metadata.sent = []
                try update.execute(arguments: [metadata.encoded(), name])
                kept.append(name)
            }
        }
        try db.execute(
            sql: #"DELETE FROM "_gateway_records" WHERE table_name = ? AND record_name NOT IN (SELECT value FROM json_each(?))"#,
            arguments: [table.table, JSONArrayText.of(kept)])
        return kept
    }

    /// Makes the next download write the table's records again even where nothing changed in
    /// the cloud: their metadata keeps its fields (the common ancestor of a merge) and loses its
    /// change tag, so the cloud's version is no longer taken for the one already stored. The
    /// `added` columns leave the ancestor: a row's NULL there is what the store did not know yet,
    /// not an edit, so a pending edit of the row merges with the cloud's value for them.
    static func forgetChangeTags(of table: String, forgettingFields added: [String], db: Database) throws {
        let rows = try Row.fetchAll(
            db, sql: #"SELECT record_name, metadata FROM "_gateway_records" WHERE table_name = ?"#, arguments: [table])
        let update = try db.makeStatement(sql: #"UPDATE "_gateway_records" SET metadata = ? WHERE record_name = ?"#)
        for row in rows {
            var metadata = try RecordMetadata(decoding: row["metadata"] as Data)
            metadata.formerChangeTag = metadata.changeTag ?? metadata.formerChangeTag
            metadata.changeTag = nil
            for field in added { metadata.fingerprints[field] = nil }
            try update.execute(arguments: [metadata.encoded(), row["record_name"] as String])
        }
    }

    /// Queues the rows that hold a value of their own in a column the gateway did not sync
    /// before: a renamed column (no trigger fires for a rename) or one filled by the migration
    /// that added it. Those values are the application's: queued, they are uploaded and merged
    /// (the field has no ancestor, so the cloud's absence of it is no edit) instead of the
    /// download writing the cloud's record, which lacks them, over them. An empty field, or the
    /// column's declared default, is what the store did not know yet: it receives the cloud's
    /// value.
    static func queueRows(holdingValuesIn added: [String], of table: ResolvedTable, db: Database) throws {
        let defaults = try columnDefaults(of: table, db: db)
        let held = added.map { holdsOwnValue($0, of: table, default: defaults[$0]) }
        let name = table.template.sqlExpression(keyColumns: table.keyColumns, row: table.quotedTable)
        try db.execute(
            sql: #"INSERT INTO "_gateway_log" (record_name, table_name) SELECT "# + name + ", " + SQLQuoting.literal(table.table)
                + " FROM \(table.quotedTable) WHERE " + held.joined(separator: " OR "))
    }

    /// Makes the next sync download the whole zone again (the zone state is the synchronizer's
    /// blob; without it the change token starts over). Records whose metadata still matches the
    /// cloud are skipped as already synced; the others are merged.
    static func forgetDownloadPosition(_ db: Database) throws {
        try db.execute(sql: #"DELETE FROM "_gateway_zone""#)
    }

    /// Installs (or replaces, when outdated or missing) the change-capture triggers of `table`.
    /// Queues the rows of a table synced for the first time as pending changes; a table whose
    /// triggers went missing was dropped and created again behind the gateway's back, so it
    /// joins the zone again; a table with a column it did not have downloads the zone again.
    static func install(_ table: ResolvedTable, db: Database) throws {
        let newName = table.template.sqlExpression(keyColumns: table.keyColumns, row: "NEW")
        let oldName = table.template.sqlExpression(keyColumns: table.keyColumns, row: "OLD")
        let installed = try Row.fetchOne(
            db, sql: #"SELECT trigger_version, record_name_sql, value_columns, schema_version FROM "_gateway_tables" WHERE table_name = ?"#,
            arguments: [table.table])
        let kinds = ["insert", "update", "delete"]
        let present = try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name COLLATE NOCASE IN (?, ?, ?)",
            arguments: StatementArguments(kinds.map { plainTriggerName($0, table.table) })) == kinds.count
        let columns = table.valueColumns.map(\.name).joined(separator: "\n")
        let knownColumns = Set(((installed?["value_columns"] as String?) ?? "").split(separator: "\n").map(String.init))
        if let installed, present, let checked = installed["schema_version"] as Int?, checked != (try Int.fetchOne(db, sql: "PRAGMA schema_version")),
            try forgetUncapturedValues(of: table, known: knownColumns, db: db)
        {
            try forgetDownloadPosition(db)
        }
        if let installed, present, let known = installed["value_columns"] as String?, known != columns {
            // A column the store did not have may hold values in the cloud: download them.
            let added = table.valueColumns.map(\.name).filter { !knownColumns.contains($0) }
            if !added.isEmpty {
                try forgetChangeTags(of: table.table, forgettingFields: added, db: db)
                try queueRows(holdingValuesIn: added, of: table, db: db)
                try forgetDownloadPosition(db)
            }
        }
        if let installed, present, installed["trigger_version"] == version, installed["record_name_sql"] == newName {
            if installed["value_columns"] as String? != columns {
                try db.execute(
                    sql: #"UPDATE "_gateway_tables" SET value_columns = ? WHERE table_name = ?"#, arguments: [columns, table.table])
            }
            return
        }
        let quoted = table.quotedTable
        let literal = SQLQuoting.literal(table.table)
        let skip = #"WHEN NOT EXISTS (SELECT 1 FROM "_gateway_applying")"#
        func log(_ name: String) -> String {
            #"INSERT INTO "_gateway_log" (record_name, table_name, at) VALUES ("# + name + ", " + literal + ", " + captureClockSQL + ");"
        }
        let updateColumns: String
        if let include = table.mapping.include {
            let names = Set(table.keyColumns.map(\.name) + include)
            updateColumns = " OF " + names.sorted().map(SQLQuoting.identifier).joined(separator: ", ")
        } else {
            updateColumns = ""
        }
        for kind in kinds {
            try db.execute(sql: "DROP TRIGGER IF EXISTS \(triggerName(kind, table.table))")
        }
        try db.execute(
            sql: """
                CREATE TRIGGER \(triggerName("insert", table.table)) AFTER INSERT ON \(quoted) \(skip)
                BEGIN \(log(newName)) END;
                CREATE TRIGGER \(triggerName("update", table.table)) AFTER UPDATE\(updateColumns) ON \(quoted) \(skip)
                BEGIN
                    \(log(newName))
                    INSERT INTO "_gateway_log" (record_name, table_name, at)
                        SELECT \(oldName), \(literal), \(captureClockSQL) WHERE \(oldName) IS NOT \(newName);
                END;
                CREATE TRIGGER \(triggerName("delete", table.table)) AFTER DELETE ON \(quoted) \(skip)
                BEGIN \(log(oldName)) END;
                """)
        if installed == nil {
            try backfill(table, db: db)
        } else if !present {
            // The table was dropped and created again behind the gateway's back (restored from a
            // dump, rebuilt): its rows share no history with what was synced, so the table joins
            // the zone again (DESIGN D4). Its records lose their metadata, its rows are queued,
            // and the zone is downloaded again: a row the cloud also holds is a conflict without
            // a common ancestor (`join_prefers`), never an edit of the synced version. (Without
            // triggers, a row edited since the table came back cannot be told from one the copy
            // held, so no row keeps an ancestor, except one holding exactly its synced values:
            // that is the synced version, `forgetRecordsUnlikeTheirRows`.) The changes captured
            // on the old table are dropped: a row they name that the new table lacks was deleted
            // by no one, so the cloud's version comes back.
            try compact(db)
            let unchanged = try forgetRecordsUnlikeTheirRows(of: table, db: db)
            try db.execute(sql: #"DELETE FROM "_gateway_changes" WHERE table_name = ?"#, arguments: [table.table])
            try backfill(table, db: db)
            try db.execute(
                sql: #"DELETE FROM "_gateway_changes" WHERE record_name IN (SELECT value FROM json_each(?))"#,
                arguments: [JSONArrayText.of(unchanged)])
            try forgetDownloadPosition(db)
        }
        try db.execute(
            sql: """
                INSERT INTO "_gateway_tables" (table_name, trigger_version, record_name_sql, value_columns) VALUES (?, ?, ?, ?)
                ON CONFLICT (table_name) DO UPDATE SET trigger_version = excluded.trigger_version, record_name_sql = excluded.record_name_sql,
                    value_columns = excluded.value_columns
                """,
            arguments: [table.table, version, newName, columns])
    }

    /// Queues every row of `table` as a pending change (rows that were there before the gateway).
    ///
    /// The rows go straight into the change table, numbered after every version handed out, and
    /// the blanked log row records the last number so that later versions stay above them. Going
    /// through the log instead costs a log row per row and a sort of all of them in the fold:
    /// 0.26–0.40 against 0.19–0.22 s for 100,000 rows (Python's sqlite3, the same statements).
    static func backfill(_ table: ResolvedTable, db: Database) throws {
        let count = try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedTable)") ?? 0
        guard count > 0 else { return }
        try compact(db)
        let floor = try versionFloor(db)
        let base = floor.version
        let name = table.template.sqlExpression(keyColumns: table.keyColumns, row: "source")
        let numbering = try tableOrderNumbering(table, rows: count, after: base, db: db)
        // Numbered in table order, inserted in name order (appends to the change table's key).
        // `WHERE true` tells SQLite's parser that ON CONFLICT belongs to the INSERT.
        try db.execute(
            sql: """
                INSERT INTO "_gateway_changes" (record_name, table_name, version)
                SELECT name, \(SQLQuoting.literal(table.table)), version
                FROM (SELECT \(name) AS name, ?1 + \(numbering.expression) AS version FROM \(table.quotedTable) AS source)
                WHERE true ORDER BY name
                ON CONFLICT (record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name;
                """,
            arguments: [base])
        let last = base + numbering.span
        try db.execute(
            sql: #"INSERT OR REPLACE INTO "_gateway_log" (version, record_name, table_name, at) VALUES (?, '', '', ?)"#,
            arguments: [floor.position, last])
    }

    /// How a backfill numbers rows in table order, from 1 up to `span`: by rowid where the table
    /// has one (a column of its own, read as the scan goes: 104 → 81 ms per 100,000 rows against a
    /// window function), else `ROW_NUMBER()`. Rowids may have gaps, so `span` can exceed the row
    /// count; it never lets a version pass `Int64.max`.
    static func tableOrderNumbering(
        _ table: ResolvedTable, rows count: Int64, after base: Int64, db: Database
    ) throws -> (expression: String, span: Int64) {
        let rowNumber = (expression: "ROW_NUMBER() OVER ()", span: count)
        let columns = Set(try String.fetchAll(db, sql: "SELECT lower(name) FROM pragma_table_xinfo(?)", arguments: [table.table]))
        // A column may take any of the rowid's names; a WITHOUT ROWID table (or a view) has none.
        guard let alias = ["rowid", "_rowid_", "oid"].first(where: { !columns.contains($0) }),
            let bounds = try? Row.fetchOne(db, sql: "SELECT MIN(\(alias)), MAX(\(alias)) FROM \(table.quotedTable)"),
            let lowest = bounds[0] as Int64?, let highest = bounds[1] as Int64?
        else { return rowNumber }
        let (width, overflow) = highest.subtractingReportingOverflow(lowest)
        guard !overflow, width < Int64.max - base else { return rowNumber }
        return ("(source.\(alias) - (\(lowest)) + 1)", width + 1)
    }

    /// Folds the trigger log into the pending changes (latest change per record), numbering each
    /// record's change from the clock its trigger read: its log position above the last fold, plus
    /// how far the clock had moved past the highest version handed out before, so versions only
    /// grow (a version read before an edit is always lower than the edit's) and follow the clock.
    /// The last log row stays, blanked, so that log positions keep growing, and records that
    /// highest version in `at`.
    ///
    /// Why the clock: a file restored from a backup holds the backup's log, so log positions alone
    /// would number a change made after the restore below one the adapter uploaded before it, and
    /// a delete from before the backup could not be told from one made after the restore (the
    /// merge's rule for a restored store's deletes, ``SyncContext``). Numbered in the fold, the
    /// trigger costs the programs writing the database only the clock read.
    static func compact(_ db: Database) throws {
        guard try hasUnfoldedLog(db) else { return }
        let floor = try versionFloor(db)
        try db.execute(
            sql: """
                INSERT INTO "_gateway_changes" (record_name, table_name, version)
                    SELECT record_name, table_name, position + max(?2 - ?1, \(capturedMicrosecondsSQL) - ?1) FROM (
                        SELECT record_name, table_name, MAX(version) AS position, at FROM "_gateway_log"
                        WHERE record_name <> '' GROUP BY record_name)
                    WHERE true
                    ON CONFLICT (record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name
                """,
            arguments: [floor.position, floor.version])
        try db.execute(sql: #"DELETE FROM "_gateway_log" WHERE version < (SELECT MAX(version) FROM "_gateway_log")"#)
        try db.execute(
            sql: #"UPDATE "_gateway_log" SET record_name = '', table_name = '', at = max(?, COALESCE((SELECT MAX(version) FROM "_gateway_changes"), 0))"#,
            arguments: [floor.version])
    }

    /// The blanked log row's position and the highest change version handed out (its `at`; in a
    /// file of an earlier release, the position itself), or zeros for a log that has none.
    static func versionFloor(_ db: Database) throws -> (position: Int64, version: Int64) {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: #"SELECT version, COALESCE(at, version) FROM "_gateway_log" WHERE record_name = '' ORDER BY version DESC LIMIT 1"#))
        return row.map { ($0[0], $0[1]) } ?? (0, 0)
    }

    /// Whether the trigger log holds changes not yet folded into the change table.
    static func hasUnfoldedLog(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_log" WHERE record_name <> '')"#)) == true
    }

    /// The pending changes after a version (`?1`), oldest first, at most `?2`, without those whose
    /// version failed, each with its metadata; `columns` and `join` add to the select list and
    /// the joins (``ResolvedTable/pendingWithRowsSQL``).
    static func pendingChangesSQL(addingColumns columns: String = "", join: String = "") -> String {
        """
        SELECT c.record_name, c.table_name, c.version, r.metadata\(columns.isEmpty ? "" : ", " + columns)
        FROM "_gateway_changes" c LEFT JOIN "_gateway_records" r ON r.record_name = c.record_name
        \(join)
        WHERE c.version > ?
          AND NOT EXISTS (SELECT 1 FROM "_gateway_failures" f WHERE f.record_name = c.record_name AND f.version = c.version)
        ORDER BY c.version LIMIT ?
        """
    }

    /// ``pendingChangesSQL(addingColumns:join:)`` alone: the changes without their rows.
    static let plainPendingChangesSQL = pendingChangesSQL()

    /// SQL that is true when the store has local changes (folded or not).
    static let hasChangesSQL = """
        SELECT EXISTS (SELECT 1 FROM "_gateway_changes") OR EXISTS (SELECT 1 FROM "_gateway_log" WHERE record_name <> '')
        """

    /// Counts the records with pending changes: those in the change table, and those only the
    /// trigger log names yet.
    static let pendingCountSQL = """
        SELECT (SELECT COUNT(*) FROM "_gateway_changes")
             + (SELECT COUNT(DISTINCT record_name) FROM "_gateway_log" l WHERE record_name <> ''
                AND NOT EXISTS (SELECT 1 FROM "_gateway_changes" c WHERE c.record_name = l.record_name))
        """

    /// The failure marks (`f`) that still count: those of the change still pending.
    static let currentFailuresSQL = """
        FROM "_gateway_failures" f JOIN "_gateway_changes" c ON c.record_name = f.record_name AND c.version = f.version
        """

    /// The quoted name of the trigger that captures `kind` changes of `table`.
    static func triggerName(_ kind: String, _ table: String) -> String {
        SQLQuoting.identifier(plainTriggerName(kind, table))
    }

    /// That name as `sqlite_master` holds it.
    static func plainTriggerName(_ kind: String, _ table: String) -> String {
        "_gateway_\(kind)_\(table)"
    }
}
