import Foundation
import GatewayCore

/// The rules of the ``KitStore`` contract that the adapter conformance suite cannot reach through
/// the kit, which is careful never to need them in an ordinary sync: they matter after a crash,
/// a restore or a schema change. `gateway check-adapter` checks each on a new, empty scratch
/// store of a plugin or a JSON folder, so a store that breaks one fails with the rule's name.
public enum KitStoreContract {
    /// One rule, checked on a new, empty store holding records of type `Note`.
    public struct Rule: Sendable, CustomStringConvertible {
        /// What the store must do, as `docs/writing-adapters.md` states it.
        public let name: String
        let check: @Sendable (any KitStore, ZoneID) async throws -> Void

        /// Checks the rule on `store`, which syncs `zone`.
        /// - Throws: ``KitStoreContractViolation`` naming what the store did instead, or the
        ///   store's own error.
        public func check(_ store: any KitStore, zone: ZoneID) async throws {
            try await check(store, zone)
        }

        public var description: String { name }
    }

    /// Every rule.
    public static let rules: [Rule] = [
        Rule(name: "deleting a record the store does not hold succeeds") { store, _ in
            // A gateway that crashed after the store deleted a record sends the delete again.
            _ = try await store.write(saves: [], deletes: [KitRecordKey(recordName: "never-written", recordType: "Note")])
        },
        Rule(name: "a save replaces the whole record: a field it leaves out is no longer held") { store, zone in
            let first = note("replaced", zone: zone, ["title": .string("first"), "rank": .int64(1)])
            _ = try await store.write(saves: [first], deletes: [])
            _ = try await store.write(saves: [note("replaced", zone: zone, ["title": .string("second")])], deletes: [])
            let held = try await readBack(["replaced"], from: store)["replaced"]
            try require(held?["title"] == .string("second"), "the saved title came back as \(describe(held?["title"]))")
            try require(held?["rank"] == nil, "a field the save left out is still held (\(describe(held?["rank"]))): saves were merged into the old record")
        },
        Rule(name: "every field type comes back as written, whole doubles included") { store, zone in
            let fields: [String: FieldValue] = [
                "title": .string("typed"), "rank": .int64(7), "score": .double(5), "ratio": .double(0.25),
                "when": .timestamp(Timestamp(millisecondsSince1970: 1_767_323_045_678)), "blob": .bytes(Data([0, 1, 254, 255])),
                "tags": .list([.string("a"), .string("b")]),
            ]
            _ = try await store.write(saves: [note("typed", zone: zone, fields)], deletes: [])
            let held = try await readBack(["typed"], from: store)["typed"]
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                try require(
                    held?[name] == value,
                    "field \(name) was written as \(describe(value)) and came back as \(describe(held?[name]))"
                        + (name == "score" ? " (a whole double travels as {\"value\": 5, \"type\": \"DOUBLE\"}: keep its type)" : ""))
            }
        },
        Rule(name: "records with missing fields, mixed types and look-alike values in one write come back as written") { store, zone in
            // One message with rows that leave fields out (null cells in a table), a record whose
            // field has another type than the same field of the others (sent in the row form beside
            // the tables), and values a store's own encoding could mistake: an empty string, a
            // string shaped like a typed field, a reference, a location, a list of integers.
            let other = RecordID(recordName: "other", zoneID: zone)
            let records = [
                note("mixed-full", zone: zone, [
                    "title": .string(""), "rank": .int64(3), "score": .double(2.5),
                    "link": .reference(Reference(recordID: other)), "place": .location(Location(latitude: 52.52, longitude: 13.405)),
                    "tags": .list([.int64(1), .int64(2)]),
                ]),
                note("mixed-sparse", zone: zone, ["title": .string("sparse")]),
                note("mixed-look-alike", zone: zone, ["title": .string(#"{"type":"INT64","value":5}"#), "rank": .int64(4)]),
                note("mixed-deviant", zone: zone, ["title": .string("deviant"), "score": .string("high")]),
                note("mixed-bare", zone: zone, [:]),
            ]
            var expected = records
            do {
                _ = try await store.write(saves: records, deletes: [])
            } catch {
                // A store whose schema fixes a field's type may refuse the deviating record, but
                // only by refusing the whole write; the rest must then be written on its own.
                let written = try await readBack(records.map(\.id.recordName), from: store)
                try require(written.isEmpty, "a refused write still wrote \(written.count) of its \(records.count) records")
                expected = records.filter { $0.id.recordName != "mixed-deviant" }
                _ = try await store.write(saves: expected, deletes: [])
            }
            let held = try await readBack(expected.map(\.id.recordName), from: store)
            for record in expected {
                let name = record.id.recordName
                guard let stored = held[name] else { throw KitStoreContractViolation(detail: "record \(describe(name)) was not stored") }
                for field in Set(record.fields.keys).union(stored.fields.keys).sorted() {
                    try require(
                        stored[field] == record[field],
                        "field \(field) of record \(describe(name)) was written as \(describe(record[field])) and came back as \(describe(stored[field]))")
                }
            }
        },
        Rule(name: "a listing returns every record, across continuation pages") { store, zone in
            let count = 2_500
            let records = (0..<count).map { note("many-\($0)", zone: zone, ["title": .string("t\($0)"), "rank": .int64(Int64($0))]) }
            _ = try await store.write(saves: records, deletes: [])
            let listing = try await store.list(since: nil)
            let listed = Set(listing.entries.map { $0.key.name })
            let missing = records.filter { !listed.contains($0.id.name) }.count
            try require(missing == 0, "\(missing) of \(count) records written in one message were not listed")
            try require(listing.entries.count == count, "the listing has \(listing.entries.count) entries for \(count) records")
        },
        Rule(name: "record names at the protocol's limits come back exactly") { store, zone in
            // Printable ASCII names every store must hold; others it may refuse, whole, with an
            // error (or say it cannot hold them, `canHold(recordNamed:)`).
            let names = [String(repeating: "n", count: 255), "with space", "dots.in.it", "..", "a/b", "50%", "CON"]
            var kept = names
            _ = try await store.write(saves: names.map { note($0, zone: zone, ["title": .string($0)]) }, deletes: [])
            for name in ["\u{E9}t\u{E9}", "\u{1F600}"] where store.canHold(recordNamed: name) {
                do {
                    _ = try await store.write(saves: [note(name, zone: zone, ["title": .string(name)])], deletes: [])
                    kept.append(name)
                } catch {
                    try require(try await readBack([name], from: store).isEmpty, "a refused write of record \(describe(name)) still wrote it")
                }
            }
            let held = try await readBack(kept, from: store)
            for name in kept {
                try require(held[name]?["title"] == .string(name), "record \(describe(name)) did not come back under its own name")
            }
            let listed = Set(try await store.list(since: nil).entries.map { Array($0.key.recordName.utf8) })
            for name in kept { try require(listed.contains(Array(name.utf8)), "the listing lost record \(describe(name)) or changed its bytes") }
            // Names that differ only in Unicode normalization are two records (CloudKit compares
            // bytes): a store keeps them apart, or refuses the write whole with an error.
            let twins = ["e\u{301}t\u{E9}", "\u{E9}te\u{301}"]
            do {
                _ = try await store.write(saves: twins.map { note($0, zone: zone, ["title": .string($0)]) }, deletes: [])
            } catch {
                let written = try await readBack(twins, from: store)
                try require(written.isEmpty, "a refused write of two names that differ only in Unicode normalization still wrote one")
                return
            }
            let twinsHeld = try await readBack(twins, from: store)
            for name in twins {
                try require(twinsHeld[name]?["title"] == .string(name), "record \(describe(name)) and its normalization twin were not kept apart")
            }
        },
    ]

    static func note(_ name: String, zone: ZoneID, _ fields: [String: FieldValue]) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: fields)
    }

    /// The records the store holds under these names, by name (compared by bytes).
    static func readBack(_ names: [String], from store: any KitStore) async throws -> [String: Record] {
        let entries = try await store.read(names.map { KitRecordKey(recordName: $0, recordType: "Note") })
        var records: [String: Record] = [:]
        let wanted = Set(names.map { RecordName($0) })
        for entry in entries where wanted.contains(entry.key.name) {
            if let record = entry.record { records[entry.key.recordName] = record }
        }
        return records
    }

    static func require(_ condition: Bool, _ detail: @autoclosure () -> String) throws {
        if !condition { throw KitStoreContractViolation(detail: detail()) }
    }

    static func describe(_ value: FieldValue?) -> String {
        guard let value else { return "nothing" }
        return "\(value)"
    }

    static func describe(_ name: String) -> String {
        name.utf8.count > 40 ? "of \(name.utf8.count) bytes" : "'\(name)'"
    }
}

/// A store that broke a rule of ``KitStoreContract``.
public struct KitStoreContractViolation: Error, CustomStringConvertible {
    /// What the store did instead of what the rule asks (names and field kinds, never row data
    /// beyond the check's own values).
    public var detail: String

    public var description: String { detail }
}
