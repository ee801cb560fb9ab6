import Foundation
import GRDB
import GatewayCore

extension EmbeddedCloud {
    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let limit = max(1, min(limit, limits.maxResultsPerFetch))
        let since = try token.map { token throws(CloudError) in try EmbeddedChangeToken(token) }
        return try await read { db in
            let zoneRow = try Self.zoneRow(db, zone)
            var after: Int64 = 0
            var horizon = zoneRow.purgedSequence
            if let since {
                try Self.checkToken(since, zone: zone, zoneRow: zoneRow)
                after = since.sequence
                horizon = since.horizon
            }
            // One row more than asked tells whether more are coming.
            let statement = try db.cachedStatement(
                sql: """
                    SELECT record_name, record_type, change_tag, seq, deleted, modified_at, fields
                    FROM records WHERE zone_key = ? AND seq > ? ORDER BY seq LIMIT ?
                    """)
            var modified: [Record] = []
            var deleted: [RecordID] = []
            var lastSequence = after
            var count = 0
            var moreComing = false
            let rows = try Row.fetchCursor(statement, arguments: [zoneRow.key, after, limit + 1])
            while let row = try rows.next() {
                if count == limit {
                    moreComing = true
                    break
                }
                count += 1
                let id = RecordID(recordName: row[0], zoneID: zone)
                lastSequence = row[3]
                if row[4] as Bool {
                    deleted.append(id)
                } else {
                    modified.append(
                        Record(
                            id: id, recordType: row[1], changeTag: row[2],
                            fields: try Self.decodeFields(row, index: 6, id: id),
                            modifiedAt: Timestamp(millisecondsSince1970: row[5])))
                }
            }
            // At the end of the feed the token moves to the zone's sequence, so a caller that is
            // up to date keeps a token that stays valid while tombstones it already saw are purged.
            let position = moreComing ? lastSequence : max(lastSequence, zoneRow.lastSequence)
            let next = EmbeddedChangeToken(generation: zoneRow.generation, sequence: position, horizon: horizon)
            return ZoneChanges(modified: modified, deleted: deleted, token: next.changeToken, moreComing: moreComing)
        }
    }

    private static func checkToken(_ token: EmbeddedChangeToken, zone: ZoneID, zoneRow: ZoneRow) throws {
        guard token.generation == zoneRow.generation else {
            throw CloudError(
                .changeTokenExpired,
                "the change token is from before zone \(zone) was deleted and recreated; fetch the zone again from the start")
        }
        guard token.isCovered(byPurgedSequence: zoneRow.purgedSequence) else {
            throw CloudError(
                .changeTokenExpired,
                "the change token of zone \(zone) is older than the deletions the cloud still keeps; fetch the zone again from the start")
        }
        guard token.sequence <= zoneRow.lastSequence else {
            throw CloudError(
                .changeTokenExpired,
                "the change token of zone \(zone) is ahead of the cloud (was the cloud restored from a backup?); fetch the zone again from the start")
        }
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [GatewayCore.Record?] {
        try await read { db in
            var zoneKeys: [ZoneID: Int64] = [:]
            let statement = try db.cachedStatement(
                sql: """
                    SELECT record_type, change_tag, fields, modified_at FROM records
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
                    modifiedAt: Timestamp(millisecondsSince1970: row[3]))
            }
        }
    }
}
