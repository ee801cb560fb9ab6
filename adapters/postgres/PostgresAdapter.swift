import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport
import Synchronization

/// Keeps tables of a PostgreSQL schema, written by any program, in sync with one zone.
///
/// plpgsql triggers log every insert, update and delete into the state schema's `changes` table
/// and `NOTIFY` the change, whoever makes them; the gateway's own writes set `gateway.applying`
/// for their transaction only, which the triggers skip. Sync metadata, failure marks and the zone
/// state live in the state schema and commit with the data. Column types come from the catalog,
/// which is read again in every transaction, so an added column is picked up without a restart.
public final class PostgresAdapter: ModelAdapter {
    public let configuration: PostgresAdapterConfiguration
    let pool: PostgresConnectionPool
    let state: PostgresGatewaySchema
    /// The catalog as last resolved and installed, with the fingerprint of the tables' shape it
    /// was resolved from; a transaction that finds the same fingerprint reuses it.
    private let installed = Mutex<(fingerprint: String, catalog: TableCatalog)?>(nil)
    /// The configured tables as ``PostgresShapeFingerprint`` takes them.
    private let fingerprintedTables: [String]

    public var name: String { configuration.name }
    public var zoneID: ZoneID { configuration.zoneID }

    /// The configured tables as the database has them.
    struct TableCatalog: Sendable {
        var byTable: [String: PostgresResolvedTable] = [:]
        var byType: [String: PostgresResolvedTable] = [:]
        /// The tables, each after the synced tables its foreign keys refer to: a page's rows are
        /// written in this order and deleted in the reverse one, so a parent row goes in before
        /// its children and out after them (the rest in configuration order).
        var writeOrder: [String] = []
    }

    private init(configuration: PostgresAdapterConfiguration) {
        self.configuration = configuration
        pool = PostgresConnectionPool(
            endpoint: configuration.endpoint, maximumConnections: configuration.maximumConnections, requestTimeout: configuration.requestTimeout)
        state = PostgresGatewaySchema(schema: configuration.stateSchema, scope: configuration.schema)
        fingerprintedTables = configuration.tables.map { SQLQuoting.identifier(configuration.schema) + "." + SQLQuoting.identifier($0.table) }
    }

    /// Connects, checks every configured table, and installs the change capture.
    /// - Throws: ``PostgresAdapterError`` naming the database, table or column that does not fit.
    public static func open(_ configuration: PostgresAdapterConfiguration) async throws -> PostgresAdapter {
        let adapter = PostgresAdapter(configuration: configuration)
        do {
            try await adapter.transaction("installing the change capture") { connection, _ in () }
        } catch {
            await adapter.close()
            throw error
        }
        return adapter
    }

    /// Checks the configured tables against the database without changing anything.
    public static func check(_ configuration: PostgresAdapterConfiguration) async throws {
        let adapter = PostgresAdapter(configuration: configuration)
        defer { withExtendedLifetime(adapter) {} }
        do {
            try await adapter.pool.transaction(doing: "checking the tables", isolation: "REPEATABLE READ READ ONLY") { connection in
                _ = try await Self.resolve(configuration, connection: connection)
            }
            await adapter.close()
        } catch {
            await adapter.close()
            throw adapter.adapterError(error)
        }
    }

    /// Closes the pooled connections.
    public func close() async {
        await pool.close()
    }

    // MARK: ModelAdapter

    public func loadZoneState() async throws -> Data? {
        // In a transaction, which checks the tables first: a table restored behind the gateway's
        // back forgets the download position before the pass reads it.
        try await transaction("loading the zone state") { [state] connection, _ in
            let rows = try await connection.query(
                "SELECT state FROM \(unescaped: state.zones) WHERE scope = \(state.scope)", logger: connection.logger)
            for try await (value) in rows.decode(ByteBuffer?.self) { return value.map { Data(buffer: $0) } }
            return nil
        }
    }

    public func hasChanges() async throws -> Bool {
        try await read("checking for changes") { [state] connection in try await Self.hasChanges(state, connection) }
    }

    public func pendingChangeCount() async throws -> Int {
        try await read("counting changes") { [state] connection in try await Self.pendingChangeCount(state, connection) }
    }

    static func hasChanges(_ state: PostgresGatewaySchema, _ connection: PooledConnection) async throws -> Bool {
        let rows = try await connection.query(
            """
            SELECT EXISTS (SELECT 1 FROM \(unescaped: state.changes) WHERE scope = \(state.scope))
                OR EXISTS (SELECT 1 FROM \(unescaped: state.changeLog) WHERE scope = \(state.scope))
            """, logger: connection.logger)
        for try await (value) in rows.decode(Bool.self) { return value }
        return false
    }

    static func pendingChangeCount(_ state: PostgresGatewaySchema, _ connection: PooledConnection) async throws -> Int {
        let rows = try await connection.query(
            """
            SELECT (SELECT count(*) FROM \(unescaped: state.changes) WHERE scope = \(state.scope))
                + (SELECT count(*) FROM (
                       SELECT l.record_name FROM \(unescaped: state.changeLog) l
                       WHERE l.scope = \(state.scope) AND l.record_name <> \(PostgresGatewaySchema.truncatedMark)
                       UNION
                       SELECT r.record_name FROM \(unescaped: state.records) r
                       WHERE r.scope = \(state.scope) AND r.table_name IN (
                           SELECT table_name FROM \(unescaped: state.changeLog)
                           WHERE scope = \(state.scope) AND record_name = \(PostgresGatewaySchema.truncatedMark))) AS logged
                   WHERE NOT EXISTS (SELECT 1 FROM \(unescaped: state.changes) c WHERE c.scope = \(state.scope) AND c.record_name = logged.record_name))
            """, logger: connection.logger)
        for try await (value) in rows.decode(Int64.self) { return Int(value) }
        return 0
    }

    /// Reads what `gateway status` shows in a read-only transaction: nothing is installed, so a
    /// database the gateway has not set up yet is reported as such.
    /// - Throws: ``PostgresAdapterError`` naming the database.
    public static func readStatus(_ configuration: PostgresAdapterConfiguration) async throws -> StoreStatusSnapshot {
        let adapter = PostgresAdapter(configuration: configuration)
        let state = adapter.state
        do {
            let snapshot = try await adapter.pool.transaction(doing: "reading the status", isolation: "REPEATABLE READ READ ONLY") { connection in
                let found = try await connection.query(
                    "SELECT to_regclass(\(state.zones)) IS NOT NULL, to_regclass(\(state.changeLog)) IS NOT NULL", logger: connection.logger)
                var (isSetUp, hasLog) = (false, false)
                for try await (zones, log) in found.decode((Bool, Bool).self) { (isSetUp, hasLog) = (zones, log) }
                guard isSetUp else {
                    return StoreStatusSnapshot.notSetUp(
                        "the gateway has not set this database up yet; its first sync creates the schema \(configuration.stateSchema), installs the change capture and syncs every row")
                }
                let rows = try await connection.query(
                    "SELECT state FROM \(unescaped: state.zones) WHERE scope = \(state.scope)", logger: connection.logger)
                var zoneState: Data?
                for try await (value) in rows.decode(ByteBuffer?.self) { zoneState = value.map { Data(buffer: $0) } }
                let failures = try await connection.query(
                    """
                    SELECT count(*) FROM \(unescaped: state.failures) f
                    JOIN \(unescaped: state.changes) c ON c.scope = f.scope AND c.record_name = f.record_name AND c.version = f.version
                    WHERE f.scope = \(state.scope)
                    """, logger: connection.logger)
                var failed = 0
                for try await (value) in failures.decode(Int64.self) { failed = Int(value) }
                let listed = try await failedRecords(state, zone: configuration.zoneID, limit: StoreStatusSnapshot.failuresListed, connection)
                guard hasLog else {
                    // An earlier release's layout, without the trigger log: its change table
                    // holds every pending change. The next open upgrades it.
                    let rows = try await connection.query(
                        "SELECT count(*) FROM \(unescaped: state.changes) WHERE scope = \(state.scope)", logger: connection.logger)
                    var pending = 0
                    for try await (value) in rows.decode(Int64.self) { pending = Int(value) }
                    return StoreStatusSnapshot(
                        zoneState: zoneState, hasChanges: pending > 0, pendingChanges: pending, failedRecords: failed,
                        note: "set up by an earlier release of the gateway; the next sync upgrades its tables", failures: listed)
                }
                let notes = try await tableNotes(configuration, state: state, connection)
                let changed = try await hasChanges(state, connection)
                return StoreStatusSnapshot(
                    zoneState: zoneState, hasChanges: !notes.isEmpty || changed,
                    pendingChanges: try await pendingChangeCount(state, connection), failedRecords: failed,
                    note: notes.isEmpty ? nil : notes.joined(separator: "; "), failures: listed)
            }
            await adapter.close()
            return snapshot
        } catch {
            await adapter.close()
            throw adapter.adapterError(error)
        }
    }

    /// What status says of configured tables whose changes no trigger captured: a synced table
    /// dropped and created again (its capture triggers gone, or on a table with another object
    /// id) and a table configured since the last sync. Both have changes: the next sync compares
    /// the first with the zone as a store joining it, and queues every row of the second.
    private static func tableNotes(
        _ configuration: PostgresAdapterConfiguration, state: PostgresGatewaySchema, _ connection: PooledConnection
    ) async throws -> [String] {
        let names = configuration.tables.map(\.table)
        let qualified = names.map { SQLQuoting.identifier(configuration.schema) + "." + SQLQuoting.identifier($0) }
        let triggers = PostgresGatewaySchema.allTriggerNames
        // `table_oid` through `to_jsonb`: state of an earlier release lacks the column, and a
        // read-only status does not upgrade it.
        let rows = try await connection.query(
            """
            SELECT m.name, t.table_name IS NOT NULL,
                   t.table_name IS NOT NULL AND to_regclass(m.qualified) IS NOT NULL AND (
                       COALESCE((to_jsonb(t) ->> 'table_oid')::bigint <> to_regclass(m.qualified)::oid::bigint, false)
                       OR NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = to_regclass(m.qualified) AND g.tgname = ANY(\(triggers))))
            FROM unnest(\(names)::text[], \(qualified)::text[]) AS m(name, qualified)
            LEFT JOIN \(unescaped: state.tables) t ON t.scope = \(state.scope) AND t.table_name = m.name
            ORDER BY m.name
            """, logger: connection.logger)
        var (recreated, added) = ([String](), [String]())
        for try await (name, installed, isRecreated) in rows.decode((String, Bool, Bool).self) {
            if !installed { added.append(name) } else if isRecreated { recreated.append(name) }
        }
        return StoreStatusSnapshot.uncapturedTableNotes(recreated: recreated, added: added, adapter: configuration.name)
    }

    public func pendingChanges(limit: Int, after: Int64?) async throws -> PendingChanges {
        let zone = zoneID
        return try await transaction("reading pending changes") { [state] connection, catalog in
            try await state.compactLog(connection)
            let rows = try await connection.query(
                """
                SELECT c.record_name, c.table_name, c.version, r.metadata FROM \(unescaped: state.changes) c
                LEFT JOIN LATERAL (SELECT metadata FROM \(unescaped: state.records) r
                                   WHERE r.scope = c.scope AND r.record_name = c.record_name LIMIT 1) AS r ON true
                WHERE c.scope = \(state.scope) AND c.version > \(after ?? 0)
                  AND NOT EXISTS (SELECT 1 FROM \(unescaped: state.failures) f
                                  WHERE f.scope = c.scope AND f.record_name = c.record_name AND f.version = c.version)
                ORDER BY c.version LIMIT \(max(0, limit))
                """, logger: connection.logger)
            var entries: [(id: RecordID, table: PostgresResolvedTable, version: Int64, metadata: Data?)] = []
            for try await (name, tableName, version, metadata) in rows.decode((String, String, Int64, ByteBuffer?).self) {
                guard let table = catalog.byTable[tableName] else { continue }
                entries.append((RecordID(recordName: name, zoneID: zone), table, version, metadata.map { Data(buffer: $0) }))
            }
            let current = try await Self.rows(of: entries.map { ($0.id, $0.table) }, state: state, connection: connection)
            var pending = PendingChanges()
            for entry in entries {
                if let record = current[entry.id] {
                    pending.saves.append(PendingSave(record: record, metadata: entry.metadata, version: entry.version))
                } else {
                    pending.deletes.append(PendingDelete(recordID: entry.id, metadata: entry.metadata, version: entry.version))
                }
            }
            return pending
        }
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        let names = recordIDs.map(\.recordName)
        // Metadata and pending versions in one statement, outside a transaction: a page of records
        // new to the store (an initial download) costs one round trip. Values are read only for
        // records with local changes, the only ones the merge needs them for; that needs the table
        // catalog, so a transaction.
        // Outside a transaction, a first row without a name says the capture log has changes not
        // moved yet: they are moved (a transaction) and the state read again after the move, so
        // pending versions are never missed. In that transaction the log is not checked again: a
        // program may have appended to it since, which the apply's own move will see.
        // Keyed by bytes, as PostgreSQL compares names (see RecordName).
        typealias Found = [RecordName: (metadata: Data?, pending: (table: String, version: Int64)?)]
        let read: @Sendable (PooledConnection, Bool) async throws -> (found: Found, logged: Bool) = { [state] connection, checkingLog in
            let rows = try await connection.query(
                """
                SELECT NULL::text, NULL::bytea, NULL::text, NULL::int8
                WHERE \(checkingLog) AND EXISTS (SELECT 1 FROM \(unescaped: state.changeLog) WHERE scope = \(state.scope))
                UNION ALL
                SELECT n.name, r.metadata, c.table_name, c.version FROM unnest(\(names)::text[]) AS n(name)
                LEFT JOIN LATERAL (\(unescaped: state.lookup(in: state.records, columns: "metadata"))) AS r ON true
                LEFT JOIN LATERAL (\(unescaped: state.pendingLookup(columns: "table_name, version"))) AS c ON true
                WHERE r.metadata IS NOT NULL OR c.table_name IS NOT NULL
                """, logger: connection.logger)
            var found: Found = [:]
            var logged = false
            for try await (name, metadata, pendingTable, version) in rows.decode((String?, ByteBuffer?, String?, Int64?).self) {
                guard let name else {
                    logged = true
                    continue
                }
                found[RecordName(name)] = (metadata.map { Data(buffer: $0) }, pendingTable.flatMap { table in version.map { (table, $0) } })
            }
            return (found, logged)
        }
        let first = try await self.read("reading local state") { try await read($0, true) }
        let found =
            first.logged
            ? try await transaction("reading local state") { [state] connection, _ in
                try await state.compactLog(connection)
                return try await read(connection, false).found
            } : first.found
        guard !found.isEmpty else { return [:] }  // a page new to the store: no lookup per record
        let pendingNames = found.compactMapValues { $0.pending?.table }
        var current: [RecordID: Record] = [:]
        if !pendingNames.isEmpty {
            current = try await transaction("reading locally changed records") { [state] connection, catalog in
                let located = recordIDs.compactMap { id in pendingNames[id.name].flatMap { catalog.byTable[$0] }.map { (id, $0) } }
                return try await Self.rows(of: located, state: state, connection: connection)
            }
        }
        var result: [RecordID: LocalRecordState] = [:]
        for id in recordIDs {
            guard let entry = found[id.name] else { continue }
            result[id] = LocalRecordState(record: current[id], metadata: entry.metadata, pendingVersion: entry.pending?.version)
        }
        return result
    }

    public func syncedRecordIDs() async throws -> [RecordID] {
        let zone = zoneID
        return try await read("listing synced records") { [state] connection in
            let rows = try await connection.query(
                "SELECT record_name FROM \(unescaped: state.records) WHERE scope = \(state.scope) ORDER BY record_name",
                logger: connection.logger)
            var ids: [RecordID] = []
            for try await (name) in rows.decode(String.self) { ids.append(RecordID(recordName: name, zoneID: zone)) }
            return ids
        }
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        do {
            guard !changes.absentLocally.isEmpty else { return try await apply(changes, insertingAbsent: false) }
            do {
                try await apply(changes, insertingAbsent: true)
            } catch let error as PostgresAdapterError where error.isUniqueViolation {
                // Another program created one of those rows after the merge read the store. Nothing
                // of that attempt was committed: apply the page again, updating existing rows.
                try await apply(changes, insertingAbsent: false)
            }
        } catch let error as PostgresAdapterError {
            throw await namingRefusedRecord(error, of: changes)
        }
    }

    /// `refusal` naming the record whose value its table refused, when the refusal is a record's
    /// (a type, a length, a range, a check, `NOT NULL`, a trigger's exception, or a trigger that
    /// skipped the row) and one record of the page is refused alone: the page is written again
    /// half by half in savepoints of a transaction that is rolled back.
    private func namingRefusedRecord(_ refusal: PostgresAdapterError, of changes: DownloadedChanges) async -> PostgresAdapterError {
        // The server's error, as the write's own handling wrapped it or as the transaction did.
        let cause = refusal.underlying.flatMap { ($0 as? PostgresFailure)?.underlying ?? $0 }
        let psql = cause as? PSQLError
        let state = psql?.serverInfo?[.sqlState]
        let skippedByTrigger = cause is RowsSkippedByTrigger
        guard skippedByTrigger || state.map({ $0.hasPrefix("22") || $0 == "23514" || $0 == "23502" || $0 == "P0001" }) == true,
            let catalog = installed.withLock({ $0?.catalog })
        else { return refusal }
        // The table the server named; a trigger's exception names none, so each table the page
        // writes is probed in turn.
        let tables =
            refusal.table.flatMap { catalog.byTable[$0] }.map { [$0] }
            ?? catalog.writeOrder.compactMap { catalog.byTable[$0] }.filter { table in changes.writes.contains { $0.recordType == table.recordType } }
        // The probe's answer comes out as the error that rolls it back.
        struct Probed: Error { let record: String?, table: String? }
        var found: (record: String, table: String)?
        do {
            try await pool.transaction(doing: "finding the refused record of adapter \(name)") { connection in
                try await connection.query("SET LOCAL gateway.applying = 'on'", logger: connection.logger)
                for table in tables {
                    let records = changes.writes.filter { $0.recordType == table.recordType && table.acceptsKey(of: $0.id.recordName) }
                    func refuses(_ slice: ArraySlice<Record>) async throws -> Bool {
                        try await connection.query("SAVEPOINT probe", logger: connection.logger)
                        var refused = false
                        do {
                            try await Self.write(Array(slice), with: table.upsertManySQL, of: table, connection: connection)
                        } catch {
                            refused = true
                        }
                        try await connection.query("ROLLBACK TO SAVEPOINT probe", logger: connection.logger)
                        return refused
                    }
                    guard !records.isEmpty, try await refuses(records[...]) else { continue }
                    var candidates = records[...]
                    while candidates.count > 1 {
                        let half = candidates.prefix(candidates.count / 2)
                        candidates = try await refuses(half) ? half : candidates.dropFirst(half.count)
                    }
                    throw Probed(record: candidates.first?.id.recordName, table: table.table)
                }
                throw Probed(record: nil, table: nil)
            }
        } catch let probed as Probed {
            if let record = probed.record, let table = probed.table { found = (record, table) }
        } catch {
            return refusal
        }
        guard let (record, table) = found else { return refusal }
        guard let psql, let state else {
            return PostgresAdapterError(
                .databaseFailed,
                "writing downloaded record \(record) into table \(table) was skipped by a trigger without an error (a BEFORE trigger returned NULL); the store keeps its row as it was. Raise an exception to say why, or let the trigger take the row",
                table: table, underlying: cause, refusedRecordName: record)
        }
        return PostgresAdapterError(
            .databaseFailed,
            "writing downloaded record \(record) into table \(table) was refused: \(PostgresFailure.dataProblem(state))\(PostgresFailure.dataPlace(psql)) (SQLSTATE \(state)); change that record, or the column's type or constraint",
            table: table, underlying: psql, refusedRecordName: record)
    }

    /// Applies a page in one transaction, leaving out the records another program writes while
    /// it runs. With `insertingAbsent`, the rows and metadata of records the store reported
    /// nothing for are plain inserts (an upsert's conflict check costs about as much again as the
    /// insert); a row that exists after all fails the transaction with a unique violation.
    private func apply(_ changes: DownloadedChanges, insertingAbsent: Bool) async throws {
        var editedMeanwhile = Set<RecordID>()
        while true {
            do {
                return try await apply(changes, insertingAbsent: insertingAbsent, leavingOut: editedMeanwhile)
            } catch let error as PostgresAdapterError {
                // Each attempt leaves out at least one more record of the finite page.
                guard let edited = error.underlying as? RowsEditedDuringApply else { throw error }
                editedMeanwhile.formUnion(edited.ids)
            }
        }
    }

    /// Records of a page that another program wrote between the page's check of pending changes
    /// and its own write of their rows: the attempt is rolled back, their edits kept.
    private struct RowsEditedDuringApply: Error {
        let ids: Set<RecordID>
    }

    /// The names of the fields whose values each of `names` was last synced with; records the
    /// store has no metadata for are absent.
    private static func syncedFields(
        of names: [String], state: PostgresGatewaySchema, connection: PooledConnection
    ) async throws -> [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        guard !names.isEmpty else { return fields }
        let rows = try await connection.query(
            """
            SELECT r.record_name, r.metadata FROM unnest(\(names)::text[]) AS n(name)
            CROSS JOIN LATERAL (\(unescaped: state.lookup(in: state.records, columns: "record_name, metadata"))) AS r
            """, logger: connection.logger)
        for try await (name, blob) in rows.decode((String, ByteBuffer).self) {
            guard let metadata = try? RecordMetadata(decoding: Data(buffer: blob)) else { continue }
            fields[name] = Set(metadata.fingerprints.keys)
        }
        return fields
    }

    /// The pending version of each of `names` that has one, after moving the capture log in.
    private static func pendingVersions(
        of names: [String], state: PostgresGatewaySchema, connection: PooledConnection
    ) async throws -> [RecordName: Int64] {
        try await state.compactLog(connection)
        var current: [RecordName: Int64] = [:]
        guard !names.isEmpty else { return current }
        let rows = try await connection.query(
            """
            SELECT c.record_name, c.version FROM unnest(\(names)::text[]) AS n(name)
            CROSS JOIN LATERAL (\(unescaped: state.pendingLookup(columns: "record_name, version"))) AS c
            """, logger: connection.logger)
        for try await (name, version) in rows.decode((String, Int64).self) { current[RecordName(name)] = version }
        return current
    }

    private func apply(_ changes: DownloadedChanges, insertingAbsent: Bool, leavingOut editedMeanwhile: Set<RecordID>) async throws {
        let zone = zoneID
        try await transaction("applying downloaded changes") { [state] connection, catalog in
            try await connection.query("SET LOCAL gateway.applying = 'on'", logger: connection.logger)
            // A record edited locally since the merge read it is skipped: it stays pending and
            // is merged again in the next round. Edits still in the capture log count too.
            let current = try await Self.pendingVersions(
                of: changes.expectedPendingVersions.keys.map(\.recordName), state: state, connection: connection)
            var skipped = editedMeanwhile
            for (id, expected) in changes.expectedPendingVersions where (current.isEmpty ? 0 : current[id.name] ?? 0) != expected {
                skipped.insert(id)
            }
            // Each written record's table, and whether it is inserted without a conflict check.
            var tables: [RecordID: WrittenTable] = [:]
            tables.reserveCapacity(changes.writes.count)
            // The writes of each table by their position in the page: grouping the records
            // themselves copied each one.
            var writes: [String: (new: [Int], known: [Int])] = [:]
            // Records written without some columns (``EmptyColumnRule``), by those columns.
            var partial: [String: [Set<Int>: [Int]]] = [:]
            // The fields each written record's synced version held, read once for the page when a
            // record lacks a value.
            var syncedFields: [String: Set<String>]?
            var layouts: [String: LayoutMappings] = [:]
            // The records written over rows that may exist (not plain inserts).
            var updatedNames: [String] = []
            let absent = insertingAbsent ? changes.absentLocally : []
            // A page's records are mostly of one type: its table is looked up once per run of it.
            var lastType: (name: String, table: PostgresResolvedTable?)?
            for index in changes.writes.indices {
                let id = changes.writes[index].id
                if !skipped.isEmpty && skipped.contains(id) { continue }
                let recordType = changes.writes[index].recordType
                if lastType?.name != recordType { lastType = (recordType, catalog.byType[recordType]) }
                guard let table = lastType?.table, table.acceptsKey(of: id.recordName) else {
                    skipped.insert(id)  // a record type this store does not hold, or a name that cannot be a key of its table
                    continue
                }
                let inserted = !absent.isEmpty && absent.contains(id)
                tables[id] = WrittenTable(name: table.table, inserted: inserted)
                // A new row leaves out only columns with a default (the others are NULL either way).
                var empty: Set<Int> = []
                if !inserted || !table.emptyColumnRule.withDefault.isEmpty {
                    if layouts[table.table] == nil { layouts[table.table] = LayoutMappings(target: table.layout) }
                    let mapping = layouts[table.table]!.mapping(from: changes.writes[index].layout)
                    empty = table.emptyColumnRule.emptyColumns(of: changes.writes[index], mapping: mapping)
                }
                var omitted: Set<Int> = []
                if !empty.isEmpty {
                    if !inserted, syncedFields == nil {
                        syncedFields = try await Self.syncedFields(of: changes.writes.map(\.id.recordName), state: state, connection: connection)
                    }
                    omitted = table.emptyColumnRule.leftOut(of: empty, synced: inserted ? nil : syncedFields?[id.recordName])
                }
                // Upserted: a plain insert of a new row cannot overwrite another program's.
                if !inserted || !omitted.isEmpty { updatedNames.append(id.recordName) }
                if !omitted.isEmpty {
                    partial[table.table, default: [:]][omitted, default: []].append(index)
                } else if inserted {
                    writes[table.table, default: ([], [])].new.append(index)
                } else {
                    writes[table.table, default: ([], [])].known.append(index)
                }
            }
            // One statement per table for the whole page (two when it has new and known records),
            // parents before their children.
            for tableName in catalog.writeOrder {
                for (omitted, positions) in partial[tableName] ?? [:] {
                    let reduced = catalog.byTable[tableName]!.omitting(omitted)
                    try await Self.write(positions.map { changes.writes[$0] }, with: reduced.upsertManySQL, of: reduced, connection: connection)
                }
                guard let (new, known) = writes[tableName] else { continue }
                let table = catalog.byTable[tableName]!
                if !new.isEmpty, let rows = try table.copyRows(for: changes.writes, at: new) {
                    // New rows go in with COPY, PostgreSQL's bulk path: no statement to plan, no
                    // arrays to unnest, values read by each type's own input function.
                    try await Self.writing(into: table) {
                        try await connection.copy(
                            into: table.table, of: table.schema, columns: table.copyColumns, data: rows.buffer, logger: connection.logger)
                    }
                } else if !new.isEmpty {
                    try await Self.write(new.map { changes.writes[$0] }, with: table.insertManySQL, of: table, connection: connection)
                }
                if !known.isEmpty {
                    try await Self.write(known.map { changes.writes[$0] }, with: table.upsertManySQL, of: table, connection: connection)
                }
            }
            if !changes.deletes.isEmpty {
                let names = changes.deletes.filter { !skipped.contains($0) }.map(\.recordName)
                var known: [RecordName: String] = [:]
                let rows = try await connection.query(
                    """
                    SELECT r.record_name, r.table_name FROM unnest(\(names)::text[]) AS n(name)
                    CROSS JOIN LATERAL (\(unescaped: state.lookup(in: state.records, columns: "record_name, table_name"))) AS r
                    UNION ALL
                    SELECT c.record_name, c.table_name FROM unnest(\(names)::text[]) AS n(name)
                    CROSS JOIN LATERAL (\(unescaped: state.lookup(in: state.changes, columns: "record_name, table_name"))) AS c
                    """, logger: connection.logger)
                for try await (name, table) in rows.decode((String, String).self) { known[RecordName(name)] = table }
                var keys: [String: [[String]]] = [:]
                for name in names {
                    guard let table = known[RecordName(name)].flatMap({ catalog.byTable[$0] }), let texts = try? table.keyTexts(of: name) else { continue }
                    var columns = keys[table.table] ?? Array(repeating: [], count: table.keyColumns.count)
                    for (index, text) in texts.enumerated() { columns[index].append(text) }
                    keys[table.table] = columns
                }
                for tableName in catalog.writeOrder.reversed() {
                    guard let columns = keys[tableName] else { continue }
                    var bindings = PostgresBindings()
                    for column in columns { bindings.append(column) }
                    try await connection.query(
                        PostgresQuery(unsafeSQL: catalog.byTable[tableName]!.deleteManySQL, binds: bindings), logger: connection.logger)
                }
            }
            // What the rows hold only as text, kept as sent (and forgotten for records written
            // or deleted without it).
            let deleted = changes.deletes.filter { !skipped.contains($0) }.map(\.recordName)
            var touched = deleted
            var kept: [PostgresTypedCells.Kept] = []
            for tableName in Set(writes.keys).union(partial.keys) {
                guard let table = catalog.byTable[tableName] else { continue }
                let positions = (writes[tableName].map { $0.new + $0.known } ?? []) + (partial[tableName]?.values.flatMap { $0 } ?? [])
                touched += positions.map { changes.writes[$0].id.recordName }
                kept += PostgresTypedCells.kept(in: changes.writes, at: positions, table: table)
            }
            try await PostgresTypedCells.replace(written: touched, with: kept, state: state, connection: connection)
            // At read committed, a row another program updated and committed after the check
            // above was overwritten by this page's write: its capture shows now. Rolled back, and
            // applied again without it. (An edit still running waits for this transaction's row
            // lock and lands on top of the page's values, captured as an edit.)
            // Only records pending now can have moved: this transaction removes no pending change.
            // Rows inserted plainly need no look: one another program made meanwhile fails the
            // insert instead of being overwritten.
            let updated = updatedNames + deleted
            let afterWrite = updated.isEmpty ? [:] : try await Self.pendingVersions(of: updated, state: state, connection: connection)
            var overwritten = Set<RecordID>()
            for (name, version) in afterWrite {
                let id = RecordID(recordName: name.text, zoneID: zone)
                if let expected = changes.expectedPendingVersions[id], expected != version { overwritten.insert(id) }
            }
            if !overwritten.isEmpty { throw RowsEditedDuringApply(ids: overwritten) }
            try await Self.commit(
                changes.state, zone: zone, skipping: skipped, written: tables, state: state, connection: connection)
        }
    }

    public func commit(_ update: SyncStateUpdate) async throws {
        let zone = zoneID
        try await transaction("recording an upload") { [state] connection, _ in
            try await Self.commit(update, zone: zone, skipping: [], written: [:], state: state, connection: connection)
        }
    }

    public func failedRecords() async throws -> [FailedRecord] {
        let zone = zoneID
        return try await read("listing failed records") { [state] connection in try await Self.failedRecords(state, zone: zone, connection) }
    }

    /// The failure marks that still count (those of the change still pending), in name order by
    /// bytes; at most `limit` of them when one is given.
    static func failedRecords(_ state: PostgresGatewaySchema, zone: ZoneID, limit: Int? = nil, _ connection: PooledConnection) async throws
        -> [FailedRecord]
    {
        let rows = try await connection.query(
            """
            SELECT f.record_name, f.version, f.code, f.message FROM \(unescaped: state.failures) f
            JOIN \(unescaped: state.changes) c ON c.scope = f.scope AND c.record_name = f.record_name AND c.version = f.version
            WHERE f.scope = \(state.scope) ORDER BY f.record_name COLLATE "C" LIMIT \(limit.map(Int64.init))
            """, logger: connection.logger)
        var failed: [FailedRecord] = []
        for try await (name, version, code, message) in rows.decode((String, Int64, String, String).self) {
            failed.append(
                FailedRecord(recordID: RecordID(recordName: name, zoneID: zone), failure: RecordFailure(version: version, code: code, message: message)))
        }
        return failed
    }

    public func retryFailedRecords() async throws {
        try await transaction("clearing failure marks") { [state] connection, _ in
            try await connection.query("DELETE FROM \(unescaped: state.failures) WHERE scope = \(state.scope)", logger: connection.logger)
        }
    }

    public func resetSyncState(keepData: Bool) async throws {
        try await transaction("resetting the sync state") { [state] connection, catalog in
            for table in [state.records, state.failures, state.zones] {
                try await connection.query("DELETE FROM \(unescaped: table) WHERE scope = \(state.scope)", logger: connection.logger)
            }
            if keepData {
                for table in catalog.byTable.values { try await state.backfill(table, connection: connection) }
            } else {
                try await connection.query("SET LOCAL gateway.applying = 'on'", logger: connection.logger)
                for table in catalog.byTable.values {
                    try await connection.query(PostgresQuery(unsafeSQL: "DELETE FROM \(table.qualifiedName)"), logger: connection.logger)
                }
                for table in [state.changeLog, state.changes] {
                    try await connection.query("DELETE FROM \(unescaped: table) WHERE scope = \(state.scope)", logger: connection.logger)
                }
            }
        }
    }

    public func changeSignals() -> ChangeSignals {
        let (pool, state) = (pool, state)
        return ChangeSignals {
            PostgresNotificationSource(pool: pool, channel: PostgresGatewaySchema.channel, key: state.scope) { connection in
                // Captured changes take the next version; settling them does not move it.
                let rows = try await connection.query(
                    "SELECT last_value::text, is_called FROM \(unescaped: state.versions)", logger: connection.logger)
                for try await (value, called) in rows.decode((String, Bool).self) { return "\(value):\(called)" }
                return "none"
            }
        }
    }

    // MARK: Plumbing

    /// The current rows of many records, one query per table, with the values kept for cells that
    /// hold them only as text (``PostgresTypedCells``). Records without a row are absent.
    static func rows(
        of records: [(RecordID, PostgresResolvedTable)], state: PostgresGatewaySchema, connection: PooledConnection
    ) async throws -> [RecordID: Record] {
        var found: [RecordID: Record] = [:]
        var byTable: [String: (table: PostgresResolvedTable, ids: [RecordName: RecordID], keys: [[String]])] = [:]
        for (id, table) in records {
            guard let texts = try? table.keyTexts(of: id.recordName) else { continue }
            var entry = byTable[table.table] ?? (table, [:], Array(repeating: [], count: table.keyColumns.count))
            entry.ids[id.name] = id
            for (index, text) in texts.enumerated() { entry.keys[index].append(text) }
            byTable[table.table] = entry
        }
        for (table, ids, keys) in byTable.values {
            var bindings = PostgresBindings()
            for column in keys { bindings.append(column) }
            let rows = try await connection.query(PostgresQuery(unsafeSQL: table.selectRowsSQL, binds: bindings), logger: connection.logger)
            for try await row in rows {
                let cells = row.makeRandomAccess()
                let name = try cells[0].decode(String.self)
                guard let id = ids[RecordName(name)] else { continue }
                var values: [String?] = []
                values.reserveCapacity(table.valueColumns.count)
                for index in 1..<cells.count { values.append(try cells[index].decode(String?.self)) }
                found[id] = table.record(id: id, values: values)
            }
        }
        try await PostgresTypedCells.restore(
            &found, tables: Dictionary(records.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first }), state: state, connection: connection)
        return found
    }

    /// Inserts or upserts `records` of `table` with `sql` (``PostgresResolvedTable/insertManySQL``
    /// or ``PostgresResolvedTable/upsertManySQL``), one array per column.
    private static func write(_ records: [Record], with sql: String, of table: PostgresResolvedTable, connection: PooledConnection) async throws {
        var bindings = PostgresBindings()
        for column in try table.upsertManyArguments(for: records) { bindings.append(column) }
        var affected: Int?
        try await writing(into: table) {
            affected = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: connection.logger).affectedRows
        }
        // Every row inserts or updates one (a table without value columns does nothing on a
        // conflict, so its count says nothing): fewer were skipped by a `BEFORE` trigger that
        // returned NULL, and committing their metadata would take the rows' older values for
        // the cloud's.
        if !table.valueColumns.isEmpty, let affected, affected < records.count {
            throw PostgresAdapterError(
                .databaseFailed, "a trigger skipped writing \(records.count - affected) downloaded row(s) into table \(table.table) without an error",
                table: table.table, underlying: RowsSkippedByTrigger())
        }
    }

    /// Rows of a write that a `BEFORE` trigger skipped by returning NULL.
    struct RowsSkippedByTrigger: Error {}

    /// Runs a write of downloaded records into `table`; a value the table cannot take is reported
    /// naming the table and the kind of refusal (a cast that fails names no column; the value
    /// itself is never shown).
    private static func writing(into table: PostgresResolvedTable, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as PSQLError {
            guard let state = error.serverInfo?[.sqlState], state.hasPrefix("22") || state.hasPrefix("23") else { throw error }
            throw PostgresAdapterError(
                .databaseFailed,
                "writing downloaded records into table \(table.table) was refused: \(PostgresFailure.dataProblem(state))\(PostgresFailure.dataPlace(error)) (SQLSTATE \(state)); a record the zone holds has a value this table cannot take: change the record, or the column's type or constraint",
                table: table.table, underlying: error)
        }
    }

    /// A record written by an apply: its table, and whether it was inserted without a conflict
    /// check (so its metadata is too).
    private struct WrittenTable {
        var name: String
        var inserted: Bool
    }

    /// Commits a sync state update. The metadata of records `written` in this transaction goes to
    /// their table; that of inserted ones is inserted without a conflict check.
    private static func commit(
        _ update: SyncStateUpdate, zone: ZoneID, skipping skipped: Set<RecordID>, written: [RecordID: WrittenTable],
        state: PostgresGatewaySchema, connection: PooledConnection
    ) async throws {
        // One pass: metadata of records just inserted goes in with COPY, the rest with an upsert.
        var rows = PostgresCopyText(reservingBytes: written.count * 160)
        var copied = 0
        var names: [String] = []
        var data: [ByteBuffer] = []
        var known: [String] = []
        for (id, metadata) in update.metadata {
            if !skipped.isEmpty && skipped.contains(id) { continue }
            let table = written.isEmpty ? nil : written[id]
            if let table, table.inserted {
                rows.append(state.scope)
                rows.append(id.recordName)
                rows.append(table.name)
                metadata.withUnsafeBytes { rows.appendHex($0) }
                rows.endRow()
                copied += 1
            } else {
                names.append(id.recordName)
                data.append(ByteBuffer(bytes: metadata))
                known.append(table?.name ?? "")
            }
        }
        if copied > 0 {
            try await connection.copy(
                into: "records", of: state.schema, columns: ["scope", "record_name", "table_name", "metadata"], data: rows.buffer,
                logger: connection.logger)
        }
        if !names.isEmpty {
            // A record's table: the one just written, else its pending change's, else the known one.
            try await connection.query(
                """
                INSERT INTO \(unescaped: state.records) (scope, record_name, table_name, metadata)
                SELECT \(state.scope), u.n, u.t, u.m FROM (
                    SELECT u.n, u.m, COALESCE(
                        NULLIF(u.t, ''),
                        (SELECT c.table_name FROM \(unescaped: state.changes) c WHERE c.scope = \(state.scope) AND c.record_name = u.n),
                        (SELECT r.table_name FROM \(unescaped: state.records) r WHERE r.scope = \(state.scope) AND r.record_name = u.n)) AS t
                    FROM unnest(\(names)::text[], \(known)::text[], \(data)::bytea[]) AS u(n, t, m)) AS u
                WHERE u.t IS NOT NULL
                ON CONFLICT (scope, record_name) DO UPDATE SET metadata = excluded.metadata, table_name = excluded.table_name
                """, logger: connection.logger)
        }
        let removed = update.removedMetadata.filter { !skipped.contains($0) }.map(\.recordName)
        if !removed.isEmpty {
            try await connection.query(
                "DELETE FROM \(unescaped: state.records) WHERE scope = \(state.scope) AND record_name = ANY(\(removed))",
                logger: connection.logger)
        }
        let settled = update.settled.filter { !skipped.contains($0.key) }
        if !settled.isEmpty {
            let names = settled.keys.map(\.recordName)
            let versions = settled.keys.map { settled[$0]! }
            for table in [state.changes, state.failures] {
                try await connection.query(
                    """
                    DELETE FROM \(unescaped: table) AS t USING unnest(\(names)::text[], \(versions)::int8[]) AS u(n, v)
                    WHERE t.scope = \(state.scope) AND t.record_name = u.n AND t.version <= u.v
                    """, logger: connection.logger)
            }
        }
        for (id, failure) in update.failures {
            try await connection.query(
                """
                INSERT INTO \(unescaped: state.failures) (scope, record_name, version, code, message)
                VALUES (\(state.scope), \(id.recordName), \(failure.version), \(failure.code), \(failure.message))
                ON CONFLICT (scope, record_name) DO UPDATE SET version = excluded.version, code = excluded.code, message = excluded.message
                """, logger: connection.logger)
        }
        try await connection.query(
            """
            INSERT INTO \(unescaped: state.zones) (scope, zone_name, owner_name, state)
            VALUES (\(state.scope), \(zone.zoneName), \(zone.ownerName), \(update.zoneState))
            ON CONFLICT (scope) DO UPDATE SET zone_name = excluded.zone_name, owner_name = excluded.owner_name, state = excluded.state
            """, logger: connection.logger)
    }

    /// Resolves the configured tables and installs their capture; runs at the start of every
    /// write transaction, so a changed table is picked up at once.
    static func resolve(_ configuration: PostgresAdapterConfiguration, connection: PooledConnection) async throws -> TableCatalog {
        var catalog = TableCatalog()
        let place = configuration.endpoint.description
        for mapping in configuration.tables {
            let table = try await PostgresResolvedTable.resolve(mapping, schema: configuration.schema, connection: connection, place: place)
            guard catalog.byTable[table.table] == nil else {
                throw PostgresAdapterError(
                    .invalidMapping, "table \(table.table) is configured twice in adapter \(configuration.name)", table: table.table)
            }
            guard catalog.byType[table.recordType] == nil else {
                throw PostgresAdapterError(
                    .invalidMapping, "record type \(table.recordType) is used by two tables of adapter \(configuration.name)",
                    table: table.table)
            }
            for other in catalog.byTable.values where RecordNameTemplate.mayCollide(table.template, other.template) {
                throw PostgresAdapterError(
                    .invalidMapping,
                    "tables \(other.table) and \(table.table) would give records the same names; use record_name: \"<Type>.<pk>\"",
                    table: table.table)
            }
            catalog.byTable[table.table] = table
            catalog.byType[table.recordType] = table
        }
        catalog.writeOrder = try await writeOrder(configuration, connection: connection)
        return catalog
    }

    /// The configured tables with every table after those its foreign keys refer to (a cycle
    /// keeps configuration order for the tables in it).
    private static func writeOrder(_ configuration: PostgresAdapterConfiguration, connection: PooledConnection) async throws -> [String] {
        let names = configuration.tables.map(\.table)
        let rows = try await connection.query(
            """
            SELECT child.relname::text, parent.relname::text FROM pg_constraint c
            JOIN pg_class child ON child.oid = c.conrelid JOIN pg_class parent ON parent.oid = c.confrelid
            JOIN pg_namespace n ON n.oid = child.relnamespace AND n.oid = parent.relnamespace
            WHERE c.contype = 'f' AND n.nspname = \(configuration.schema) AND child.relname = ANY(\(names)) AND parent.relname = ANY(\(names))
              AND child.oid <> parent.oid
            """, logger: connection.logger)
        var parents: [String: Set<String>] = [:]
        for try await (child, parent) in rows.decode((String, String).self) { parents[child, default: []].insert(parent) }
        var ordered: [String] = []
        var placed = Set<String>()
        while ordered.count < names.count {
            let ready = names.filter { !placed.contains($0) && (parents[$0] ?? []).isSubset(of: placed) }
            // A cycle: the first unplaced table in configuration order goes next.
            for name in ready.isEmpty ? [names.first { !placed.contains($0) }!] : ready {
                ordered.append(name)
                placed.insert(name)
            }
        }
        return ordered
    }

    private func install(_ catalog: TableCatalog, connection: PooledConnection) async throws {
        try await state.createTables(connection)
        // Parents first: the rows a first sync queues get their versions in this order, so they
        // upload, and reach other stores, before the rows that refer to them.
        for name in catalog.writeOrder {
            guard let table = catalog.byTable[name] else { continue }
            try await state.install(table, zoneID: zoneID, connection: connection)
        }
        let rows = try await connection.query(
            "SELECT table_name FROM \(unescaped: state.tables) WHERE scope = \(state.scope)", logger: connection.logger)
        var installed: [String] = []
        for try await (name) in rows.decode(String.self) { installed.append(name) }
        for table in installed where catalog.byTable[table] == nil {
            try await state.uninstall(table: table, syncedSchema: configuration.schema, connection: connection)
        }
        // Sync state of another zone does not apply here: start over, keeping the data.
        let zones = try await connection.query(
            "SELECT zone_name, owner_name FROM \(unescaped: state.zones) WHERE scope = \(state.scope)", logger: connection.logger)
        var otherZone = false
        for try await (zoneName, owner) in zones.decode((String, String).self) {
            otherZone = zoneName != zoneID.zoneName || owner != zoneID.ownerName
        }
        if otherZone {
            for table in [state.zones, state.records, state.failures] {
                try await connection.query("DELETE FROM \(unescaped: table) WHERE scope = \(state.scope)", logger: connection.logger)
            }
            for table in catalog.byTable.values { try await state.backfill(table, connection: connection) }
        }
    }

    /// The tables' shape as ``PostgresShapeFingerprint`` reads it.
    private func shapeFingerprint(_ connection: PooledConnection) async throws -> String {
        let statement = PostgresShapeFingerprint(qualifiedTables: fingerprintedTables, stateTables: [state.changes, state.changeLog])
        for try await value in try await connection.execute(statement, logger: connection.logger) { return value }
        return ""
    }

    private func read<T: Sendable>(_ what: String, _ body: @Sendable (PooledConnection) async throws -> T) async throws -> T {
        do {
            return try await pool.withConnection(doing: "\(what) of adapter \(name)", body)
        } catch {
            throw adapterError(error)
        }
    }

    /// Runs `body` in a transaction that first resolves the tables (and installs the capture of
    /// new or changed ones), so the catalog always matches the database.
    @discardableResult
    private func transaction<T: Sendable>(
        _ what: String, _ body: @Sendable (PooledConnection, TableCatalog) async throws -> T
    ) async throws -> T {
        let configuration = configuration
        do {
            return try await pool.transaction(doing: "\(what) of adapter \(name)") { [self] connection in
                let fingerprint = try await shapeFingerprint(connection)
                if let known = installed.withLock({ $0 }), known.fingerprint == fingerprint {
                    return try await body(connection, known.catalog)
                }
                let catalog = try await Self.resolve(configuration, connection: connection)
                try await install(catalog, connection: connection)
                let result = try await body(connection, catalog)
                installed.withLock { $0 = (fingerprint, catalog) }
                return result
            }
        } catch {
            throw adapterError(error)
        }
    }

    func adapterError(_ error: any Error) -> PostgresAdapterError {
        if let error = error as? PostgresAdapterError { return error }
        if let failure = error as? PostgresFailure {
            return PostgresAdapterError(.databaseFailed, "adapter \(name): \(failure.message)", underlying: failure)
        }
        return PostgresAdapterError(.databaseFailed, "adapter \(name) on \(configuration.endpoint) failed: \(error)", underlying: error)
    }
}
