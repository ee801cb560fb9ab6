import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import Testing

@Suite("Hostile record names end to end")
struct HostileRecordNamesTests {
    /// Keys that Swift's `String` compares equal but SQLite, PostgreSQL and file systems keep
    /// apart: composed and decomposed accents, and the Ångström sign.
    static let keys = ["\u{E9}", "e\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}", "plain"]

    static func rowsByHex(_ file: SQLiteFile) throws -> [String: String] {
        var rows: [String: String] = [:]
        for row in try file.rows(#"SELECT hex(name), title FROM "Note""#) { rows[row[0]] = row[1] }
        return rows
    }

    /// Two databases syncing through one embedded cloud, the first holding a row per key (titled
    /// "title <index>").
    static func twoStores(in directory: TemporaryDirectory, keys: [String]) throws -> (
        cloud: EmbeddedCloud, source: SQLiteFile, target: SQLiteFile, gateways: [Synchronizer]
    ) {
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let source = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        let target = try SQLiteFile(directory, name: "b.sqlite", schema: Notes.schema)
        for (index, key) in keys.enumerated() { try source.execute(#"INSERT INTO "Note" VALUES (?, ?, ?)"#, [key, "title \(index)", index]) }
        let gateways = try [(source, "a"), (target, "b")].map { file, device in
            Synchronizer(cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(file, name: device))], configuration: SyncConfiguration(deviceID: device))
        }
        return (cloud, source, target, gateways)
    }

    @Test("rows whose keys differ only in Unicode normalization sync as separate records, each with its own values")
    func separateRecords() async throws {
        let directory = try TemporaryDirectory(prefix: "nfc-nfd")
        defer { directory.remove() }
        let (cloud, source, target, gateways) = try Self.twoStores(in: directory, keys: Self.keys)
        try await Synchronizer.syncInTurns(gateways)
        let expected = try Self.rowsByHex(source)
        #expect(expected.count == Self.keys.count)
        #expect(try Self.rowsByHex(target) == expected)
        let page = try await cloud.fetchChanges(in: Notes.zone, since: nil, limit: 100)
        #expect(Set(page.modified.map { Array($0.id.recordName.utf8) }).count == Self.keys.count, "one cloud record per row")

        // Edits on one side, an edit and a delete on the other: each reaches its own row only.
        try source.execute(#"UPDATE "Note" SET title = 'edited in a ' || hex(name) WHERE name IN (?, ?)"#, [Self.keys[0], Self.keys[3]])
        try target.execute(#"UPDATE "Note" SET title = 'edited in b ' || hex(name) WHERE name = ?"#, [Self.keys[1]])
        try target.execute(#"DELETE FROM "Note" WHERE name = ?"#, [Self.keys[4]])
        try await Synchronizer.syncInTurns(gateways)
        let after = try Self.rowsByHex(source)
        #expect(try Self.rowsByHex(target) == after)
        #expect(after.count == Self.keys.count - 1)
        #expect(after["C3A9"] == "edited in a C3A9" && after["41CC8A"] == "edited in a 41CC8A" && after["65CC81"] == "edited in b 65CC81")
        #expect(after["C385"] == "title 2" && after["E284AB"] == nil && after["706C61696E"] == "title 5")
    }

    @Test("keys with quotes, escapes, control characters, separators and direction marks reach the other store intact")
    func hostileKeys() async throws {
        let directory = try TemporaryDirectory(prefix: "hostile-keys")
        defer { directory.remove() }
        let keys = [
            "quote\"d", "back\\slash", "new\nline", "tab\t", "\u{1}\u{1F}", "'single'", "]\"},{\"x\":[", "%_*?", "emoji 🧪",
            "\u{202E}rtl", "\u{FEFF}bom", " leading space", "trailing space ", "../../etc/passwd", "a|b\\|c", "\u{10FFFF}",
        ]
        let (_, source, target, gateways) = try Self.twoStores(in: directory, keys: keys)
        try await Synchronizer.syncInTurns(gateways)
        let expected = try Self.rowsByHex(source)
        #expect(expected.count == keys.count)
        #expect(try Self.rowsByHex(target) == expected)
        try target.execute(#"DELETE FROM "Note" WHERE name IN (?, ?)"#, [keys[0], keys[6]])
        try target.execute(#"UPDATE "Note" SET title = 'edited' WHERE name = ?"#, [keys[2]])
        try await Synchronizer.syncInTurns(gateways)
        let after = try Self.rowsByHex(source)
        #expect(after.count == keys.count - 2)
        #expect(try Self.rowsByHex(target) == after)
        #expect(after[Array(keys[2].utf8).map { String(format: "%02X", $0) }.joined()] == "edited")
    }

    @Test("a downloaded record whose name cannot be a key of its table is left out, as a record of a type with no table, and the rest of the page applies")
    func namesThatFitNoKey() async throws {
        let directory = try TemporaryDirectory(prefix: "no-key")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, name: "items.sqlite", schema: "CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT);")
        let zone = ZoneID(zoneName: "Items")
        let adapter = try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(
                name: "items", path: file.path, zoneID: zone, tables: [TableMapping(table: "item", recordType: "Item", recordName: "item-<pk>")]))
        let names = ["item-1", "hello", "item-abc", "item-", "item-2"]
        let records = names.map { Record(id: RecordID(recordName: $0, zoneID: zone), recordType: "Item", fields: ["label": .string($0)]) }
        var state = SyncStateUpdate(zoneState: Data("token".utf8))
        for record in records { state.metadata[record.id] = RecordMetadata(syncedRecord: record).encoded() }
        try await adapter.apply(
            DownloadedChanges(
                writes: records, deletes: [RecordID(recordName: "item-xyz", zoneID: zone)], state: state,
                expectedPendingVersions: Dictionary(uniqueKeysWithValues: records.map { ($0.id, 0) }), absentLocally: Set(records.map(\.id))))
        #expect(try file.rows("SELECT id, label FROM item ORDER BY id").map { "\($0[0] as Int64)=\($0[1] as String)" } == ["1=item-1", "2=item-2"])
        #expect(try await adapter.loadZoneState() == Data("token".utf8), "the page committed")
        #expect(try await adapter.hasChanges() == false)
        let local = try await adapter.localState(for: records.map(\.id))
        #expect(Set(local.keys.map(\.recordName)) == ["item-1", "item-2"], "no metadata for what was left out")
    }
}
