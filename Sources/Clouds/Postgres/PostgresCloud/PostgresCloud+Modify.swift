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

    /// Decides every operation first (reads only), then writes the ones that succeed in one
    /// statement (``ZoneWrites``), so an atomic request that fails writes nothing. The zone's row
    /// stays locked until commit, so concurrent writers of the zone take sequence numbers in
    /// commit order.
    private static func apply(
        _ prepared: [ModifyRules.Prepared], zone: ZoneID, atomic: Bool, now: Int64, limits: CloudLimits, tables: Tables, connection: PooledConnection
    ) async throws -> [RecordOperationResult] {
        let zoneRow = try await lockZone(zone, tables: tables, connection: connection)!
        // Names refused by the rules (NUL bytes, too long) never reach the database. By index,
        // here and below: iterating or mapping copied every operation and its record once more.
        var names: [String] = []
        var checksums = Set<String>()
        names.reserveCapacity(prepared.count)
        for index in prepared.indices where prepared[index].failure == nil {
            names.append(prepared[index].operation.recordID.recordName)
            for asset in prepared[index].operation.record?.assetReferences ?? [] { checksums.insert(asset.checksum) }
        }
        var current: [RecordName: Current] = [:]
        // One primary-key probe per name (`PostgresCloudSchema` says why not `record_name = ANY(…)`).
        let rows = try await connection.query(
            """
            SELECT r.record_name, r.change_tag, r.deleted, r.record_type, r.fields, r.modified_at, COALESCE(r.created_at, r.modified_at)
            FROM unnest(\(names)::text[]) AS u(n) CROSS JOIN LATERAL (
                SELECT * FROM \(unescaped: tables.records)
                WHERE zone_key = \(zoneRow.key) AND record_name = u.n LIMIT 1
            ) AS r
            """, logger: connection.logger)
        for try await (name, tag, deleted, type, fields, modifiedAt, createdAt) in rows.decode(
            (String, String?, Bool, String, ByteBuffer?, Int64, Int64).self)
        {
            current[RecordName(name)] = Current(
                changeTag: tag, isDeleted: deleted, recordType: type, fields: fields, modifiedAt: modifiedAt, createdAt: createdAt)
        }
        let storedAssets = try await assetSizes(checksums, tables: tables, connection: connection)

        var prepared = prepared
        let (decisions, failures) = try ModifyRules.decideAll(&prepared, limits: limits) { id in
            guard let row = current[id.name] else { return nil }
            return ModifyRules.Stored(state: .init(changeTag: row.changeTag, isDeleted: row.isDeleted, recordType: row.recordType)) { try record(from: row, id: id) }
        } missingAsset: { record in
            record.assetReferences.first { storedAssets[$0.checksum] != $0.size }
        }

        let allFailures = ModifyRules.failedResults(ids: prepared.map(\.recordID), failures: failures, atomic: atomic)
        let tagSuffix = SequenceChangeToken.tagSuffix(generation: zoneRow.generation)
        var writes = ZoneWrites()
        let (results, sequence) = ModifyRules.outcomes(
            of: prepared, failures: allFailures, decisions: decisions, lastSequence: zoneRow.lastSequence, tagSuffix: tagSuffix, now: now,
            storedCreatedAt: { id in current[id.name].flatMap { $0.isDeleted ? nil : $0.createdAt } },
            save: { item, record, sequence in
                if current[item.recordID.name] == nil {
                    writes.inserted.append(item, record, sequence: sequence)
                } else {
                    writes.replacing.append(item, record, sequence: sequence)
                }
            },
            delete: { id, sequence in
                writes.deleted.names.append(id.recordName)
                writes.deleted.sequences.append(sequence)
            })
        if sequence != zoneRow.lastSequence {
            try await connection.query(
                writes.statement(zone: zone, key: zoneRow.key, lastSequence: sequence, now: now, tables: tables), logger: connection.logger)
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

        var isEmpty: Bool { names.isEmpty }

        mutating func append(_ item: ModifyRules.Prepared, _ record: Record, sequence: Int64) {
            names.append(item.recordID.recordName)
            types.append(record.recordType)
            tags.append(record.changeTag!)
            sequences.append(sequence)
            fields.append(ByteBuffer(bytes: item.encodedFields!))
        }
    }

    /// What a request writes to one zone: its saves, split by whether the cloud held the record
    /// (`replacing`: live or a tombstone), and its deletes.
    private struct ZoneWrites {
        var inserted = SavedRows()
        var replacing = SavedRows()
        var deleted = (names: [String](), sequences: [Int64]())

        /// One statement that writes the records, moves the zone's sequence to `lastSequence` and
        /// signals listeners (delivered at commit): a single round trip while the zone is locked,
        /// where three to five statements took one each. The request names each record once, so
        /// no two parts touch the same row.
        ///
        /// Records the cloud did not hold are inserted without `ON CONFLICT`: every writer of a
        /// zone's records holds the zone's lock, so none can have appeared since the lookup (the
        /// upsert's speculative insertion cost 60% more per row; should a row appear, the
        /// statement fails on the primary key and the request with it).
        func statement(zone: ZoneID, key: Int64, lastSequence: Int64, now: Int64, tables: Tables) -> PostgresQuery {
            var binds = PostgresBindings()
            func bind<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
                binds.append(value)
                return "$\(binds.count)"
            }
            let zoneKey = bind(key)
            let at = bind(now)
            func insert(_ rows: SavedRows, upserting: Bool) -> String {
                """
                INSERT INTO \(tables.records) AS r
                    (zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at)
                SELECT \(zoneKey), u.n, u.t, u.c, u.q, false, \(at), u.f, \(at)
                FROM unnest(\(bind(rows.names))::text[], \(bind(rows.types))::text[], \(bind(rows.tags))::text[],
                    \(bind(rows.sequences))::int8[], \(bind(rows.fields))::bytea[]) AS u(n, t, c, q, f)
                \(upserting ? Self.upsert : "")
                """
            }
            var parts: [String] = []
            if !inserted.isEmpty { parts.append("inserted AS (\(insert(inserted, upserting: false)))") }
            if !replacing.isEmpty { parts.append("replaced AS (\(insert(replacing, upserting: true)))") }
            if !deleted.names.isEmpty {
                parts.append(
                    """
                    deleted AS (
                        UPDATE \(tables.records) AS r
                        SET change_tag = NULL, seq = u.q, deleted = true, modified_at = \(at), fields = NULL
                        FROM unnest(\(bind(deleted.names))::text[], \(bind(deleted.sequences))::int8[]) AS u(n, q)
                        WHERE r.zone_key = \(zoneKey) AND r.record_name = u.n)
                    """)
            }
            parts.append(
                "moved AS (UPDATE \(tables.zones) SET last_seq = \(bind(lastSequence)) WHERE zone_key = \(zoneKey))")
            let signal = "SELECT pg_notify(\(bind(tables.channel)), \(bind(PostgresCloud.signalKey(zone))))"
            return PostgresQuery(unsafeSQL: "WITH " + parts.joined(separator: ",\n") + "\n" + signal, binds: binds)
        }

        private static let upsert = """
            ON CONFLICT (zone_key, record_name) DO UPDATE SET
                record_type = excluded.record_type, change_tag = excluded.change_tag, seq = excluded.seq,
                deleted = false, modified_at = excluded.modified_at, fields = excluded.fields,
                created_at = CASE WHEN r.deleted THEN excluded.created_at ELSE COALESCE(r.created_at, r.modified_at) END
            """
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
