import Foundation
import GatewayCore
import PostgresNIO

extension PostgresCloud {
    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let limit = max(1, min(limit, limits.maxResultsPerFetch))
        let since = try token.map { token throws(CloudError) in try SequenceChangeToken(token) }
        // One snapshot for the zone row and the records, so the page and the token agree.
        return try await transaction("fetching changes of zone \(zone)", isolation: "REPEATABLE READ READ ONLY") { [tables] connection in
            let zoneRow = try await Self.zoneRow(zone, tables: tables, connection: connection)!
            var after: Int64 = 0
            var horizon = zoneRow.purgedSequence
            if let since {
                try since.check(
                    zone: zone, generation: zoneRow.generation, purgedSequence: zoneRow.purgedSequence, lastSequence: zoneRow.lastSequence)
                after = since.sequence
                horizon = since.horizon
            }
            // The page is read in the feed index's order, never gathered and sorted: without
            // statistics for the zone the planner would sort the zone's whole rest per page.
            try await connection.query("SELECT set_config('enable_sort', 'off', true)", logger: connection.logger)
            // One row more than asked tells whether more are coming.
            let rows = try await connection.query(
                """
                SELECT record_name, record_type, change_tag, seq, deleted, modified_at, fields, COALESCE(created_at, modified_at)
                FROM \(unescaped: tables.records)
                WHERE zone_key + 0 = \(zoneRow.key) AND seq > \(after)
                ORDER BY seq LIMIT \(limit + 1)
                """, logger: connection.logger)
            var modified: [Record] = []
            var deleted: [RecordID] = []
            var layouts = DecodedLayouts()
            var lastSequence = after
            var count = 0
            var moreComing = false
            for try await (name, type, tag, sequence, isDeleted, modifiedAt, fields, createdAt)
                in rows.decode((String, String, String?, Int64, Bool, Int64, ByteBuffer?, Int64).self)
            {
                if count == limit {
                    moreComing = true
                    continue
                }
                count += 1
                let id = RecordID(recordName: name, zoneID: zone)
                lastSequence = sequence
                if isDeleted {
                    deleted.append(id)
                } else {
                    let (layout, values) = try Self.decodeValues(fields, id: id, layouts: &layouts)
                    modified.append(
                        Record(
                            id: id, recordType: type, changeTag: tag, layout: layout, values: values,
                            modifiedAt: Timestamp(millisecondsSince1970: modifiedAt), createdAt: Timestamp(millisecondsSince1970: createdAt)))
                }
            }
            // At the end of the feed the token moves to the zone's sequence, so a caller that is
            // up to date keeps a token that stays valid while tombstones it already saw are purged.
            let position = moreComing ? lastSequence : max(lastSequence, zoneRow.lastSequence)
            let next = SequenceChangeToken(generation: zoneRow.generation, sequence: position, horizon: horizon)
            return ZoneChanges(modified: modified, deleted: deleted, token: next.changeToken, moreComing: moreComing)
        }
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [GatewayCore.Record?] {
        guard !recordIDs.isEmpty else { return [] }
        return try await transaction("looking up \(recordIDs.count) records", isolation: "REPEATABLE READ READ ONLY") { [tables] connection in
            var found: [RecordID: Record] = [:]
            for (zone, ids) in Dictionary(grouping: recordIDs, by: \.zoneID) {
                let zoneRow = try await Self.zoneRow(zone, tables: tables, connection: connection)!
                // Primary-key probes (`PostgresCloudSchema` says why).
                let rows = try await connection.query(
                    """
                    SELECT r.record_name, r.record_type, r.change_tag, r.fields, r.modified_at, COALESCE(r.created_at, r.modified_at)
                    FROM unnest(\(ids.map(\.recordName))::text[]) AS u(n) CROSS JOIN LATERAL (
                        SELECT * FROM \(unescaped: tables.records)
                        WHERE zone_key = \(zoneRow.key) AND record_name = u.n LIMIT 1
                    ) AS r
                    WHERE NOT r.deleted
                    """, logger: connection.logger)
                for try await (name, type, tag, fields, modifiedAt, createdAt) in rows.decode(
                    (String, String, String?, ByteBuffer?, Int64, Int64).self)
                {
                    let id = RecordID(recordName: name, zoneID: zone)
                    found[id] = Record(
                        id: id, recordType: type, changeTag: tag, fields: try Self.decodeFields(fields, id: id),
                        modifiedAt: Timestamp(millisecondsSince1970: modifiedAt), createdAt: Timestamp(millisecondsSince1970: createdAt))
                }
            }
            return recordIDs.map { found[$0] }
        }
    }
}

extension PostgresCloud {
    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        try await transaction("reading the change token of zone \(zone)", isolation: "REPEATABLE READ READ ONLY") { [tables] connection in
            let zoneRow = try await Self.zoneRow(zone, tables: tables, connection: connection)!
            return SequenceChangeToken(generation: zoneRow.generation, sequence: zoneRow.lastSequence, horizon: zoneRow.purgedSequence)
                .changeToken
        }
    }
}
