import Foundation
import GatewayCore
import PostgresNIO
import PostgresSupport

extension PostgresCloud {
    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws
        -> [RecordOperationResult]
    {
        let prepared = try ModifyRules.prepare(operations, in: zone, limits: limits)
        let now = nowMilliseconds()
        let results = try await transaction("saving \(operations.count) records in zone \(zone)") { [tables, limits] connection in
            try await Self.apply(prepared, zone: zone, atomic: atomic, now: now, limits: limits, tables: tables, connection: connection)
        }
        await purgeIfDue()
        return results
    }

    /// What the database holds for one record when the request is decided.
    private struct Current {
        var changeTag: String?
        var isDeleted: Bool
        var recordType: String
        var fields: ByteBuffer?
        var modifiedAt: Int64
        var createdAt: Int64
    }

    /// Decides every operation first (reads only), then writes the ones that succeed in two
    /// statements, so an atomic request that fails writes nothing. The zone's row stays locked
    /// until commit, so concurrent writers of the zone take sequence numbers in commit order.
    private static func apply(
        _ prepared: [ModifyRules.Prepared], zone: ZoneID, atomic: Bool, now: Int64, limits: CloudLimits, tables: Tables, connection: PooledConnection
    ) async throws -> [RecordOperationResult] {
        let zoneRow = try await lockZone(zone, tables: tables, connection: connection)!
        // Names refused by the rules (NUL bytes, too long) never reach the database.
        let names = prepared.filter { $0.failure == nil }.map(\.recordID.recordName)
        var current: [RecordName: Current] = [:]
        // One primary-key probe per name (`PostgresCloudSchema` says why not `record_name = ANY(…)`).
        let rows = try await connection.query(
            """
            SELECT r.record_name, r.change_tag, r.deleted, r.record_type, r.fields, r.modified_at, COALESCE(r.created_at, r.modified_at)
            FROM unnest(\(names)::text[]) AS u(n) CROSS JOIN LATERAL (
                SELECT * FROM \(unescaped: tables.records)
                WHERE owner_name = \(zone.ownerName) AND zone_name = \(zone.zoneName) AND record_name = u.n LIMIT 1
            ) AS r
            """, logger: connection.logger)
        for try await (name, tag, deleted, type, fields, modifiedAt, createdAt) in rows.decode(
            (String, String?, Bool, String, ByteBuffer?, Int64, Int64).self)
        {
            current[RecordName(name)] = Current(
                changeTag: tag, isDeleted: deleted, recordType: type, fields: fields, modifiedAt: modifiedAt, createdAt: createdAt)
        }
        let storedAssets = try await assetSizes(
            Set(prepared.flatMap { $0.operation.record?.assetReferences.map(\.checksum) ?? [] }), tables: tables, connection: connection)

        var prepared = prepared
        let (decisions, failures) = try ModifyRules.decideAll(&prepared, limits: limits) { id in
            guard let row = current[id.name] else { return nil }
            return ModifyRules.Stored(state: .init(changeTag: row.changeTag, isDeleted: row.isDeleted)) { try record(from: row, id: id) }
        } missingAsset: { record in
            record.assetReferences.first { storedAssets[$0.checksum] != $0.size }
        }

        let allFailures = ModifyRules.failedResults(ids: prepared.map(\.recordID), failures: failures, atomic: atomic)
        let tagSuffix = SequenceChangeToken.tagSuffix(generation: zoneRow.generation)
        // Records the lookup did not find are inserted without `ON CONFLICT` (see ``writeSaved``).
        var inserted = SavedRows()
        var replacing = SavedRows()
        var deleted = (names: [String](), sequences: [Int64]())
        let (results, sequence) = ModifyRules.outcomes(
            of: prepared, failures: allFailures, decisions: decisions, lastSequence: zoneRow.lastSequence, tagSuffix: tagSuffix, now: now,
            storedCreatedAt: { id in current[id.name].flatMap { $0.isDeleted ? nil : $0.createdAt } },
            save: { item, record, sequence in
                if current[item.recordID.name] == nil {
                    inserted.append(item, record, sequence: sequence)
                } else {
                    replacing.append(item, record, sequence: sequence)
                }
            },
            delete: { id, sequence in
                deleted.names.append(id.recordName)
                deleted.sequences.append(sequence)
            })
        try await writeSaved(inserted, replacing: false, zone: zone, now: now, tables: tables, connection: connection)
        try await writeSaved(replacing, replacing: true, zone: zone, now: now, tables: tables, connection: connection)
        if !deleted.names.isEmpty {
            try await connection.query(
                """
                UPDATE \(unescaped: tables.records) AS r
                SET change_tag = NULL, seq = u.q, deleted = true, modified_at = \(now), fields = NULL
                FROM unnest(\(deleted.names)::text[], \(deleted.sequences)::int8[]) AS u(n, q)
                WHERE r.owner_name = \(zone.ownerName) AND r.zone_name = \(zone.zoneName) AND r.record_name = u.n
                """, logger: connection.logger)
        }
        if sequence != zoneRow.lastSequence {
            try await connection.query(
                """
                UPDATE \(unescaped: tables.zones) SET last_seq = \(sequence)
                WHERE owner_name = \(zone.ownerName) AND zone_name = \(zone.zoneName)
                """, logger: connection.logger)
            try await notify(zone, tables: tables, connection: connection)
        }
        return results
    }

    /// The records a request saves, a column each, for `unnest`.
    private struct SavedRows {
        var names: [String] = []
        var types: [String] = []
        var tags: [String] = []
        var sequences: [Int64] = []
        var fields: [ByteBuffer] = []

        mutating func append(_ item: ModifyRules.Prepared, _ record: Record, sequence: Int64) {
            names.append(item.recordID.recordName)
            types.append(record.recordType)
            tags.append(record.changeTag!)
            sequences.append(sequence)
            fields.append(ByteBuffer(bytes: item.encodedFields!))
        }
    }

    /// Writes saved records. Those the cloud held (`replacing`: live or a tombstone) are upserted;
    /// the others are inserted plainly, since the zone's lock keeps every other writer of the zone
    /// out until commit, so none can have appeared since the lookup (the upsert's speculative
    /// insertion cost 60% more per row; should a row appear, the insert fails on the primary key).
    private static func writeSaved(
        _ rows: SavedRows, replacing: Bool, zone: ZoneID, now: Int64, tables: Tables, connection: PooledConnection
    ) async throws {
        guard !rows.names.isEmpty else { return }
        let upsert = """
            ON CONFLICT (owner_name, zone_name, record_name) DO UPDATE SET
                record_type = excluded.record_type, change_tag = excluded.change_tag, seq = excluded.seq,
                deleted = false, modified_at = excluded.modified_at, fields = excluded.fields,
                created_at = CASE WHEN r.deleted THEN excluded.created_at ELSE COALESCE(r.created_at, r.modified_at) END
            """
        try await connection.query(
            """
            INSERT INTO \(unescaped: tables.records) AS r
                (owner_name, zone_name, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at)
            SELECT \(zone.ownerName), \(zone.zoneName), u.n, u.t, u.c, u.q, false, \(now), u.f, \(now)
            FROM unnest(\(rows.names)::text[], \(rows.types)::text[], \(rows.tags)::text[], \(rows.sequences)::int8[], \(rows.fields)::bytea[])
                AS u(n, t, c, q, f)
            \(unescaped: replacing ? upsert : "")
            """, logger: connection.logger)
    }

    /// The stored size of each asset in `checksums` that the cloud holds.
    private static func assetSizes(_ checksums: Set<String>, tables: Tables, connection: PooledConnection) async throws -> [String: Int64] {
        guard !checksums.isEmpty else { return [:] }
        let rows = try await connection.query(
            "SELECT checksum, size FROM \(unescaped: tables.assets) WHERE checksum = ANY(\(Array(checksums)))", logger: connection.logger)
        var sizes: [String: Int64] = [:]
        for try await (checksum, size) in rows.decode((String, Int64).self) { sizes[checksum] = size }
        return sizes
    }

    private static func record(from row: Current, id: RecordID) throws -> Record? {
        guard !row.isDeleted else { return nil }
        return Record(
            id: id, recordType: row.recordType, changeTag: row.changeTag, fields: try decodeFields(row.fields, id: id),
            modifiedAt: Timestamp(millisecondsSince1970: row.modifiedAt), createdAt: Timestamp(millisecondsSince1970: row.createdAt))
    }

    /// Decodes stored fields by position, in a layout shared with earlier records of the same shape.
    static func decodeValues(_ buffer: ByteBuffer?, id: RecordID, layouts: inout DecodedLayouts) throws -> (RecordLayout, [FieldValue?]) {
        guard let buffer else { return (.empty, []) }
        do {
            return try buffer.withUnsafeReadableBytes { bytes in
                try Result { () throws(BinaryDecodingError) in try FieldCoding.decode(bytes, layouts: &layouts) }.get()
            }
        } catch {
            throw CloudError(.internalError, "the stored fields of record \(id) are corrupt: \(error)", recordID: id, underlying: error)
        }
    }

    static func decodeFields(_ buffer: ByteBuffer?, id: RecordID) throws -> [String: FieldValue] {
        guard let buffer else { return [:] }
        do {
            return try buffer.withUnsafeReadableBytes { bytes in
                try Result { () throws(BinaryDecodingError) in try FieldCoding.decode(bytes) }.get()
            }
        } catch {
            throw CloudError(.internalError, "the stored fields of record \(id) are corrupt: \(error)", recordID: id, underlying: error)
        }
    }
}
