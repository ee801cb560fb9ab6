import GatewayCore

/// Turns primary keys into record names and back, following a table's `record_name` template.
///
/// A single-column key is used as is; the columns of a composite key are joined with `|` after
/// escaping `\` and `|` with a backslash, so every key has exactly one name and back.
struct RecordNameTemplate: Sendable, Equatable {
    let prefix: String
    let suffix: String
    let keyColumnCount: Int

    init(_ template: String, recordType: String, keyColumnCount: Int, table: String) throws {
        let expanded = template.replacingOccurrences(of: "<Type>", with: recordType)
        let parts = expanded.components(separatedBy: "<pk>")
        guard parts.count == 2 else {
            throw SQLiteAdapterError(
                .invalidMapping, "the record_name template '\(template)' of table \(table) must contain <pk> exactly once")
        }
        prefix = parts[0]
        suffix = parts[1]
        self.keyColumnCount = keyColumnCount
    }

    /// The record name for key components (as text).
    func name(for components: [String]) -> String {
        let key = components.count == 1 ? components[0] : components.map(Self.escape).joined(separator: "|")
        return prefix + key + suffix
    }

    /// The key components of a record name, or `nil` when the name does not fit the template.
    func components(of name: String) -> [String]? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count >= prefix.count + suffix.count else { return nil }
        let key = String(name.dropFirst(prefix.count).dropLast(suffix.count))
        if keyColumnCount == 1 { return [key] }
        var components: [String] = []
        var current = ""
        var escaping = false
        for character in key {
            if escaping {
                current.append(character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == "|" {
                components.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaping else { return nil }
        components.append(current)
        return components.count == keyColumnCount ? components : nil
    }

    /// SQL computing the record name from the key columns of `row` (`NEW`, `OLD` or a table alias).
    func sqlExpression(keyColumns: [ResolvedTable.Column], row: String) -> String {
        let texts = keyColumns.map { column -> String in
            let value = "\(row).\(SQL.identifier(column.name))"
            let text = column.kind == .blob ? "hex(\(value))" : "CAST(\(value) AS TEXT)"
            return "COALESCE(\(text), '')"
        }
        let key: String
        if texts.count == 1 {
            key = texts[0]
        } else {
            key = texts.map { "replace(replace(\($0), '\\', '\\\\'), '|', '\\|')" }.joined(separator: " || '|' || ")
        }
        return [SQL.literal(prefix), key, SQL.literal(suffix)].joined(separator: " || ")
    }

    static func escape(_ component: String) -> String {
        component.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "|", with: "\\|")
    }
}
