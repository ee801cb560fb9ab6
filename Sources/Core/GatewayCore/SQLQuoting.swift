/// Quoting for the SQL text the stores and clouds build (table, column and schema names from the
/// configuration; literal text in trigger bodies). Row values are always bound as arguments,
/// never spliced. The rules are the SQL standard's, which SQLite and PostgreSQL (with
/// `standard_conforming_strings`, its default since 9.1) share.
package enum SQLQuoting {
    /// `name` as a quoted identifier: in double quotes, inner double quotes doubled.
    package static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `text` as a string literal: in single quotes, inner single quotes doubled.
    package static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
