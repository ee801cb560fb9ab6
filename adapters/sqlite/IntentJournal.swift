import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// Upload intents kept aside in `_gateway_intents`, one row per batch, instead of one metadata
/// upsert per record (see ``SyncStateUpdate/sending``).
///
/// An intent matters only if the cloud's answer to its batch is lost, and in the usual course the
/// next update writes the batch's outcome over it. So the batch's intents go in as one blob; the
/// outcome's transaction drops the entries it answers and writes the rest (records the cloud did
/// not save) into `_gateway_records`. Any other write transaction first writes every entry there,
/// and the reads that do not run such a transaction look the entries up (``entries(_:wanted:)``), so
/// nothing reads metadata older than an intent committed before it.
enum IntentJournal {
    static let createTableSQL = """
        CREATE TABLE IF NOT EXISTS "_gateway_intents" (
            batch INTEGER PRIMARY KEY,
            intents BLOB NOT NULL
        );
        """

    /// The journaled intents of the records `wanted` accepts, by record name compared by bytes
    /// (a later batch's entry wins). Only their metadata is copied out.
    static func entries(_ db: Database, wanted: (String) -> Bool = { _ in true }) throws -> [RecordName: Data] {
        guard try isEmpty(db) == false else { return [:] }
        return try allEntries(db, wanted: wanted)
    }

    private static func isEmpty(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: #"SELECT EXISTS (SELECT 1 FROM "_gateway_intents")"#)) != true
    }

    private static func allEntries(_ db: Database, wanted: (String) -> Bool) throws -> [RecordName: Data] {
        var entries: [RecordName: Data] = [:]
        let statement = BoundStatement(try db.cachedStatement(sql: #"SELECT intents FROM "_gateway_intents" ORDER BY batch"#))
        try statement.forEachRow([]) { row in try readEntries(row, at: 0, wanted: wanted, into: &entries) }
        return entries
    }

    /// Adds the entries of one journal row that `wanted` accepts to `entries` (a later one wins).
    private static func readEntries(
        _ row: StatementRow, at column: Int, wanted: (String) -> Bool, into entries: inout [RecordName: Data]
    ) throws {
        do {
            try row.withUnsafeBytes(at: column) { buffer in try scan(buffer, wanted: wanted, into: &entries) }
        } catch {
            throw corrupt(error)
        }
    }

    private static func corrupt(_ error: any Error) -> SQLiteAdapterError {
        SQLiteAdapterError(
            .databaseFailed,
            "the upload journal \"_gateway_intents\" is corrupt (\(error)); restore the database from a backup, or delete the journal's rows and run `gateway sync`",
            underlying: error)
    }

    /// Calls `body` with the name of every entry of one journal row.
    private static func readNames(_ row: StatementRow, at column: Int, _ body: (String) -> Void) throws {
        do {
            try row.withUnsafeBytes(at: column) { buffer in try scanNames(buffer, body) }
        } catch {
            throw corrupt(error)
        }
    }

    private static func scanNames(_ buffer: UnsafeRawBufferPointer?, _ body: (String) -> Void) throws(BinaryDecodingError) {
        guard let buffer else { return }
        var reader = BinaryReader(buffer)
        while !reader.isAtEnd {
            body(try reader.readString())
            try reader.skipLengthPrefixed()
        }
    }

    private static func scan(
        _ buffer: UnsafeRawBufferPointer?, wanted: (String) -> Bool, into entries: inout [RecordName: Data]
    ) throws(BinaryDecodingError) {
        guard let buffer else { return }
        var reader = BinaryReader(buffer)
        while !reader.isAtEnd {
            let name = try reader.readString()
            if wanted(name) { entries[RecordName(name)] = try reader.readData() } else { try reader.skipLengthPrefixed() }
        }
    }

    /// Removes every journaled intent and returns those that no later metadata replaces, for the
    /// caller to write into `_gateway_records`; those `kept` (a batch still being sent) stay
    /// journaled: a row holding only such intents stays as it is (the usual case: the batch in
    /// flight has a row of its own), the others are journaled again as one row.
    static func take(
        _ db: Database, unlessReplacedBy replaced: (String) -> Bool, keeping kept: (String) -> Bool = { _ in false }
    ) throws -> [(name: String, metadata: Data)] {
        guard try isEmpty(db) == false else { return [] }
        var left: [RecordName: Data] = [:]
        var journaled: [RecordName: Data] = [:]
        var spent: [Int64] = []
        let statement = BoundStatement(try db.cachedStatement(sql: #"SELECT batch, intents FROM "_gateway_intents" ORDER BY batch"#))
        try statement.forEachRow([]) { row in
            // The names first: a row is usually all kept (the batch in flight) or all replaced
            // (the batch this update answers), and then no intent is copied out of it.
            var onlyKept = true
            var anyUnreplaced = false
            var names = 0
            try readNames(row, at: 1) { name in
                names += 1
                if replaced(name) {
                    onlyKept = false
                } else {
                    anyUnreplaced = true
                    if !kept(name) { onlyKept = false }
                }
            }
            guard !onlyKept || names == 0 else { return }
            spent.append(row.int64(at: 0))
            guard anyUnreplaced else { return }
            var entries: [RecordName: Data] = [:]
            try readEntries(row, at: 1, wanted: { !replaced($0) }, into: &entries)
            for (name, metadata) in entries {
                if kept(name.text) { journaled[name] = metadata } else { left[name] = metadata }
            }
        }
        let delete = BoundStatement(try db.cachedStatement(sql: #"DELETE FROM "_gateway_intents" WHERE batch = ?"#))
        for batch in spent { try delete.execute(.integer(batch)) }
        try append(journaled.lazy.map { (name: $0.key.text, metadata: $0.value) }, db: db)
        return left.map { (name: $0.key.text, metadata: $0.value) }
    }

    /// Journals a batch's intents as one row.
    static func append(_ intents: some Sequence<(name: String, metadata: Data)>, db: Database) throws {
        var writer = BinaryWriter(capacity: 16_384)
        var count = 0
        for (name, metadata) in intents {
            writer.writeString(name)
            writer.writeData(metadata)
            count += 1
        }
        guard count > 0 else { return }
        try BoundStatement(try db.cachedStatement(sql: #"INSERT INTO "_gateway_intents" (intents) VALUES (?)"#))
            .execute(.bytes(writer.bytes))
    }
}
