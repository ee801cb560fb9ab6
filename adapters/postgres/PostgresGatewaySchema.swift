import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

/// The adapter's own tables (in the state schema, `gateway` by default) and the plpgsql triggers
/// that capture changes (statement-level, one per event, reading the statement's transition
/// tables), installed idempotently and versioned.
///
/// Capture is split in two so a program's bulk write pays little for it. The triggers only
/// append the names a statement touched to `change_log`, a table without indexes or keys; the
/// adapter moves them into `changes` (one row per record, keyed, with a version from the
/// sequence) in its own transactions (``compactLog(_:)``). Before the split, each trigger
/// upserted into `changes` with a version per row, which cost a 20,000-row `INSERT … SELECT`
/// three times the insert itself.
///
/// Every row is keyed by a scope, the synced schema, so several schemas of one database can sync
/// with different zones. Triggers skip changes made while `gateway.applying` is on, which the
/// adapter sets with `SET LOCAL` inside its own transactions only; other programs need nothing.
/// The trigger's `WHEN` clause checks it, so the gateway's own bulk writes never enter plpgsql.
struct PostgresGatewaySchema: Sendable {
    /// Bump when the tables or the trigger bodies change; installed triggers are then replaced.
    /// 3: statement-level triggers upserting into `changes`. 4: they append to `change_log`.
    /// 5: with the object id of the table they capture (`relid`). 6: `TRUNCATE` captured, every
    /// trigger enabled `ALWAYS` (it fires under `session_replication_role = replica` too).
    static let version = 6
    /// The capture triggers, one per event, each with the transition tables its event has
    /// (`TRUNCATE` has none).
    static let triggers: [(name: String, event: String, transitionTables: String?)] = [
        ("_gateway_capture_insert", "INSERT", "NEW TABLE AS new_rows"),
        ("_gateway_capture_update", "UPDATE", "NEW TABLE AS new_rows OLD TABLE AS old_rows"),
        ("_gateway_capture_delete", "DELETE", "OLD TABLE AS old_rows"),
        ("_gateway_capture_truncate", "TRUNCATE", nil),
    ]
    /// The name a `TRUNCATE` logs in `change_log`: every record of its table synced before is
    /// queued when the log is moved (``compactLog(_:)``). No record has an empty name.
    static let truncatedMark = ""
    /// Trigger names of earlier versions, dropped when the triggers are replaced.
    static let retiredTriggers = ["_gateway_capture"]
    /// Every capture trigger name, of this version and earlier ones.
    static let allTriggerNames = retiredTriggers + triggers.map(\.name)
    /// The channel triggers notify, with the scope as payload.
    static let channel = "gateway_changes"
    /// Serializes installs of gateways starting together (an arbitrary constant: "gwadapt").
    static let installLock: Int64 = 0x6777_6164_6170_74
    /// With a hash of the scope, serializes the moves of one scope's log (an arbitrary constant:
    /// "gwlg"), so versions are handed out in the order the moves commit.
    static let compactionLock: Int32 = 0x6777_6C67

    let schema: String
    let scope: String

    var quotedSchema: String { SQLQuoting.identifier(schema) }
    var changes: String { "\(quotedSchema).changes" }
    var changeLog: String { "\(quotedSchema).change_log" }
    var records: String { "\(quotedSchema).records" }
    var failures: String { "\(quotedSchema).failures" }
    var zones: String { "\(quotedSchema).zones" }
    var tables: String { "\(quotedSchema).tables" }
    var versions: String { "\(quotedSchema).change_version" }
    var typed: String { "\(quotedSchema).typed" }

    /// The row of `table` (one of the state tables) for the record named `n.name`, as a
    /// subquery to join `LATERAL` to `unnest(names) AS n(name)`.
    ///
    /// `LIMIT 1` keeps the planner from flattening it into a join: a page's lookup is then one
    /// primary-key probe per name. Flattened, with the statistics of a table that is filling
    /// up (never analyzed yet), it chose to read every row of the scope and filter them, which
    /// made an initial download quadratic.
    func lookup(in table: String, columns: String, onlyIf condition: String? = nil) -> String {
        "SELECT \(columns) FROM \(table) WHERE scope = \(SQLQuoting.literal(scope)) AND record_name = n.name"
            + (condition.map { " AND \($0)" } ?? "") + " LIMIT 1"
    }

    /// ``lookup(in:columns:onlyIf:)`` of the pending changes, skipped whole when the scope has
    /// none (a store that only receives, or an initial download): PostgreSQL evaluates the
    /// uncorrelated `EXISTS` once per statement and then probes nothing.
    func pendingLookup(columns: String) -> String {
        lookup(in: changes, columns: columns, onlyIf: "EXISTS (SELECT 1 FROM \(changes) WHERE scope = \(SQLQuoting.literal(scope)))")
    }

    func createTables(_ connection: PooledConnection) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.installLock))", logger: connection.logger)
        let statements = [
            "CREATE SCHEMA IF NOT EXISTS \(quotedSchema)",
            "CREATE SEQUENCE IF NOT EXISTS \(versions)",
            // The pending change per record, with its latest version.
            """
            CREATE TABLE IF NOT EXISTS \(changes) (
                scope text NOT NULL, record_name text NOT NULL, table_name text NOT NULL, version bigint NOT NULL,
                PRIMARY KEY (scope, record_name))
            """,
            "CREATE INDEX IF NOT EXISTS changes_by_version ON \(changes) (scope, version)",
            // What the triggers captured and the adapter has not moved into `changes` yet: one
            // row per row a statement touched, `statement` numbering the statements. No key and
            // no index, so appending costs a writer as little as PostgreSQL allows.
            """
            CREATE TABLE IF NOT EXISTS \(changeLog) (
                scope text NOT NULL, record_name text NOT NULL, table_name text NOT NULL, statement bigint NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS \(records) (
                scope text NOT NULL, record_name text NOT NULL, table_name text NOT NULL, metadata bytea NOT NULL,
                PRIMARY KEY (scope, record_name))
            """,
            """
            CREATE TABLE IF NOT EXISTS \(failures) (
                scope text NOT NULL, record_name text NOT NULL, version bigint NOT NULL, code text NOT NULL, message text NOT NULL,
                PRIMARY KEY (scope, record_name))
            """,
            """
            CREATE TABLE IF NOT EXISTS \(zones) (
                scope text PRIMARY KEY, zone_name text NOT NULL, owner_name text NOT NULL, state bytea)
            """,
            // Per record and field, the value the cloud sent for a cell that holds it only as text,
            // with that text (``PostgresTypedCells``).
            """
            CREATE TABLE IF NOT EXISTS \(typed) (
                scope text NOT NULL, record_name text NOT NULL, field text NOT NULL, cell text NOT NULL, value bytea NOT NULL,
                PRIMARY KEY (scope, record_name, field))
            """,
            """
            CREATE TABLE IF NOT EXISTS \(tables) (
                scope text NOT NULL, table_name text NOT NULL, trigger_version integer NOT NULL, record_name_sql text NOT NULL,
                PRIMARY KEY (scope, table_name))
            """,
        ]
        for statement in statements {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
        }
        // The synced columns of each table as last installed (added in place to the state of
        // earlier releases): a column added since gets the cloud's values through a fresh download.
        try await connection.query(
            PostgresQuery(unsafeSQL: "ALTER TABLE \(tables) ADD COLUMN IF NOT EXISTS value_columns text"), logger: connection.logger)
        // The table's object id when last installed: a table dropped and created again with its
        // triggers (a `pg_dump --clean` restore recreates them after the rows) gets a new one.
        try await connection.query(
            PostgresQuery(unsafeSQL: "ALTER TABLE \(tables) ADD COLUMN IF NOT EXISTS table_oid bigint"), logger: connection.logger)
        // The table each change was captured on: after a table was recreated with its triggers,
        // the old table's changes are told apart from the new one's.
        try await connection.query(
            PostgresQuery(unsafeSQL: "ALTER TABLE \(changeLog) ADD COLUMN IF NOT EXISTS relid oid"), logger: connection.logger)
    }

    /// Installs (or replaces, when outdated or missing) the capture trigger of `table`. Queues the
    /// rows of a table synced for the first time as pending changes; a table whose triggers all
    /// went missing was dropped and created again behind the gateway's back, so it joins the zone
    /// again; a table missing some of its triggers has its rows and synced records compared again.
    func install(_ table: PostgresResolvedTable, zoneID: ZoneID, connection: PooledConnection) async throws {
        let newName = table.nameSQL("NEW")
        let columns = try await columnIdentities(of: table, connection: connection)
        let rows = try await connection.query(
            """
            SELECT t.trigger_version, t.record_name_sql, t.value_columns,
                   t.table_oid IS NOT NULL AND t.table_oid <> to_regclass(\(table.qualifiedName))::oid::bigint,
                   (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = to_regclass(\(table.qualifiedName))
                    AND g.tgname = ANY(\(Self.triggers.map(\.name)))) = \(Self.triggers.count),
                   EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = to_regclass(\(table.qualifiedName))
                    AND g.tgname = ANY(\(Self.allTriggerNames)))
            FROM \(unescaped: tables) t WHERE t.scope = \(scope) AND t.table_name = \(table.table)
            """,
            logger: connection.logger)
        // `complete`: this version's triggers are all there. `present`: some capture trigger is,
        // of this version or an earlier one, on the table the gateway installed them on; with
        // none, or on a table with another object id, the table was recreated behind our back.
        var installed: (version: Int, sql: String, columns: String?, complete: Bool, present: Bool)?
        for try await (version, sql, known, recreated, complete, present) in rows.decode((Int, String, String?, Bool, Bool, Bool).self) {
            installed = (version, sql, known, complete && !recreated, present && !recreated)
        }
        if let installed, installed.present, let known = installed.columns, known != columns {
            // A column the store did not have may hold values in the cloud: download them. A
            // column is known by name and number, so one dropped and added again between two
            // syncs (emptied, and no trigger fires for that) is a new column too. (State of an
            // earlier release lists names only: those compare by name.)
            let knownColumns = Set(known.split(separator: "\n").map(String.init))
            let identities = columns.split(separator: "\n").map(String.init)
            let added = zip(table.valueColumns.map(\.name), identities)
                .filter { name, identity in !knownColumns.contains(identity) && !knownColumns.contains(name) }.map(\.0)
            if !added.isEmpty {
                // A column dropped and added again (its name was known) keeps its ancestor in the
                // rows the application changed since and gave a value: that value is an edit of
                // the synced one, as the SQLite adapter decides through `schema_version`.
                let readded = added.filter { name in knownColumns.contains { $0.hasPrefix(name + "@") } }
                let keeping = try await rowsEditedWithValues(in: readded, of: table, connection: connection)
                try await forgetChangeTags(of: table.table, forgettingFields: added, keeping: keeping, connection: connection)
                try await queueRows(holdingValuesIn: added, of: table, connection: connection)
                try await connection.query("DELETE FROM \(unescaped: zones) WHERE scope = \(scope)", logger: connection.logger)
            }
        }
        if let installed, installed.complete, installed.version == Self.version, installed.sql == newName {
            // (State of an earlier release has no object id yet: it is recorded now.)
            try await connection.query(
                """
                UPDATE \(unescaped: tables) SET value_columns = \(columns), table_oid = to_regclass(\(table.qualifiedName))::oid::bigint
                WHERE scope = \(scope) AND table_name = \(table.table)
                  AND (value_columns IS DISTINCT FROM \(columns) OR table_oid IS DISTINCT FROM to_regclass(\(table.qualifiedName))::oid::bigint)
                """,
                logger: connection.logger)
            return
        }

        let function = "\(quotedSchema).\(functionName(table.table))"
        // Statement-level triggers over transition tables: one call per statement, which appends
        // every row the statement touched to the log with one INSERT … SELECT, where a row-level
        // trigger ran plpgsql once per row (a bulk load paid that per row). An update logs the
        // new name and, when the key changed, the old one. One number from the sequence per
        // statement orders the log and moves the sequence, which the change signals watch.
        let log = { (names: String) in
            """
            INSERT INTO \(changeLog) (scope, record_name, table_name, statement, relid)
                SELECT \(SQLQuoting.literal(scope)), logged.name, \(SQLQuoting.literal(table.table)), statement_number, TG_RELID
                FROM (\(names)) AS logged(name);
            """
        }
        let newNames = "SELECT \(table.nameSQL("new_rows")) FROM new_rows"
        let oldNames = "SELECT \(table.nameSQL("old_rows")) FROM old_rows"
        try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    CREATE OR REPLACE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $gateway$
                    DECLARE
                        statement_number bigint := nextval(\(SQLQuoting.literal(versions)));
                    BEGIN
                        IF TG_OP = 'INSERT' THEN
                            \(log(newNames))
                        ELSIF TG_OP = 'UPDATE' THEN
                            \(log("\(newNames) UNION \(oldNames)"))
                        ELSIF TG_OP = 'TRUNCATE' THEN
                            \(log("SELECT \(SQLQuoting.literal(Self.truncatedMark))"))
                        ELSE
                            \(log(oldNames))
                        END IF;
                        PERFORM pg_notify(\(SQLQuoting.literal(Self.channel)), \(SQLQuoting.literal(scope)));
                        RETURN NULL;
                    END
                    $gateway$
                    """), logger: connection.logger)
        for trigger in Self.allTriggerNames {
            try await connection.query(
                PostgresQuery(unsafeSQL: "DROP TRIGGER IF EXISTS \(SQLQuoting.identifier(trigger)) ON \(table.qualifiedName)"), logger: connection.logger)
        }
        for trigger in Self.triggers {
            try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TRIGGER \(SQLQuoting.identifier(trigger.name)) AFTER \(trigger.event) ON \(table.qualifiedName)
                        \(trigger.transitionTables.map { "REFERENCING \($0)" } ?? "") FOR EACH STATEMENT
                        WHEN (current_setting('gateway.applying', true) IS DISTINCT FROM 'on')
                        EXECUTE FUNCTION \(function)()
                        """), logger: connection.logger)
            // Changes a logical replication subscriber or a restore under
            // `session_replication_role = replica` makes are the store's changes too.
            try await connection.query(
                PostgresQuery(unsafeSQL: "ALTER TABLE \(table.qualifiedName) ENABLE ALWAYS TRIGGER \(SQLQuoting.identifier(trigger.name))"),
                logger: connection.logger)
        }
        if let installed, !installed.present {
            // No capture trigger at all, or triggers on a table with another object id: the
            // table was dropped and created again behind the gateway's back (restored from a
            // dump, rebuilt). Its rows share no history with what was synced, so the table joins
            // the zone again (DESIGN D4): its records lose their metadata, its rows are queued,
            // and the zone is downloaded again, so a row the cloud also holds is a conflict
            // without a common ancestor (`join_prefers`), never an edit — even a row the old
            // table had pending: whether the dump was taken after that edit or before it (its
            // values older than what was synced, its empty fields never filled) cannot be told,
            // and taking it for an edit uploads those. Only a row holding exactly the values last
            // synced keeps its metadata: it is that version, and takes the cloud's newer one
            // (`forgetRecordsUnlikeTheirRows`). The changes captured on the old table are
            // dropped, since they describe rows of a table that is gone (a row they name that the
            // new table lacks was deleted by no one): all of `changes` (the log is folded only
            // after this check) and the log's rows of another object id (or of none: logged by
            // an earlier release). Rows the recreated triggers logged since belong to the new
            // table and stay.
            let current = "to_regclass(\(SQLQuoting.literal(table.qualifiedName)))::oid"
            let oldTable = "relid IS DISTINCT FROM \(current)"
            let unchanged = try await forgetRecordsUnlikeTheirRows(of: table, zoneID: zoneID, connection: connection)
            try await connection.query(
                "DELETE FROM \(unescaped: changes) WHERE scope = \(scope) AND table_name = \(table.table)", logger: connection.logger)
            try await connection.query(
                "DELETE FROM \(unescaped: changeLog) WHERE scope = \(scope) AND table_name = \(table.table) AND (\(unescaped: oldTable))",
                logger: connection.logger)
            try await connection.query("DELETE FROM \(unescaped: zones) WHERE scope = \(scope)", logger: connection.logger)
            try await backfill(table, except: unchanged, connection: connection)
        } else if let installed, installed.version == Self.version && !installed.complete {
            // Changes may have gone uncaptured: compare every row and every synced record again.
            try await connection.query(
                """
                INSERT INTO \(unescaped: changes) (scope, record_name, table_name, version)
                SELECT scope, record_name, table_name, nextval(\(versions)::regclass) FROM \(unescaped: records)
                WHERE scope = \(scope) AND table_name = \(table.table)
                ON CONFLICT (scope, record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name
                """, logger: connection.logger)
            try await backfill(table, connection: connection)
        } else if installed == nil {
            try await backfill(table, connection: connection)
        }
        try await connection.query(
            """
            INSERT INTO \(unescaped: tables) (scope, table_name, trigger_version, record_name_sql, value_columns, table_oid)
            VALUES (\(scope), \(table.table), \(Self.version), \(newName), \(columns), to_regclass(\(table.qualifiedName))::oid::bigint)
            ON CONFLICT (scope, table_name) DO UPDATE SET trigger_version = excluded.trigger_version, record_name_sql = excluded.record_name_sql,
                value_columns = excluded.value_columns, table_oid = excluded.table_oid
            """, logger: connection.logger)
    }

    /// Forgets the synced records of a table that joins the zone again, except those whose row
    /// holds exactly the values last synced on every field the table names
    /// (``RecordMetadata/holdsSyncedValues(of:)``): such a row is a copy of the synced version, not
    /// an edit, so it keeps its ancestor and takes the cloud's newer values and deletions as any
    /// unchanged row does. It keeps no intents: the writes they stand for are what the restore
    /// undid, and a cloud version holding their values is not this copy's. Why: joined, a dump's
    /// row whose fields the zone has cleared since (the record deleted and created again without
    /// them) would put them back, since a join keeps a field only one side holds.
    /// Returns the names of the records kept.
    func forgetRecordsUnlikeTheirRows(of table: PostgresResolvedTable, zoneID: ZoneID, connection: PooledConnection) async throws -> [String] {
        let rows = try await connection.query(
            "SELECT record_name, metadata FROM \(unescaped: records) WHERE scope = \(scope) AND table_name = \(table.table)",
            logger: connection.logger)
        var synced: [(id: RecordID, metadata: RecordMetadata)] = []
        for try await (name, blob) in rows.decode((String, ByteBuffer).self) {
            guard let metadata = try? RecordMetadata(decoding: Data(buffer: blob)), metadata.hasSyncedVersion else { continue }
            synced.append((RecordID(recordName: name, zoneID: zoneID), metadata))
        }
        var kept: [String] = []
        var blobs: [ByteBuffer] = []
        for start in stride(from: 0, to: synced.count, by: 1_000) {
            let slice = synced[start..<min(start + 1_000, synced.count)]
            let current = try await PostgresAdapter.rows(of: slice.map { ($0.id, table) }, state: self, connection: connection)
            for (id, metadata) in slice {
                guard let row = current[id], metadata.holdsSyncedValues(of: row) else { continue }
                var copy = metadata
                copy.sent = []
                kept.append(id.recordName)
                blobs.append(ByteBuffer(data: copy.encoded()))
            }
        }
        try await connection.query(
            """
            DELETE FROM \(unescaped: records)
            WHERE scope = \(scope) AND table_name = \(table.table) AND NOT (record_name = ANY(\(kept)::text[]))
            """, logger: connection.logger)
        guard !kept.isEmpty else { return [] }
        try await connection.query(
            """
            UPDATE \(unescaped: records) AS r SET metadata = u.m
            FROM unnest(\(kept)::text[], \(blobs)::bytea[]) AS u(n, m)
            WHERE r.scope = \(scope) AND r.record_name = u.n
            """, logger: connection.logger)
        return kept
    }

    /// Makes the next download write the table's records again even where nothing changed in
    /// the cloud: their metadata keeps its fields (the merge's common ancestor) and loses its
    /// change tag, so the cloud's version is no longer taken for the one already stored. The
    /// `added` columns leave the ancestor: a row's NULL there is not an edit. `keeping` names, per
    /// column, the records whose ancestor keeps it.
    func forgetChangeTags(
        of table: String, forgettingFields added: [String], keeping: [String: Set<String>] = [:], connection: PooledConnection
    ) async throws {
        let rows = try await connection.query(
            "SELECT record_name, metadata FROM \(unescaped: records) WHERE scope = \(scope) AND table_name = \(table)", logger: connection.logger)
        var names: [String] = []
        var blobs: [ByteBuffer] = []
        for try await (name, blob) in rows.decode((String, ByteBuffer).self) {
            var metadata = try RecordMetadata(decoding: Data(buffer: blob))
            metadata.formerChangeTag = metadata.changeTag ?? metadata.formerChangeTag
            metadata.changeTag = nil
            for field in added where keeping[field]?.contains(name) != true { metadata.fingerprints[field] = nil }
            names.append(name)
            blobs.append(ByteBuffer(data: metadata.encoded()))
        }
        guard !names.isEmpty else { return }
        try await connection.query(
            """
            UPDATE \(unescaped: records) AS r SET metadata = u.m
            FROM unnest(\(names)::text[], \(blobs)::bytea[]) AS u(n, m)
            WHERE r.scope = \(scope) AND r.record_name = u.n
            """, logger: connection.logger)
    }

    /// Queues the rows that hold a value of their own in a column the gateway did not sync
    /// before: a renamed column (no trigger fires for `RENAME COLUMN`) or one filled by the
    /// migration that added it. Those values are the application's: queued, they are uploaded
    /// and merged (the field has no ancestor, so the cloud's absence of it is no edit) instead of
    /// the download writing the cloud's record, which lacks them, over them. An empty field, or
    /// the column's default, is what the store did not know yet: it receives the cloud's value.
    func queueRows(holdingValuesIn added: [String], of table: PostgresResolvedTable, connection: PooledConnection) async throws {
        let rows = try await connection.query(
            """
            SELECT a.attname::text, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = to_regclass(\(table.qualifiedName)) AND a.attname = ANY(\(added)) AND NOT a.attisdropped
            """, logger: connection.logger)
        var held: [String] = []
        for try await (column, defaultExpression) in rows.decode((String, String?).self) {
            let quoted = "source." + SQLQuoting.identifier(column)
            // The default is an expression from the table's own definition.
            held.append(defaultExpression.map { "(\(quoted) IS NOT NULL AND \(quoted) IS DISTINCT FROM (\($0)))" } ?? "\(quoted) IS NOT NULL")
        }
        guard !held.isEmpty else { return }
        try await connection.query(
            """
            INSERT INTO \(unescaped: changes) (scope, record_name, table_name, version)
            SELECT \(scope), \(unescaped: table.nameSQL("source")), \(table.table), nextval(\(versions)::regclass)
            FROM \(unescaped: table.qualifiedName) AS source WHERE \(unescaped: held.joined(separator: " OR "))
            ON CONFLICT (scope, record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name
            """, logger: connection.logger)
    }

    /// Per column of `columns`, the records whose row has a captured change and a value there.
    func rowsEditedWithValues(in columns: [String], of table: PostgresResolvedTable, connection: PooledConnection) async throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for column in columns {
            let rows = try await connection.query(
                """
                SELECT \(unescaped: table.nameSQL("source")) FROM \(unescaped: table.qualifiedName) AS source
                WHERE source.\(unescaped: SQLQuoting.identifier(column)) IS NOT NULL AND \(unescaped: table.nameSQL("source")) IN (
                    SELECT record_name FROM \(unescaped: changes) WHERE scope = \(scope) AND table_name = \(table.table)
                    UNION SELECT record_name FROM \(unescaped: changeLog) WHERE scope = \(scope) AND table_name = \(table.table))
                """, logger: connection.logger)
            for try await name in rows.decode(String.self) { result[column, default: []].insert(name) }
        }
        return result
    }

    /// The synced columns of `table` as `name@number`, one per line: a column dropped and added
    /// again under its name gets another number.
    func columnIdentities(of table: PostgresResolvedTable, connection: PooledConnection) async throws -> String {
        let names = table.valueColumns.map(\.name)
        let rows = try await connection.query(
            """
            SELECT a.attname::text, a.attnum::int8 FROM pg_attribute a
            WHERE a.attrelid = to_regclass(\(table.qualifiedName)) AND a.attname = ANY(\(names)) AND NOT a.attisdropped
            """, logger: connection.logger)
        var numbers: [String: Int64] = [:]
        for try await (name, number) in rows.decode((String, Int64).self) { numbers[name] = number }
        return names.map { name in numbers[name].map { "\(name)@\($0)" } ?? name }.joined(separator: "\n")
    }

    /// Removes the trigger of a table no longer synced, and its pending changes.
    func uninstall(table: String, syncedSchema: String, connection: PooledConnection) async throws {
        let qualified = SQLQuoting.identifier(syncedSchema) + "." + SQLQuoting.identifier(table)
        for trigger in Self.allTriggerNames {
            try await connection.query(
                PostgresQuery(unsafeSQL: "DROP TRIGGER IF EXISTS \(SQLQuoting.identifier(trigger)) ON \(qualified)"), logger: connection.logger)
        }
        try await connection.query(
            PostgresQuery(unsafeSQL: "DROP FUNCTION IF EXISTS \(quotedSchema).\(functionName(table))()"), logger: connection.logger)
        for statement in ["DELETE FROM \(changeLog)", "DELETE FROM \(changes)", "DELETE FROM \(tables)"] {
            try await connection.query(
                "\(unescaped: statement) WHERE scope = \(scope) AND table_name = \(table)", logger: connection.logger)
        }
    }

    /// Moves what the triggers logged for this scope into `changes`, inside the caller's
    /// transaction: each record once, with a new version, which replaces the one it had; versions
    /// follow the order of the statements (the sorted subquery is read in order, so `nextval`
    /// runs in that order). Every read of pending versions that decides something runs after it
    /// in the same transaction.
    ///
    /// Moves of one scope are serialized (an advisory lock held to the end of the transaction),
    /// so a later move always hands out higher versions than an earlier one: a record uploaded
    /// at some version and changed again after that always ends with a higher version, so
    /// settling the upload (which removes versions up to the uploaded one) keeps the change.
    /// The log's rows are deleted by the same statement that moves them, so a statement
    /// committed meanwhile stays in the log for the next move.
    func compactLog(_ connection: PooledConnection) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(\(Self.compactionLock), hashtext(\(scope)))", logger: connection.logger)
        // A `TRUNCATE`'s mark stands for every record of its table the gateway synced: each is
        // queued at the truncate's place in the order, and reads as deleted unless a later
        // statement wrote its row again. `LATERAL`, so `records` is read only for a mark: joined,
        // the planner read all of it on every move, marks or not.
        try await connection.query(
            """
            WITH moved AS (DELETE FROM \(unescaped: changeLog) WHERE scope = \(scope) RETURNING record_name, table_name, statement),
            expanded AS (
                SELECT record_name, table_name, statement FROM moved WHERE record_name <> \(Self.truncatedMark)
                UNION ALL
                SELECT r.record_name, r.table_name, m.statement FROM moved m
                CROSS JOIN LATERAL (SELECT record_name, table_name FROM \(unescaped: records)
                                    WHERE scope = \(scope) AND table_name = m.table_name) AS r
                WHERE m.record_name = \(Self.truncatedMark))
            INSERT INTO \(unescaped: changes) (scope, record_name, table_name, version)
            SELECT \(scope), ordered.record_name, ordered.table_name, nextval(\(versions)::regclass)
            FROM (SELECT latest.record_name, latest.table_name
                  FROM (SELECT DISTINCT ON (record_name) record_name, table_name, statement FROM expanded
                        ORDER BY record_name, statement DESC) AS latest
                  ORDER BY latest.statement, latest.record_name) AS ordered
            ON CONFLICT (scope, record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name
            """, logger: connection.logger)
    }

    /// Queues every row of `table` as a pending change (rows that were there before the gateway),
    /// except the `unchanged` records (rows known to hold their synced values).
    func backfill(_ table: PostgresResolvedTable, except unchanged: [String] = [], connection: PooledConnection) async throws {
        try await connection.query(
            """
            INSERT INTO \(unescaped: changes) (scope, record_name, table_name, version)
            SELECT \(scope), \(unescaped: table.nameSQL("source")), \(table.table), nextval(\(versions)::regclass)
            FROM \(unescaped: table.qualifiedName) AS source
            WHERE (\(unescaped: table.nameSQL("source")) = ANY(\(unchanged)::text[])) IS NOT TRUE
            ON CONFLICT (scope, record_name) DO UPDATE SET version = excluded.version, table_name = excluded.table_name
            """, logger: connection.logger)
    }

    /// A function name unique per scope and table, within PostgreSQL's 63-byte limit.
    private func functionName(_ table: String) -> String {
        SQLQuoting.identifier("capture_" + AssetChecksum.of(Data("\(scope)\u{0}\(table)".utf8)).prefix(24))
    }
}
