import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

/// Values a PostgreSQL column holds only as text (locations and lists in `text` or `json`
/// columns, references, assets, timestamps in text columns), kept in the state schema's `typed`
/// table as the cloud sent them, with the text the cell got: while the cell still holds that
/// text (for a `json`/`jsonb` column, the same JSON), reading the row gives back the value the
/// cloud sent, so an edit of another column does not turn it into a string or drop what the text
/// leaves out (a location's altitude, a reference's action). Written in the transaction that
/// writes the page.
enum PostgresTypedCells {
    /// A value to keep: the record's field, the text its cell got, the value as sent.
    struct Kept {
        var recordName: String
        var field: String
        var cell: String
        var value: FieldValue
    }

    /// The values of the records at `positions` (those of `table`) that their rows hold only as text.
    static func kept(in records: [Record], at positions: [Int], table: PostgresResolvedTable) -> [Kept] {
        var kept: [Kept] = []
        var mappings = LayoutMappings(target: table.layout)
        for recordIndex in positions {
            let record = records[recordIndex]
            let sources = mappings.mapping(from: record.layout).sourcePositions
            for (index, column) in table.valueColumns.enumerated() {
                guard let position = sources[index], let value = record.values[position] else { continue }
                switch value {
                case .string, .int64, .double, .bytes, .encrypted: continue
                default: break
                }
                guard let text = column.text(for: value), column.field(fromText: text) != value else { continue }
                kept.append(Kept(recordName: record.id.recordName, field: column.name, cell: text, value: value))
            }
        }
        return kept
    }

    /// Replaces what is kept for the records named (every record the page wrote or deleted) with `kept`.
    static func replace(written names: [String], with kept: [Kept], state: PostgresGatewaySchema, connection: PooledConnection) async throws {
        guard !names.isEmpty || !kept.isEmpty else { return }
        try await connection.query(
            "DELETE FROM \(unescaped: state.typed) WHERE scope = \(state.scope) AND record_name = ANY(\(names)::text[])",
            logger: connection.logger)
        guard !kept.isEmpty else { return }
        let values = kept.map { ByteBuffer(bytes: FieldCoding.encode($0.value)) }
        try await connection.query(
            """
            INSERT INTO \(unescaped: state.typed) (scope, record_name, field, cell, value)
            SELECT \(state.scope), n, f, c, v FROM unnest(\(kept.map(\.recordName))::text[], \(kept.map(\.field))::text[],
                \(kept.map(\.cell))::text[], \(values)::bytea[]) AS u(n, f, c, v)
            ON CONFLICT (scope, record_name, field) DO UPDATE SET cell = excluded.cell, value = excluded.value
            """, logger: connection.logger)
    }

    /// Gives the records read back (by name) the values kept for cells that still hold the text
    /// the gateway wrote.
    static func restore(
        _ records: inout [RecordID: Record], tables: [RecordID: PostgresResolvedTable], state: PostgresGatewaySchema, connection: PooledConnection
    ) async throws {
        guard !records.isEmpty else { return }
        let ids = Dictionary(records.keys.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let rows = try await connection.query(
            """
            SELECT record_name, field, cell, value FROM \(unescaped: state.typed)
            WHERE scope = \(state.scope) AND record_name = ANY(\(ids.keys.map(\.text))::text[])
            """, logger: connection.logger)
        for try await (name, field, cell, value) in rows.decode((String, String, String, ByteBuffer).self) {
            guard let id = ids[RecordName(name)], let current = records[id]?[field], let table = tables[id],
                let column = table.valueColumns.first(where: { $0.name == field }),
                holds(current, cell: cell, column: column),
                let kept = try? FieldCoding.decodeValue([UInt8](buffer: value))
            else { continue }
            records[id]?[field] = kept
        }
    }

    /// Whether a cell read as `current` still holds `cell`, the text the gateway wrote: the same
    /// text, or for a JSON column the same JSON (PostgreSQL writes `jsonb` back in its own form).
    private static func holds(_ current: FieldValue, cell: String, column: PostgresColumn) -> Bool {
        guard case .string(let text) = current else { return false }
        if text == cell { return true }
        guard column.kind == .json, let now = try? JSONValue.parse(Data(text.utf8), numbers: .wholeDoublesAsIntegers),
            let then = try? JSONValue.parse(Data(cell.utf8), numbers: .wholeDoublesAsIntegers) else {
            return false
        }
        return now == then
    }
}
