import GRDB
import GatewayCore

/// Turns what the store showed into change-log entries: a record whose version or values differ
/// from what the kit last saw is a local save; one that is gone is a local delete.
enum KitListingRecorder {
    /// - Returns: whether the listing showed a change (a save or a delete was logged).
    @discardableResult
    static func record(_ listing: KitListing, db: Database) throws -> Bool {
        var changed = false
        // Names by bytes, as the store and the state database tell them apart (see RecordName).
        var known: [RecordName: (type: String, observed: String)] = [:]
        if listing.isComplete {
            for row in try Row.fetchAll(db, sql: "SELECT record_name, record_type, observed FROM records") {
                known[RecordName(row[0])] = (row[1], row[2])
            }
        }
        let problemNames = Set(listing.problems.map { $0.name })
        var seen = Set<RecordName>()
        for entry in listing.entries where !problemNames.contains(entry.key.name) {
            if entry.rolledBack { try forgetMetadata(of: entry.key.recordName, db: db) }
            guard let observed = KitRecordObservation.observed(entry) else { continue }
            let name = entry.key.recordName
            seen.insert(RecordName(name))
            let previous = listing.isComplete ? known[RecordName(name)] : try row(name, db: db)
            if previous?.observed != observed || previous?.type != entry.key.recordType {
                try save(name, type: entry.key.recordType, observed: observed, db: db)
                changed = true
            }
        }
        if listing.isComplete {
            try db.execute(sql: "DELETE FROM problems")
            for name in known.keys where !seen.contains(name) && !problemNames.contains(name) {
                try remove(name.text, db: db)
                changed = true
            }
        } else {
            for name in seen.map(\.text) + listing.deleted {
                try db.cachedStatement(sql: "DELETE FROM problems WHERE record_name = ?").execute(arguments: [name])
            }
            for name in listing.deleted where try row(name, db: db) != nil {
                try remove(name, db: db)
                changed = true
            }
        }
        for problem in listing.problems {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO problems (record_name, code, message) VALUES (?, ?, ?)")
                .execute(arguments: [problem.recordName, problem.code, problem.message])
        }
        if let cursor = listing.cursor {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO cursor (id, value) VALUES (1, ?)").execute(arguments: [cursor])
        } else {
            try db.execute(sql: "DELETE FROM cursor")
        }
        return changed
    }

    /// Compares the store's current form of `keys` (the records it holds among them are
    /// `current`) with what the kit saw, logging a change for each difference.
    /// - Returns: what the store held of each key before the coming write (absent: nothing).
    static func notice(_ current: [KitEntry], keys: [KitRecordKey], db: Database) throws -> [RecordName: String] {
        var held: [RecordName: KitEntry] = [:]
        for entry in current { held[entry.key.name] = entry }
        // What the kit saw of the page's records, in one query rather than one per record.
        var seen: [RecordName: String] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT r.record_name, r.observed FROM json_each(?) n JOIN records r ON r.record_name = n.value"),
            arguments: [KitStateDatabase.jsonArray(keys.map(\.recordName))])
        while let row = try rows.next() { seen[RecordName(row[0])] = row[1] }
        var before: [RecordName: String] = [:]
        for key in keys {
            let name = key.name
            let previous = seen[name]
            if let entry = held[name], entry.rolledBack { try forgetMetadata(of: key.recordName, db: db) }
            if let entry = held[name], let observed = KitRecordObservation.observed(entry) {
                before[name] = observed
                if previous != observed { try save(key.recordName, type: entry.key.recordType, observed: observed, db: db) }
            } else if previous != nil {
                try remove(key.recordName, db: db)
            }
        }
        return before
    }

    /// A record that went back to an older copy has no common ancestor with the cloud any more.
    private static func forgetMetadata(of name: String, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM metadata WHERE record_name = ?").execute(arguments: [name])
    }

    private static func row(_ name: String, db: Database) throws -> (type: String, observed: String)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT record_type, observed FROM records WHERE record_name = ?"), arguments: [name]).map { ($0[0], $0[1]) }
    }

    private static func save(_ name: String, type: String, observed: String, db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed) VALUES (?, ?, ?)").execute(arguments: [name, type, observed])
        try KitStateDatabase.logChange(name, recordType: type, db: db)
    }

    private static func remove(_ name: String, db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM records WHERE record_name = ?").execute(arguments: [name])
        try KitStateDatabase.logChange(name, recordType: nil, db: db)
    }
}
