import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

extension EmbeddedCloud {
    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let limit = max(1, min(limit, limits.maxResultsPerFetch))
        let since = try token.map { token throws(CloudError) in try SequenceChangeToken(token) }
        return try await read { db in
            let zoneRow = try Self.zoneRow(db, zone)
            var after: Int64 = 0
            var horizon = zoneRow.purgedSequence
            if let since {
                try since.check(zone: zone, generation: zoneRow.generation, purgedSequence: zoneRow.purgedSequence, lastSequence: zoneRow.lastSequence)
                after = since.sequence
                horizon = since.horizon
            }
            // One row more than asked tells whether more are coming.
            let statement = BoundStatement(
                try db.cachedStatement(
                    sql: """
                        SELECT record_name, record_type, change_tag, seq, deleted, modified_at, fields, COALESCE(created_at, modified_at)
                        FROM records WHERE zone_key = ? AND seq > ? ORDER BY seq LIMIT ?
                        """))
            var modified: [Record] = []
            modified.reserveCapacity(limit)
            var layouts = DecodedLayouts()
            var deleted: [RecordID] = []
            var lastSequence = after
            var count = 0
            var moreComing = false
            try statement.forEachRow([.integer(zoneRow.key), .integer(after), .integer(Int64(limit) + 1)]) { row in
                guard count < limit else {
                    moreComing = true
                    return
                }
                count += 1
                let id = RecordID(recordName: row.text(at: 0) ?? "", zoneID: zone)
                lastSequence = row.int64(at: 3)
                if row.int64(at: 4) != 0 {
                    deleted.append(id)
                } else {
                    let (layout, values) = try row.withUnsafeBytes(at: 6) { try Self.decodeValues($0, id: id, layouts: &layouts) }
                    modified.append(
                        Record(
                            id: id, recordType: row.text(at: 1) ?? "", changeTag: row.text(at: 2), layout: layout, values: values,
                            modifiedAt: Timestamp(millisecondsSince1970: row.int64(at: 5)),
                            createdAt: Timestamp(millisecondsSince1970: row.int64(at: 7))))
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
        try await read { db in
            var zoneKeys: [ZoneID: Int64] = [:]
            let statement = try db.cachedStatement(
                sql: """
                    SELECT record_type, change_tag, fields, modified_at, COALESCE(created_at, modified_at) FROM records
                    WHERE zone_key = ? AND record_name = ? AND deleted = 0
                    """)
            return try recordIDs.map { id -> Record? in
                let key: Int64
                if let known = zoneKeys[id.zoneID] {
                    key = known
                } else {
                    key = try Self.zoneRow(db, id.zoneID).key
                    zoneKeys[id.zoneID] = key
                }
                guard let row = try Row.fetchOne(statement, arguments: [key, id.recordName]) else { return nil }
                return Record(
                    id: id, recordType: row[0], changeTag: row[1], fields: try Self.decodeFields(row, index: 2, id: id),
                    modifiedAt: Timestamp(millisecondsSince1970: row[3]), createdAt: Timestamp(millisecondsSince1970: row[4]))
            }
        }
    }
}

extension EmbeddedCloud {
    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        try await read { db in
            let zoneRow = try Self.zoneRow(db, zone)
            return SequenceChangeToken(generation: zoneRow.generation, sequence: zoneRow.lastSequence, horizon: zoneRow.purgedSequence)
                .changeToken
        }
    }
}
