import GatewayCore
import PostgresNIO

extension PostgresCloud: RecordScanning {
    /// Walks the `(zone_key, record_name)` primary key from `recordName` on, in the
    /// database's collation (the key's order, so the walk is an index range scan).
    public func scanRecords(in zone: ZoneID, ofType recordType: String, after recordName: String?, limit: Int) async throws -> [Record] {
        try await transaction("listing records of zone \(zone)", isolation: "REPEATABLE READ READ ONLY") { [tables] connection in
            let zoneRow = try await Self.zoneRow(zone, tables: tables, connection: connection)!
            let rows = try await connection.query(
                """
                SELECT record_name, change_tag, fields, modified_at, COALESCE(created_at, modified_at) FROM \(unescaped: tables.records)
                WHERE zone_key = \(zoneRow.key) AND record_name > \(recordName ?? "")
                    AND NOT deleted AND record_type = \(recordType)
                ORDER BY record_name LIMIT \(Int64(max(1, limit)))
                """, logger: connection.logger)
            var records: [Record] = []
            for try await (name, tag, fields, modifiedAt, createdAt) in rows.decode((String, String?, ByteBuffer?, Int64, Int64).self) {
                let id = RecordID(recordName: name, zoneID: zone)
                records.append(
                    Record(
                        id: id, recordType: recordType, changeTag: tag, fields: try Self.decodeFields(fields, id: id),
                        modifiedAt: Timestamp(millisecondsSince1970: modifiedAt), createdAt: Timestamp(millisecondsSince1970: createdAt)))
            }
            return records
        }
    }
}
