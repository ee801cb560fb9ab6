import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

extension EmbeddedCloud {
    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws
        -> [RecordOperationResult]
    {
        let prepared = try ModifyRules.prepare(operations, in: zone, limits: limits)
        let now = nowMilliseconds()
        let limits = limits
        let results: [RecordOperationResult]
        if Self.createsOnly(prepared), let created = try await writeUnlessNil({ db in try Self.create(prepared, zone: zone, now: now, limits: limits, db: db) }) {
            results = created
        } else {
            results = try await write { db in
                try Self.apply(prepared, zone: zone, atomic: atomic, now: now, limits: limits, db: db)
            }
        }
        await purgeIfDue()
        return results
    }

    /// Whether every operation of the request is a valid create: the request of a first upload,
    /// which ``create(_:zone:now:db:)`` tries without reading the records first.
    private static func createsOnly(_ prepared: [ModifyRules.Prepared]) -> Bool {
        prepared.indices.allSatisfy { index in
            guard prepared[index].failure == nil, case .create = prepared[index].operation else { return false }
            return true
        }
    }

    /// Creates the request's records, assuming none exists: each is a plain insert, and the
    /// unique index on (zone, record name) finds a record that does (live, or a tombstone).
    /// Returns `nil` then, or when a record names an asset the cloud does not hold, and the
    /// caller rolls back and decides the request the usual way
    /// (``apply(_:zone:atomic:now:db:)``), which reads every record first. Skipping that read,
    /// one lookup per record, is most of what this saves.
    private static func create(
        _ prepared: [ModifyRules.Prepared], zone: ZoneID, now: Int64, limits: CloudLimits, db: Database
    ) throws -> [RecordOperationResult]? {
        let zoneRow = try zoneRow(db, zone)
        var prepared = prepared
        let (decisions, failures) = try ModifyRules.decideAll(&prepared, limits: limits) { _ in nil } missingAsset: { record in
            try missingAsset(in: record, db: db)
        }
        guard failures.isEmpty else { return nil }
        // 50 records to a statement (`ManyRowStatement`).
        var inserter = try ManyRowStatement(db, argumentsPerRow: 7, sql: insertSQL)
        do {
            let (results, sequence) = try ModifyRules.outcomes(
                of: prepared, failures: [:], decisions: decisions, lastSequence: zoneRow.lastSequence,
                tagSuffix: SequenceChangeToken.tagSuffix(generation: zoneRow.generation), now: now, storedCreatedAt: { _ in nil },
                save: { item, record, sequence in
                    try inserter.add(saveArguments(item, record, sequence: sequence, zoneKey: zoneRow.key, now: now))
                },
                delete: { _, _ in preconditionFailure("a request of creates deletes nothing") })
            try inserter.finish()
            try setLastSequence(sequence, zoneKey: zoneRow.key, db: db)
            return results
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            return nil
        }
    }

    /// Writes a saved record with ``insertStatement(_:)`` or the update of
    /// ``apply(_:zone:atomic:now:db:)``, which take the same arguments.
    private static func save(
        _ item: ModifyRules.Prepared, _ record: Record, sequence: Int64, zoneKey: Int64, now: Int64, with statement: BoundStatement
    ) throws {
        try statement.execute(saveArguments(item, record, sequence: sequence, zoneKey: zoneKey, now: now))
    }

    /// The seven arguments of ``insertSQL(_:)`` and of the update, in order.
    private static func saveArguments(
        _ item: ModifyRules.Prepared, _ record: Record, sequence: Int64, zoneKey: Int64, now: Int64
    ) -> [BindableValue] {
        [
            .integer(zoneKey), .text(item.recordID.recordName), .text(record.recordType), .text(record.changeTag!),
            .integer(sequence), .integer(now), .bytes(item.encodedFields!),
        ]
    }

    /// Records the zone's last sequence number after a request's writes.
    private static func setLastSequence(_ sequence: Int64, zoneKey: Int64, db: Database) throws {
        try db.cachedStatement(sql: "UPDATE zones SET last_seq = ? WHERE zone_key = ?").execute(arguments: [sequence, zoneKey])
    }

    private static func insertStatement(_ db: Database) throws -> BoundStatement {
        BoundStatement(try db.cachedStatement(sql: insertSQL([(1...7).map { "?" + String($0) }])))
    }

    /// An insert of records, each row given as the names of its seven parameters
    /// (``saveArguments(_:_:sequence:zoneKey:now:)``); a new record is created when modified.
    private static func insertSQL(_ rows: [[String]]) -> String {
        let values = rows.map { (p: [String]) -> String in
            "(" + [p[0], p[1], p[2], p[3], p[4], "0", p[5], p[6], p[5]].joined(separator: ", ") + ")"
        }
        return "INSERT INTO records (zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at) VALUES "
            + values.joined(separator: ", ")
    }

    /// Decides every operation first (reads only), then writes the ones that succeed, so an
    /// atomic request that fails writes nothing.
    private static func apply(
        _ prepared: [ModifyRules.Prepared], zone: ZoneID, atomic: Bool, now: Int64, limits: CloudLimits, db: Database
    ) throws -> [RecordOperationResult] {
        let zoneRow = try zoneRow(db, zone)
        // What the cloud holds of the request's records, in one query rather than one per record.
        var current: [RecordName: Row] = [:]
        // By index: iterating the prepared operations would copy each one (its record and
        // encoded fields) to read one name.
        var names: [String] = []
        names.reserveCapacity(prepared.count)
        for index in prepared.indices where prepared[index].failure == nil {
            names.append(prepared[index].recordID.recordName)
        }
        if !names.isEmpty {
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT change_tag, deleted, record_type, fields, modified_at, record_name, COALESCE(created_at, modified_at)
                        FROM records
                        WHERE zone_key = ? AND record_name IN (SELECT value FROM json_each(?))
                        """),
                arguments: [zoneRow.key, JSONArrayText.of(names)])
            while let row = try rows.next() { current[RecordName(row[5])] = row.copy() }
        }
        var prepared = prepared
        let (decisions, failures) = try ModifyRules.decideAll(&prepared, limits: limits) { id in
            guard let row = current[id.name] else { return nil }
            return ModifyRules.Stored(state: .init(changeTag: row[0], isDeleted: row[1], recordType: row[2])) { try record(fromCurrentRow: row, id: id) }
        } missingAsset: { record in
            try missingAsset(in: record, db: db)
        }

        let allFailures = ModifyRules.failedResults(ids: prepared.map(\.recordID), failures: failures, atomic: atomic)
        let tagSuffix = SequenceChangeToken.tagSuffix(generation: zoneRow.generation)
        // The request's records were read above, so each save is a plain insert or an update.
        let insert = try insertStatement(db)
        let update = BoundStatement(
            try db.cachedStatement(
                sql: """
                    UPDATE records SET record_type = ?3, change_tag = ?4, seq = ?5, deleted = 0, modified_at = ?6, fields = ?7,
                        created_at = CASE WHEN deleted = 1 THEN ?6 ELSE COALESCE(created_at, modified_at) END
                    WHERE zone_key = ?1 AND record_name = ?2
                    """))
        let tombstone = try db.cachedStatement(
            sql: """
                UPDATE records SET change_tag = NULL, seq = ?, deleted = 1, modified_at = ?, fields = NULL
                WHERE zone_key = ? AND record_name = ?
                """)
        let (results, sequence) = try ModifyRules.outcomes(
            of: prepared, failures: allFailures, decisions: decisions, lastSequence: zoneRow.lastSequence, tagSuffix: tagSuffix, now: now,
            storedCreatedAt: { id in current[id.name].flatMap { row in row[1] as Bool ? nil : row[6] as Int64 } },
            save: { item, record, sequence in
                try save(item, record, sequence: sequence, zoneKey: zoneRow.key, now: now, with: current[item.recordID.name] == nil ? insert : update)
            },
            delete: { id, sequence in try tombstone.execute(arguments: [sequence, now, zoneRow.key, id.recordName]) })
        if sequence != zoneRow.lastSequence {
            try setLastSequence(sequence, zoneKey: zoneRow.key, db: db)
        }
        return results
    }

    private static func missingAsset(in record: Record, db: Database) throws -> AssetReference? {
        let references = record.assetReferences
        guard !references.isEmpty else { return nil }
        let statement = try db.cachedStatement(sql: "SELECT size FROM assets WHERE checksum = ?")
        for reference in references {
            let size = try Int64.fetchOne(statement, arguments: [reference.checksum])
            if size != reference.size { return reference }
        }
        return nil
    }

    /// Decodes a live row selected as (change_tag, deleted, record_type, fields, modified_at,
    /// record_name, created_at).
    private static func record(fromCurrentRow row: Row, id: RecordID) throws -> Record? {
        let deleted: Bool = row[1]
        guard !deleted else { return nil }
        return Record(
            id: id, recordType: row[2], changeTag: row[0], fields: try decodeFields(row, index: 3, id: id),
            modifiedAt: Timestamp(millisecondsSince1970: row[4]), createdAt: Timestamp(millisecondsSince1970: row[6]))
    }

    static func decodeFields(_ row: Row, index: Int, id: RecordID) throws -> [String: FieldValue] {
        try row.withUnsafeData(atIndex: index) { data in
            guard let data else { return [:] }
            return try data.withUnsafeBytes { try decodeFields($0, id: id) }
        }
    }

    /// Decodes a record's stored fields by position, in a layout shared with the records before
    /// it of the same shape (`nil`: none stored).
    static func decodeValues(_ buffer: UnsafeRawBufferPointer?, id: RecordID, layouts: inout DecodedLayouts) throws
        -> (RecordLayout, [FieldValue?])
    {
        guard let buffer else { return (.empty, []) }
        do {
            return try Result { () throws(BinaryDecodingError) in try FieldCoding.decode(buffer, layouts: &layouts) }.get()
        } catch {
            throw CloudError(.internalError, "the stored fields of record \(id) are corrupt: \(error)", recordID: id, underlying: error)
        }
    }

    /// Decodes a record's stored fields (`nil`: none stored).
    static func decodeFields(_ buffer: UnsafeRawBufferPointer?, id: RecordID) throws -> [String: FieldValue] {
        guard let buffer else { return [:] }
        do {
            return try Result { () throws(BinaryDecodingError) in try FieldCoding.decode(buffer) }.get()
        } catch {
            throw CloudError(
                .internalError, "the stored fields of record \(id) are corrupt: \(error)", recordID: id,
                underlying: error)
        }
    }
}
