import GRDB
import GatewayCore
import SQLiteSupport

extension EmbeddedCloud: RecordScanning {
    /// Walks the `(zone_key, record_name)` index from `recordName` on; the record type is
    /// checked on the row before its fields are decoded.
    public func scanRecords(in zone: ZoneID, ofType recordType: String, after recordName: String?, limit: Int) async throws -> [GatewayCore.Record] {
        try await read { db in
            let zoneRow = try Self.zoneRow(db, zone)
            let statement = BoundStatement(
                try db.cachedStatement(
                    sql: """
                        SELECT record_name, change_tag, modified_at, fields, COALESCE(created_at, modified_at) FROM records
                        WHERE zone_key = ? AND record_name > ? AND deleted = 0 AND record_type = ?
                        ORDER BY record_name LIMIT ?
                        """))
            var records: [GatewayCore.Record] = []
            var layouts = DecodedLayouts()
            // Every name sorts after the empty string, so it stands for "from the first".
            try statement.forEachRow([.integer(zoneRow.key), .text(recordName ?? ""), .text(recordType), .integer(Int64(max(1, limit)))]) {
                row in
                let id = RecordID(recordName: row.text(at: 0) ?? "", zoneID: zone)
                let (layout, values) = try row.withUnsafeBytes(at: 3) { try Self.decodeValues($0, id: id, layouts: &layouts) }
                records.append(
                    GatewayCore.Record(
                        id: id, recordType: recordType, changeTag: row.text(at: 1), layout: layout, values: values,
                        modifiedAt: Timestamp(millisecondsSince1970: row.int64(at: 2)),
                        createdAt: Timestamp(millisecondsSince1970: row.int64(at: 4))))
            }
            return records
        }
    }
}
