/// The checks both SQL adapters make of a configured table against its database's catalog: the
/// table exists, every column the configuration names exists, there is a primary key, no key
/// column is encrypted. Each adapter reads its own catalog and reports the failure as its own
/// error type with the same code.
package enum TableShapeCheck {
    /// A column as the catalog describes it.
    package struct Column: Sendable {
        package var name: String
        /// The column's position in the primary key, from 1; 0 when it is not part of it.
        package var keyPosition: Int
        /// Whether the database computes it (never written by the gateway).
        package var generated: Bool

        package init(name: String, keyPosition: Int, generated: Bool) {
            self.name = name
            self.keyPosition = keyPosition
            self.generated = generated
        }
    }

    /// Why a table does not fit its configuration, with a message naming table, column and place.
    package struct Failure: Error, Sendable {
        package var code: SQLStoreErrorCode
        package var message: String
    }

    /// The primary-key columns in key order and the synced columns (neither key nor generated,
    /// not excluded, included when an `include` list is given), as indexes into `columns`.
    /// - Parameters:
    ///   - table: the configured table name; `displayName` is how messages name it
    ///     (`schema.table` for PostgreSQL).
    ///   - place: the database, as messages name it (a path, or a PostgreSQL endpoint).
    ///   - named: every column the configuration names (include, exclude, types, encrypted, assets).
    package static func check(
        table: String, displayName: String, place: String, columns: [Column], named: [String], include: [String]?, exclude: [String],
        encrypted: [String], processed: [String] = [], renamedTo: [String] = []
    ) throws(Failure) -> (keys: [Int], synced: [Int]) {
        guard !columns.isEmpty else {
            throw Failure(code: .missingTable, message: "table \(displayName) does not exist in \(place); create it or remove it from the configuration")
        }
        let names = Set(columns.map(\.name))
        for column in named where !names.contains(column) {
            throw Failure(code: .missingColumn, message: "column \(column) named in the configuration of table \(table) does not exist in \(place)")
        }
        let keys = columns.indices.filter { columns[$0].keyPosition > 0 }.sorted { columns[$0].keyPosition < columns[$1].keyPosition }
        guard !keys.isEmpty else {
            throw Failure(code: .noPrimaryKey, message: "table \(displayName) in \(place) has no primary key, so its rows cannot be named; add one")
        }
        for column in encrypted where keys.contains(where: { columns[$0].name == column }) {
            throw Failure(
                code: .invalidMapping,
                message: "column \(column) of table \(table) is part of the primary key, which becomes the record name and is never encrypted; encrypt other columns")
        }
        let synced = columns.indices.filter { index in
            let column = columns[index]
            return column.keyPosition == 0 && !column.generated && !exclude.contains(column.name) && (include?.contains(column.name) ?? true)
        }
        let syncedNames = Set(synced.map { columns[$0].name })
        for column in processed where !syncedNames.contains(column) {
            throw Failure(
                code: .invalidMapping,
                message: "column \(column) of table \(table) has a processor but is not synced (a key, generated, excluded or not included); process a synced column")
        }
        for name in renamedTo where names.contains(name) && !exclude.contains(name) {
            throw Failure(
                code: .invalidMapping,
                message: "a processor of table \(table) renames a column to \(name), which is also a column of the table: its values would be lost; rename to a name the table does not have, or exclude \(name)")
        }
        return (keys, synced)
    }
}
