import GatewayCore

extension RecordNameTemplate {
    init(_ template: String, recordType: String, keyColumnCount: Int, table: String) throws {
        guard let parsed = RecordNameTemplate(template, recordType: recordType, keyColumnCount: keyColumnCount) else {
            throw SQLiteAdapterError(
                .invalidMapping, "the record_name template '\(template)' of table \(table) must contain <pk> exactly once")
        }
        self = parsed
    }

    /// SQL computing the record name from the key columns of `row` (`NEW`, `OLD` or a table alias).
    func sqlExpression(keyColumns: [ResolvedTable.Column], row: String) -> String {
        let texts = keyColumns.map { column -> String in
            let value = "\(row).\(SQLQuoting.identifier(column.name))"
            let text = column.kind == .blob ? "hex(\(value))" : "CAST(\(value) AS TEXT)"
            return "COALESCE(\(text), '')"
        }
        let key: String
        if texts.count == 1 {
            key = texts[0]
        } else {
            key = texts.map { "replace(replace(\($0), '\\', '\\\\'), '|', '\\|')" }.joined(separator: " || '|' || ")
        }
        return [SQLQuoting.literal(prefix), key, SQLQuoting.literal(suffix)].joined(separator: " || ")
    }
}
