import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// Values a SQLite column holds only as text (lists, locations, references, assets, timestamps in
/// text columns), kept beside the row as the cloud sent them, with the text the cell got.
///
/// Read back, such a cell is a string. Uploaded as one, an edit of another column of the row
/// turned the zone's typed value into a string and dropped what the text leaves out (a
/// location's altitude and accuracy, a reference's action). While the cell still holds the text
/// the gateway wrote, reading the row gives back the value the cloud sent; a cell the
/// application changed is read as what it holds now. Rows are written in the transaction that
/// writes the download, and dropped with the record.
enum TypedCells {
    static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS "_gateway_typed" (
            record_name TEXT NOT NULL,
            field TEXT NOT NULL,
            cell TEXT NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (record_name, field)
        ) WITHOUT ROWID;
        """

    /// A value to keep: the record's field, the text its cell got, the value as sent.
    struct Kept {
        var recordName: String
        var field: String
        var cell: String
        var value: FieldValue
    }

    /// The values of `record` (mapped onto `table` by `mapping`) that its row holds only as text.
    static func kept(in record: Record, table: ResolvedTable, mapping: LayoutMapping) -> [Kept] {
        var kept: [Kept] = []
        for (index, column) in table.valueColumns.enumerated() {
            guard let position = mapping.sourcePositions[index], let value = record[position: position] else { continue }
            switch value {
            case .string, .int64, .double, .bytes, .encrypted: continue
            default: break
            }
            let written = ValueMapping.databaseValue(value, kind: column.kind)
            guard case .string(let text) = written.storage, ValueMapping.field(written, kind: column.kind) != value else { continue }
            kept.append(Kept(recordName: record.id.recordName, field: column.name, cell: text, value: value))
        }
        return kept
    }

    /// Whether any value is kept: reads need no lookup otherwise.
    static func any(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_typed")"#)) ?? false
    }

    /// Replaces what is kept for the records named: `written` (every record the download wrote
    /// or deleted) lose what they had, then `kept` is stored.
    static func replace(written names: [String], with kept: [Kept], db: Database) throws {
        if !names.isEmpty, try any(db) {
            try db.cachedStatement(sql: #"DELETE FROM "_gateway_typed" WHERE record_name IN (SELECT value FROM json_each(?))"#)
                .execute(arguments: [JSONArrayText.of(names)])
        }
        guard !kept.isEmpty else { return }
        let insert = BoundStatement(
            try db.cachedStatement(sql: #"INSERT OR REPLACE INTO "_gateway_typed" (record_name, field, cell, value) VALUES (?, ?, ?, ?)"#))
        for value in kept {
            try insert.execute(.text(value.recordName), .text(value.field), .text(value.cell), .bytes(FieldCoding.encode(value.value)))
        }
    }

    /// Gives the records read back the values kept for cells that still hold the text the
    /// gateway wrote.
    static func restore(_ records: inout [Record?], db: Database) throws {
        guard records.contains(where: { $0 != nil }), try any(db) else { return }
        var positions: [RecordName: [Int]] = [:]
        for (index, record) in records.enumerated() {
            if let record { positions[record.id.name, default: []].append(index) }
        }
        let statement = BoundStatement(
            try db.cachedStatement(
                sql: #"SELECT record_name, field, cell, value FROM "_gateway_typed" WHERE record_name IN (SELECT value FROM json_each(?))"#))
        try statement.forEachRow([.text(JSONArrayText.of(positions.keys.lazy.map(\.text)))]) { row in
            guard let name = row.text(at: 0), let field = row.text(at: 1), let cell = row.text(at: 2), let data = row.data(at: 3),
                let value = try? FieldCoding.decodeValue([UInt8](data))
            else { return }
            for index in positions[RecordName(name)] ?? [] where records[index]?[field] == .string(cell) {
                records[index]?[field] = value
            }
        }
    }

    /// ``restore(_:db:)`` for one record.
    static func restore(_ record: Record?, db: Database) throws -> Record? {
        var records = [record]
        try restore(&records, db: db)
        return records[0]
    }
}
