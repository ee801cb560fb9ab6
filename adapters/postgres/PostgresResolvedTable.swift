import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

/// A configured table checked against the catalog: its key, its synced columns and the SQL the
/// adapter uses for it.
struct PostgresResolvedTable: Sendable {
    let mapping: PostgresTableMapping
    let template: RecordNameTemplate
    /// Primary-key columns, in key order.
    let keyColumns: [PostgresColumn]
    /// The synced columns outside the key: the record's fields.
    let valueColumns: [PostgresColumn]
    /// The schema-qualified, quoted table name.
    let qualifiedName: String
    /// The table's schema, unquoted.
    let schema: String
    /// Which value columns a row's write leaves out (``omitting(_:)``) when the record has no
    /// value for them.
    let emptyColumnRule: EmptyColumnRule
    /// The record layout of the table's rows: the value columns, in order.
    let layout: RecordLayout

    var table: String { mapping.table }
    var recordType: String { mapping.recordType }

    /// Reads the table's shape from the catalog and checks the mapping against it.
    static func resolve(
        _ mapping: PostgresTableMapping, schema: String, connection: PooledConnection, place: String
    ) async throws -> PostgresResolvedTable {
        let rows = try await connection.query(
            """
            SELECT a.attname::text, t.typname::text, t.typcategory::text, et.typname::text, et.typcategory::text,
                   format_type(a.atttypid, a.atttypmod), quote_ident(tn.nspname) || '.' || quote_ident(t.typname),
                   a.attgenerated::text <> '', a.attnotnull, a.atthasdef,
                   coalesce((SELECT k.n FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) WHERE k.attnum = a.attnum), 0)::int8
            FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_type t ON t.oid = a.atttypid
            JOIN pg_namespace tn ON tn.oid = t.typnamespace
            LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
            LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
            WHERE n.nspname = \(schema) AND c.relname = \(mapping.table) AND c.relkind IN ('r', 'p')
              AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """, logger: connection.logger)
        struct Info {
            var column: PostgresColumn
            var generated: Bool
            var notNull: Bool
            var hasDefault: Bool
            var keyPosition: Int64
        }
        var infos: [Info] = []
        for try await (name, type, category, elementType, elementCategory, sqlType, castType, generated, notNull, hasDefault, keyPosition)
            in rows.decode((String, String, String, String?, String?, String, String, Bool, Bool, Bool, Int64).self)
        {
            let kind = PostgresColumn.Kind.from(typeName: type, category: category, elementName: elementType, elementCategory: elementCategory)
            infos.append(
                Info(
                    column: PostgresColumn(name: name, kind: kind, sqlType: sqlType, castType: castType), generated: generated, notNull: notNull,
                    hasDefault: hasDefault,
                    keyPosition: keyPosition))
        }
        let shape: (keys: [Int], synced: [Int])
        do {
            shape = try TableShapeCheck.check(
                table: mapping.table, displayName: "\(schema).\(mapping.table)", place: place,
                columns: infos.map { TableShapeCheck.Column(name: $0.column.name, keyPosition: Int($0.keyPosition), generated: $0.generated) },
                named: (mapping.include ?? []) + mapping.exclude + mapping.encryptedColumns + mapping.assetColumns + mapping.processedColumns, include: mapping.include,
                exclude: mapping.exclude, encrypted: mapping.encryptedColumns,
                processed: mapping.processedColumns, renamedTo: mapping.renamedTo)
        } catch {
            throw PostgresAdapterError(error.code, error.message, table: mapping.table)
        }
        let keys = shape.keys.map { infos[$0] }
        let synced = shape.synced.map { infos[$0] }
        for column in mapping.encryptedColumns where infos.first(where: { $0.column.name == column })?.column.kind != .bytes {
            throw PostgresAdapterError(
                .invalidMapping, "encrypted column \(column) of table \(mapping.table) must be of type bytea to hold ciphertext",
                table: mapping.table)
        }
        guard let template = RecordNameTemplate(mapping.recordName, recordType: mapping.recordType, keyColumnCount: keys.count) else {
            throw PostgresAdapterError(
                .invalidMapping, "the record_name template '\(mapping.recordName)' of table \(mapping.table) must contain <pk> exactly once",
                table: mapping.table)
        }
        return PostgresResolvedTable(
            mapping: mapping, template: template, keyColumns: keys.map(\.column), valueColumns: synced.map(\.column),
            qualifiedName: SQLQuoting.identifier(schema) + "." + SQLQuoting.identifier(mapping.table), schema: schema,
            emptyColumnRule: EmptyColumnRule(synced.map { ($0.column.name, $0.notNull, $0.hasDefault) }), layout: RecordLayout(synced.map(\.column.name)))
    }

    /// This table without the value columns at `omitted`: its upsert leaves them as they are
    /// (a new row takes their defaults).
    func omitting(_ omitted: Set<Int>) -> PostgresResolvedTable {
        let kept = valueColumns.indices.filter { !omitted.contains($0) }.map { valueColumns[$0] }
        return PostgresResolvedTable(
            mapping: mapping, template: template, keyColumns: keyColumns, valueColumns: kept, qualifiedName: qualifiedName, schema: schema,
            emptyColumnRule: EmptyColumnRule(kept.map { ($0.name, false, false) }), layout: RecordLayout(kept.map(\.name)))
    }

    // MARK: SQL

    /// SQL computing the record name from the key columns of `row` (`NEW`, `OLD` or an alias).
    func nameSQL(_ row: String) -> String {
        let texts = keyColumns.map { "COALESCE(\($0.keyTextSQL(row)), '')" }
        let key =
            texts.count == 1
            ? texts[0]
            : texts.map { "replace(replace(\($0), '\\', '\\\\'), '|', '\\|')" }.joined(separator: " || '|' || ")
        return [SQLQuoting.literal(template.prefix), key, SQLQuoting.literal(template.suffix)].joined(separator: " || ")
    }

    /// Selects the record name and the values of the rows whose keys are given, one text array
    /// per key column (`$1`, `$2`, …).
    var selectRowsSQL: String {
        let keyNames = keyColumns.indices.map { "k\($0)" }
        let arrays = keyColumns.indices.map { "$\($0 + 1)::text[]" }.joined(separator: ", ")
        let match = zip(keyColumns, keyNames).map { column, name in "t.\(column.quoted) = \(column.keyFromTextSQL("k.\(name)"))" }
        let selected = ([nameSQL("t")] + valueColumns.map { $0.readSQL("t") }).joined(separator: ", ")
        // One primary-key probe per key: `LIMIT 1` keeps the planner from turning the lateral
        // subquery into a join that scans the table (see PostgresGatewaySchema.lookup).
        return """
            SELECT \(selected) FROM unnest(\(arrays)) AS k(\(keyNames.joined(separator: ", ")))
            CROSS JOIN LATERAL (SELECT * FROM \(qualifiedName) AS t WHERE \(match.joined(separator: " AND ")) LIMIT 1) AS t
            """
    }

    /// Inserts or updates many rows at once from one `text[]` per column: the key texts (`$1`,
    /// `$2`, …) then the value texts, NULL for SQL NULL (see ``upsertManyArguments(for:)``).
    var upsertManySQL: String {
        let conflict = keyColumns.map(\.quoted).joined(separator: ", ")
        let update =
            valueColumns.isEmpty
            ? "NOTHING"
            : "UPDATE SET " + valueColumns.map { "\($0.quoted) = \($0.updateSQL(existing: "t.\($0.quoted)", incoming: "excluded.\($0.quoted)"))" }.joined(separator: ", ")
        return insertManySQL + "\nON CONFLICT (\(conflict)) DO \(update)"
    }

    /// Inserts many rows at once, like ``upsertManySQL`` (same parameters) but failing on an
    /// existing key (SQLSTATE 23505) instead of updating it: for rows known to be new, it skips
    /// the conflict check.
    var insertManySQL: String {
        let keyNames = keyColumns.indices.map { "k\($0)" }
        let valueNames = valueColumns.indices.map { "v\($0)" }
        let arrays = (keyNames + valueNames).indices.map { "$\($0 + 1)::text[]" }.joined(separator: ", ")
        let values = zip(keyColumns, keyNames).map { $0.keyFromTextSQL("u.\($1)") }
            + zip(valueColumns, valueNames).map { $0.writeSQL("u.\($1)") }
        return """
            INSERT INTO \(qualifiedName) AS t (\((keyColumns + valueColumns).map(\.quoted).joined(separator: ", ")))
            SELECT \(values.joined(separator: ", ")) FROM unnest(\(arrays)) AS u(\((keyNames + valueNames).joined(separator: ", ")))
            """
    }

    /// The parameters of ``upsertManySQL`` for records of this table: one array per key column,
    /// then one per value column, in binary (no JSON to build here or to parse on the server).
    func upsertManyArguments(for records: [Record]) throws -> [PostgresTextArray] {
        var keys = keyColumns.map { _ in PostgresTextArray(reservingBytes: records.count * 16) }
        var values = valueColumns.map { _ in PostgresTextArray(reservingBytes: records.count * 32) }
        var mappings = LayoutMappings(target: layout)
        for record in records {
            for (index, text) in try keyTexts(of: record.id.recordName).enumerated() { keys[index].append(text) }
            let positions = mappings.mapping(from: record.layout).sourcePositions
            for (index, column) in valueColumns.enumerated() {
                values[index].append(column.text(for: positions[index].flatMap { record.values[$0] }))
            }
        }
        return keys + values
    }

    /// The rows of the records at `positions` in `COPY`'s text format (key columns, then value
    /// columns), or `nil` when a value can only go through ``insertManySQL`` (see
    /// ``PostgresColumn/copyValue(for:)``).
    func copyRows(for records: [Record], at positions: [Int]) throws -> PostgresCopyText? {
        // PostgresNIO writes the table and column names into COPY between double quotes without
        // doubling the ones inside: such names take the statement path.
        guard !([table] + copyColumns).contains(where: { $0.contains("\"") }) else { return nil }
        var rows = PostgresCopyText(reservingBytes: positions.count * 96)
        var mappings = LayoutMappings(target: layout)
        // By index, records and columns alike: iterating them copied each record and column
        // (a retain and release per string and array they hold, about 4% of a download's CPU).
        for recordIndex in positions {
            let keys = try keyTexts(of: records[recordIndex].id.recordName)
            for index in 0..<min(keyColumns.count, keys.count) { rows.append(keyColumns[index].copyKeyText(keys[index])) }
            let positions = mappings.mapping(from: records[recordIndex].layout).sourcePositions
            for index in valueColumns.indices {
                let value = positions[index].flatMap { records[recordIndex].values[$0] }
                guard case .text(let text) = valueColumns[index].copyValue(for: value) else { return nil }
                rows.append(text)
            }
            rows.endRow()
        }
        return rows
    }

    /// The columns ``copyRows(for:at:)`` fills, in order, unquoted (the COPY call quotes them).
    var copyColumns: [String] { (keyColumns + valueColumns).map(\.name) }

    /// Deletes many rows at once by their key texts, one text array per key column.
    var deleteManySQL: String {
        let keyNames = keyColumns.indices.map { "k\($0)" }
        let arrays = keyColumns.indices.map { "$\($0 + 1)::text[]" }.joined(separator: ", ")
        let match = zip(keyColumns, keyNames).map { column, name in "t.\(column.quoted) = \(column.keyFromTextSQL("k.\(name)"))" }
        return """
            DELETE FROM \(qualifiedName) AS t USING unnest(\(arrays)) AS k(\(keyNames.joined(separator: ", ")))
            WHERE \(match.joined(separator: " AND "))
            """
    }

    // MARK: Values

    /// The key texts of a record name.
    func keyTexts(of recordName: String) throws -> [String] {
        guard let components = template.components(of: recordName) else {
            throw PostgresAdapterError(
                .invalidRecordName, "a record name does not fit the template of table \(table) (\(keyColumns.count) key columns)",
                table: table)
        }
        return components
    }

    /// Whether a record name can be a key of this table: it fits the template, and each key text
    /// reads as its column's type where that is checked here (whole numbers in range for
    /// `smallint`, `integer` and `bigint`, numbers for floating point, hex for `bytea`); other
    /// types are left to the server's cast.
    func acceptsKey(of recordName: String) -> Bool {
        guard let texts = template.components(of: recordName), texts.count == keyColumns.count else { return false }
        for index in texts.indices {
            let text = texts[index]
            switch keyColumns[index].kind {
            case .integer:
                guard let value = Int64(text) else { return false }
                switch keyColumns[index].sqlType {
                case "smallint", "int2": if Int16(exactly: value) == nil { return false }
                case "integer", "int4": if Int32(exactly: value) == nil { return false }
                default: break
                }
            case .real: if Double(text) == nil { return false }
            case .bytes: if Data(hex: text) == nil { return false }
            default: continue
            }
        }
        return true
    }

    /// The record for the texts of a row selected with ``selectRowsSQL`` (after the name).
    func record(id: RecordID, values texts: [String?]) -> Record {
        // Room for the two stamps an upload adds, so the values never grow on the way.
        var values: [FieldValue?] = []
        values.reserveCapacity(valueColumns.count + 2)
        for (column, text) in zip(valueColumns, texts) { values.append(text.flatMap { column.field(fromText: $0) }) }
        return Record(id: id, recordType: recordType, layout: layout, values: values)
    }
}
