import Foundation
import GRDB
import GatewayCore

/// A download about to be written into the store, kept in the sidecar until its state commits,
/// so a crash in between replays it. Stored in a compact binary form (fields in `FieldCoding`):
/// a page is journaled on every apply, and JSON coding of it cost more than the write itself.
struct KitJournal: Sendable {
    static let formatVersion: UInt8 = 1

    var saves: [GatewayCore.Record]
    var deletes: [KitRecordKey]
    /// What the store held of each record before the write (by name; absent: nothing).
    var before: [RecordName: String]
    var update: SyncStateUpdate
    /// Records left alone: edited in the store since the synchronizer read them.
    var skipped: [String]
    /// For each save of a record the store held, the fields the save changes: a replay that finds
    /// one of them holding the saved value knows the write landed. (Journals of an earlier
    /// release have none.)
    var changedFields: [RecordName: [String]] = [:]
    /// Whether committing the journal leaves the zone state where it was, so the page downloads
    /// again (a replay that cannot tell what became of a record). Not stored.
    var keepsZonePosition = false
    /// Where the journal is kept: its row in `journal_pages` (pages in the order they were
    /// journaled), or `nil` for the single `journal` row an earlier release wrote. Not stored.
    var sequence: Int64?

    /// What the store held of each record of the write, as ``KitStore/write(saves:deletes:expecting:)``
    /// takes it: the store's version, `nil` for none, left out where the kit knows the record
    /// only by a hash of its values.
    var expectedVersions: [String: String?] {
        var versions: [String: String?] = [:]
        for name in saves.map(\.id.recordName) + deletes.map(\.recordName) {
            switch before[RecordName(name)] {
            case nil: versions[name] = .some(nil)
            case let observed? where observed.hasPrefix("v:"): versions[name] = .some(String(observed.dropFirst(2)))
            default: break
            }
        }
        return versions
    }

    /// Keeps the journal in the state database, after any journaled before it.
    mutating func save(_ db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO journal_pages (data) VALUES (?)").execute(arguments: [encoded()])
        sequence = db.lastInsertedRowID
    }

    /// Drops the journal from the state database: its page is committed or given up.
    func remove(_ db: Database) throws { try Self.remove(sequence: sequence, db) }

    /// Drops the journal kept at `sequence` (`nil`: the single row of an earlier release).
    static func remove(sequence: Int64?, _ db: Database) throws {
        if let sequence {
            try db.cachedStatement(sql: "DELETE FROM journal_pages WHERE sequence = ?").execute(arguments: [sequence])
        } else {
            try db.execute(sql: "DELETE FROM journal")
        }
    }

    /// The journals a crash left, oldest first: an earlier release's single one, then the pages.
    static func saved(_ db: Database, zone: ZoneID, statePath: String) throws -> [KitJournal] {
        var journals: [KitJournal] = []
        if let data = try Data.fetchOne(db, sql: "SELECT data FROM journal WHERE id = 1") {
            journals.append(try decode(data, zone: zone, statePath: statePath))
        }
        for row in try Row.fetchAll(db, sql: "SELECT sequence, data FROM journal_pages ORDER BY sequence") {
            var journal = try decode(row[1], zone: zone, statePath: statePath)
            journal.sequence = row[0]
            journals.append(journal)
        }
        return journals
    }

    /// Every name the journal writes, deletes or commits state for.
    var recordNames: Set<RecordName> {
        var names = Set(saves.map(\.id.name))
        names.formUnion(deletes.map(\.name))
        names.formUnion(skipped.map { RecordName($0) })
        names.formUnion(update.recordNames)
        return names
    }

    func encoded() -> Data {
        var writer = BinaryWriter(capacity: 256 + saves.count * 160)
        writer.writeByte(Self.formatVersion)
        writer.writeVarint(UInt64(saves.count))
        for record in saves {
            writer.writeString(record.id.recordName)
            writer.writeString(record.recordType)
            writer.writeData(Data(FieldCoding.encode(record)))
        }
        writer.writeVarint(UInt64(deletes.count))
        for key in deletes {
            writer.writeString(key.recordName)
            writer.writeString(key.recordType)
        }
        writer.writeVarint(UInt64(before.count))
        for (name, observed) in before {
            writer.writeString(name.text)
            writer.writeString(observed)
        }
        writer.writeVarint(UInt64(skipped.count))
        for name in skipped { writer.writeString(name) }
        writer.writeVarint(UInt64(update.metadata.count))
        for (id, data) in update.metadata {
            writer.writeString(id.recordName)
            writer.writeData(data)
        }
        writer.writeVarint(UInt64(update.removedMetadata.count))
        for id in update.removedMetadata { writer.writeString(id.recordName) }
        writer.writeVarint(UInt64(update.settled.count))
        for (id, version) in update.settled {
            writer.writeString(id.recordName)
            writer.writeInt64(version)
        }
        writer.writeVarint(UInt64(update.failures.count))
        for (id, failure) in update.failures {
            writer.writeString(id.recordName)
            writer.writeInt64(failure.version)
            writer.writeString(failure.code)
            writer.writeString(failure.message)
        }
        writer.writeData(update.zoneState)
        writer.writeVarint(UInt64(update.sending.count))
        for id in update.sending { writer.writeString(id.recordName) }
        writer.writeVarint(UInt64(changedFields.count))
        for (name, fields) in changedFields {
            writer.writeString(name.text)
            writer.writeVarint(UInt64(fields.count))
            for field in fields { writer.writeString(field) }
        }
        return Data(writer.bytes)
    }

    static func decode(_ data: Data, zone: ZoneID, statePath: String) throws -> KitJournal {
        guard data.first == formatVersion else {
            throw KitAdapterError(
                .corruptState, "the journal of an interrupted write in \(statePath) has format \(data.first.map(String.init) ?? "none"), which this release cannot read; reset the adapter's sync state")
        }
        do {
            return try data.withUnsafeBytes { buffer throws(BinaryDecodingError) -> KitJournal in
                var reader = BinaryReader(buffer)
                // A journal of another format version cannot be decoded: the reads below fail.
                _ = try reader.readByte()
                func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: zone) }
                var saves: [GatewayCore.Record] = []
                for _ in 0..<(try reader.readLength()) {
                    let name = try reader.readString()
                    let type = try reader.readString()
                    let fields = try FieldCoding.decode([UInt8](try reader.readData()))
                    saves.append(GatewayCore.Record(id: id(name), recordType: type, fields: fields))
                }
                var deletes: [KitRecordKey] = []
                for _ in 0..<(try reader.readLength()) {
                    deletes.append(KitRecordKey(recordName: try reader.readString(), recordType: try reader.readString()))
                }
                var before: [RecordName: String] = [:]
                for _ in 0..<(try reader.readLength()) { before[RecordName(try reader.readString())] = try reader.readString() }
                var skipped: [String] = []
                for _ in 0..<(try reader.readLength()) { skipped.append(try reader.readString()) }
                var update = SyncStateUpdate(zoneState: Data())
                for _ in 0..<(try reader.readLength()) { update.metadata[id(try reader.readString())] = try reader.readData() }
                for _ in 0..<(try reader.readLength()) { update.removedMetadata.insert(id(try reader.readString())) }
                for _ in 0..<(try reader.readLength()) { update.settled[id(try reader.readString())] = try reader.readInt64() }
                for _ in 0..<(try reader.readLength()) {
                    let name = try reader.readString()
                    update.failures[id(name)] = RecordFailure(
                        version: try reader.readInt64(), code: try reader.readString(), message: try reader.readString())
                }
                update.zoneState = try reader.readData()
                for _ in 0..<(try reader.readLength()) { update.sending.insert(id(try reader.readString())) }
                var changedFields: [RecordName: [String]] = [:]
                if !reader.isAtEnd {
                    for _ in 0..<(try reader.readLength()) {
                        let name = RecordName(try reader.readString())
                        var fields: [String] = []
                        for _ in 0..<(try reader.readLength()) { fields.append(try reader.readString()) }
                        changedFields[name] = fields
                    }
                }
                return KitJournal(saves: saves, deletes: deletes, before: before, update: update, skipped: skipped, changedFields: changedFields)
            }
        } catch {
            throw KitAdapterError(
                .corruptState, "the journal of an interrupted write in \(statePath) cannot be read (\(error)); reset the adapter's sync state",
                underlying: error)
        }
    }
}

extension SyncStateUpdate {
    /// Every record the update commits state for.
    var recordNames: Set<RecordName> {
        var names = Set(metadata.keys.map(\.name))
        names.formUnion(removedMetadata.map(\.name))
        names.formUnion(settled.keys.map(\.name))
        names.formUnion(failures.keys.map(\.name))
        names.formUnion(sending.map(\.name))
        names.formUnion(stillSending.map(\.name))
        return names
    }
}

extension DownloadedChanges {
    /// Every record the page writes, deletes, checks or commits state for.
    var recordNames: Set<RecordName> {
        var names = state.recordNames
        names.formUnion(writes.map(\.id.name))
        names.formUnion(deletes.map(\.name))
        names.formUnion(expectedPendingVersions.keys.map(\.name))
        return names
    }
}
