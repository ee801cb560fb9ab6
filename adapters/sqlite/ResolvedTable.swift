import Foundation
import GRDB
import GatewayCore
import SQLiteSupport
import Synchronization

/// A configured table checked against the database: its key, its synced columns and the SQL the
/// adapter uses for it. A class: every pending row refers to its table, and copying the struct
/// retained each of its strings and arrays.
final class ResolvedTable: Sendable {
    struct Column: Sendable, Equatable {
        var name: String
        var kind: ColumnKind
    }

    let mapping: TableMapping
    let template: RecordNameTemplate
    /// Primary-key columns, in key order.
    let keyColumns: [Column]
    /// The synced columns outside the key: the record's fields. (The key is the record name.)
    let valueColumns: [Column]

    /// The record layout of the table's rows: the value columns, in order.
    let layout: RecordLayout
    /// Which value columns a row's write leaves out when the record has no value for them.
    let emptyColumnRule: EmptyColumnRule
    /// How the layouts of incoming records map onto ``layout``, made once per layout.
    private let mappings = Mutex<[ObjectIdentifier: LayoutMapping]>([:])

    var table: String { mapping.table }
    var recordType: String { mapping.recordType }

    /// Reads the table's shape from the database and checks the mapping against it.
    init(_ mapping: TableMapping, db: Database, path: String) throws {
        let rows = try Row.fetchAll(
            db, sql: "SELECT name, type, pk, hidden, \"notnull\", dflt_value IS NOT NULL FROM pragma_table_xinfo(?)", arguments: [mapping.table])
        struct Info {
            var name: String
            var declared: String
            var keyPosition: Int
            var generated: Bool
            var notNull: Bool
            var hasDefault: Bool
        }
        let infos = rows.map { row in
            Info(
                name: row["name"], declared: row["type"] ?? "", keyPosition: row["pk"], generated: (row["hidden"] as Int? ?? 0) >= 2,
                notNull: (row[4] as Int? ?? 0) != 0, hasDefault: (row[5] as Int? ?? 0) != 0)
        }
        let shape: (keys: [Int], synced: [Int])
        do {
            shape = try TableShapeCheck.check(
                table: mapping.table, displayName: mapping.table, place: path,
                columns: infos.map { TableShapeCheck.Column(name: $0.name, keyPosition: $0.keyPosition, generated: $0.generated) },
                named: (mapping.include ?? []) + mapping.exclude + Array(mapping.columnTypes.keys) + mapping.encryptedColumns + mapping.assetColumns + mapping.processedColumns,
                include: mapping.include, exclude: mapping.exclude, encrypted: mapping.encryptedColumns,
                processed: mapping.processedColumns, renamedTo: mapping.renamedTo)
        } catch {
            throw SQLiteAdapterError(error.code, error.message)
        }
        func column(_ info: Info) -> Column {
            Column(name: info.name, kind: mapping.columnTypes[info.name] ?? ColumnKind.fromDeclaredType(info.declared))
        }
        let keys = shape.keys.map { infos[$0] }
        let synced = shape.synced.map { infos[$0] }
        self.mapping = mapping
        self.keyColumns = keys.map(column)
        self.valueColumns = synced.map(column)
        self.emptyColumnRule = EmptyColumnRule(synced.map { ($0.name, $0.notNull, $0.hasDefault) })
        self.layout = RecordLayout(synced.map(\.name))
        (selectRowSQL, deleteRowSQL) = Self.statements(
            table: mapping.table, keyColumns: keyColumns, valueColumns: valueColumns)
        selectRowsSQL = Self.selectRowsStatement(table: mapping.table, keyColumns: keyColumns, valueColumns: valueColumns)
        let template = try RecordNameTemplate(
            mapping.recordName, recordType: mapping.recordType, keyColumnCount: keys.count, table: mapping.table)
        self.template = template
        pendingWithRowsSQL = Self.pendingWithRowsStatement(
            table: mapping.table, keyColumns: keyColumns, valueColumns: valueColumns, template: template)
    }

    // MARK: SQL

    var quotedTable: String { SQLQuoting.identifier(table) }

    /// Statements built once per table, since they are used per row.
    let selectRowSQL: String
    let deleteRowSQL: String
    /// Selects the key and values of many rows at once, for a single INTEGER or TEXT key: the
    /// keys are bound as one JSON array. `nil` for other keys, which are read row by row.
    let selectRowsSQL: String?

    /// The adapter's pending changes (oldest first, after a version, without failed ones), each
    /// with its metadata and, when it is a change of this table, its current row found by the key
    /// read back from its name: the key at column 4, the values from column 5 (NULL when no row
    /// matched, which the caller looks up the slow way). One statement instead of a change list
    /// and a lookup by key, for a single INTEGER or TEXT key; `nil` otherwise.
    let pendingWithRowsSQL: String?

    static func pendingWithRowsStatement(table: String, keyColumns: [Column], valueColumns: [Column], template: RecordNameTemplate) -> String? {
        guard keyColumns.count == 1, [.integer, .text].contains(keyColumns[0].kind) else { return nil }
        let key = "t." + SQLQuoting.identifier(keyColumns[0].name)
        // SQLite counts characters (code points) in length() and substr().
        let (head, tail) = (template.prefix.unicodeScalars.count, template.suffix.unicodeScalars.count)
        let keyText = "substr(c.record_name, \(head + 1), length(c.record_name) - \(head + tail))"
        let keyFromName = keyColumns[0].kind == .integer ? "CAST(\(keyText) AS INTEGER)" : keyText
        // The key read back finds the row through the primary key; the name built from the row
        // must then be the change's name exactly ('007' is not 7).
        let nameOfRow = template.sqlExpression(keyColumns: keyColumns, row: "t")
        let selected = ([key] + valueColumns.map { "t." + SQLQuoting.identifier($0.name) }).joined(separator: ", ")
        return GatewayTables.pendingChangesSQL(
            addingColumns: selected,
            join: "LEFT JOIN \(SQLQuoting.identifier(table)) t ON c.table_name = \(SQLQuoting.literal(table)) AND \(key) = \(keyFromName) AND \(nameOfRow) = c.record_name")
    }

    static func selectRowsStatement(table: String, keyColumns: [Column], valueColumns: [Column]) -> String? {
        guard keyColumns.count == 1, [.integer, .text].contains(keyColumns[0].kind) else { return nil }
        let key = SQLQuoting.identifier(keyColumns[0].name)
        let selected = ([key] + valueColumns.map { SQLQuoting.identifier($0.name) }).joined(separator: ", ")
        return "SELECT \(selected) FROM \(SQLQuoting.identifier(table)) WHERE \(key) IN (SELECT value FROM json_each(?))"
    }

    /// Upserts of rows by key, many rows to a statement (``upsertValues(for:mapping:)`` gives a
    /// row's values, less those at `omitted`): a page's rows cost one statement execution per
    /// group instead of per row. A column left out keeps its value in an existing row and takes
    /// its default in a new one.
    /// Each row must write one (an upsert with columns to update always does), so a row a
    /// trigger skips without an error is seen; with `oneRowAtATime`, it is named.
    func upserts(_ db: Database, omitting omitted: Set<Int> = [], oneRowAtATime: Bool = false) throws -> ManyRowStatement {
        let kept = valueColumns.indices.filter { !omitted.contains($0) }.map { valueColumns[$0] }
        return try ManyRowStatement(
            db, argumentsPerRow: keyColumns.count + kept.count, checkingWrites: !kept.isEmpty, oneRowAtATime: oneRowAtATime
        ) { [self] rows in
            Self.upsertStatement(table: table, keyColumns: keyColumns, valueColumns: kept, rows: rows)
        }
    }

    /// `INSERT … VALUES … ON CONFLICT (key) DO UPDATE` of `rows`, each given as its parameters.
    static func upsertStatement(table: String, keyColumns: [Column], valueColumns: [Column], rows: [[String]]) -> String {
        let keys = keyColumns.map { SQLQuoting.identifier($0.name) }
        let values = valueColumns.map { SQLQuoting.identifier($0.name) }
        let update = values.isEmpty ? "NOTHING" : "UPDATE SET " + values.map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        return "INSERT INTO \(SQLQuoting.identifier(table)) (\((keys + values).joined(separator: ", "))) VALUES \(ManyRowStatement.valuesList(rows)) ON CONFLICT (\(keys.joined(separator: ", "))) DO \(update)"
    }

    static func statements(table: String, keyColumns: [Column], valueColumns: [Column]) -> (select: String, delete: String) {
        let quotedTable = SQLQuoting.identifier(table)
        let keys = keyColumns.map { SQLQuoting.identifier($0.name) }
        let values = valueColumns.map { SQLQuoting.identifier($0.name) }
        let matchKey = keys.map { "\($0) = ?" }.joined(separator: " AND ")
        let selected = values.isEmpty ? "1" : values.joined(separator: ", ")
        return (
            "SELECT \(selected) FROM \(quotedTable) WHERE \(matchKey)",
            "DELETE FROM \(quotedTable) WHERE \(matchKey)"
        )
    }

    // MARK: Values

    /// The key values of a record name, typed for the key columns.
    func keyValues(of recordName: String) throws -> [DatabaseValue] {
        guard let components = template.components(of: recordName) else {
            throw SQLiteAdapterError(
                .invalidRecordName, "record name does not fit the template of table \(table) (\(keyColumns.count) key columns)")
        }
        return try zip(keyColumns, components).map { column, text in
            switch column.kind {
            case .integer, .boolean, .unixSeconds, .unixMilliseconds:
                guard let int = Int64(text) else {
                    throw SQLiteAdapterError(.invalidRecordName, "a record name's key for column \(column.name) of table \(table) is not an integer")
                }
                return int.databaseValue
            case .real:
                guard let double = Double(text) else {
                    throw SQLiteAdapterError(.invalidRecordName, "a record name's key for column \(column.name) of table \(table) is not a number")
                }
                return double.databaseValue
            case .blob:
                guard let data = Data(hex: text) else {
                    throw SQLiteAdapterError(.invalidRecordName, "a record name's key for column \(column.name) of table \(table) is not hex")
                }
                return data.databaseValue
            case .text, .iso8601:
                return text.databaseValue
            }
        }
    }

    /// The record for a row read through a ``BoundStatement`` (values from column `offset` on: 0
    /// for ``selectRowSQL``, 1 for ``selectRowsSQL``, whose first column is the key). Never
    /// through GRDB's `Row`, which cuts text at a NUL character.
    func record(from row: StatementRow, id: RecordID, offset: Int) -> Record {
        record(id: id) { row[offset + $0] }
    }

    private func record(id: RecordID, value: (Int) -> DatabaseValue) -> Record {
        // Room for the two stamps an upload adds, so the values never grow on the way.
        var values: [FieldValue?] = []
        values.reserveCapacity(valueColumns.count + 2)
        for (index, column) in valueColumns.enumerated() { values.append(ValueMapping.field(value(index), kind: column.kind)) }
        return Record(id: id, recordType: recordType, layout: layout, values: values)
    }

    /// Where the fields of records of `source` go in this table's columns.
    func mapping(from source: RecordLayout) -> LayoutMapping {
        mappings.withLock { known in
            if let mapping = known[ObjectIdentifier(source)], mapping.source === source { return mapping }
            if known.count >= 64 { known.removeAll() }
            let mapping = LayoutMapping(from: source, to: layout)
            known[ObjectIdentifier(source)] = mapping
            return mapping
        }
    }

    /// A row's values for ``upserts(_:omitting:)``: the key from the record name, the other columns from fields
    /// by position (a field this table has no column for is not stored).
    func upsertValues(for record: Record, mapping: LayoutMapping) throws -> [BindableValue] {
        let keys = try keyValues(of: record.id.recordName)
        var values: [BindableValue] = []
        values.reserveCapacity(keys.count + valueColumns.count)
        for key in keys { values.append(.value(key)) }
        for (index, column) in valueColumns.enumerated() {
            let value = mapping.sourcePositions[index].flatMap { record.values[$0] }
            values.append(.value(ValueMapping.databaseValue(value, kind: column.kind)))
        }
        return values
    }
}
