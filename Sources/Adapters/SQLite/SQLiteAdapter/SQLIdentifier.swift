/// Quoting for SQL text the adapter builds. Every identifier is quoted and every literal escaped;
/// row values are always bound as arguments, never spliced.
enum SQL {
    /// `name` as a quoted identifier.
    static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `text` as a string literal (used only for table names and template text in trigger bodies).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
