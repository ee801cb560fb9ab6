import AdapterKit
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import AdapterKit
import GatewayTesting
@testable import JSONFilesAdapter
import SQLiteAdapter
import Testing

typealias Record = GatewayCore.Record

@Suite("JSON files adapter")
struct JSONFilesBehaviourTests {
    static let zone = ZoneID(zoneName: "Docs")

    static func adapter(_ folder: URL, layout: JSONFilesAdapterConfiguration.Layout = .filePerRecord) throws -> KitAdapter {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try JSONFilesAdapter.open(configuration: configuration(folder, layout: layout))
    }

    /// The folder's adapter configuration, with its state beside the folder.
    static func configuration(_ folder: URL, layout: JSONFilesAdapterConfiguration.Layout = .filePerRecord) -> JSONFilesAdapterConfiguration {
        JSONFilesAdapterConfiguration(
            name: "docs", directory: folder.path, zoneID: zone, layout: layout,
            statePath: folder.deletingLastPathComponent().appendingPathComponent(folder.lastPathComponent + "-state.sqlite").path)
    }

    /// A SQLite database at `path` with an `Article` table of `columns` (after its `name` key),
    /// and a synchronizer of it through `cloud` on the suite's zone, as device `device`.
    static func sqliteArticles(at path: String, columns: String, cloud: EmbeddedCloud, device: String) async throws -> Synchronizer {
        try await DatabaseQueue(path: path).write { db in try db.execute(sql: "CREATE TABLE Article (name TEXT PRIMARY KEY, \(columns))") }
        let sqlite = try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(name: "app", path: path, zoneID: zone, tables: [TableMapping(table: "Article")]))
        return Synchronizer(cloud: cloud, adapters: [SyncedAdapter(sqlite)], configuration: SyncConfiguration(deviceID: device))
    }

    static func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    static func download(_ records: [Record], deletes: [RecordID] = []) -> DownloadedChanges {
        var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: Data("t".utf8)))
        changes.writes = records
        changes.deletes = deletes
        for record in records { changes.expectedPendingVersions[record.id] = 0 }
        return changes
    }

    @Test("every JSON form maps to a field and is written back in the same form")
    func typeMapping() async throws {
        let directory = try TemporaryDirectory(prefix: "json-types")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let original = """
            {
              "attachment": {
                "$file": "files/a.bin"
              },
              "blob": {
                "$bytes": "AAEC/w=="
              },
              "count": 3,
              "draft": true,
              "layout": {
                "columns": 2
              },
              "place": {
                "$location": {
                  "latitude": 47.5,
                  "longitude": 8.25
                }
              },
              "published": {
                "$date": "2026-11-01T09:30:00.123Z"
              },
              "ratio": 2.0,
              "related": {
                "$ref": "other"
              },
              "tags": [
                "x",
                1
              ],
              "title": "T"
            }

            """
        try Self.write(original, to: folder.appendingPathComponent("Article/a.json"))
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("files"), withIntermediateDirectories: true)
        try Data([9, 8, 7]).write(to: folder.appendingPathComponent("files/a.bin"))
        let adapter = try Self.adapter(folder)
        let pending = try await adapter.pendingChanges(limit: 10)
        let record = try #require(pending.saves.first?.record)
        #expect(record.recordType == "Article")
        #expect(record.fields["attachment"] == .bytes(Data([9, 8, 7])))
        #expect(record.fields["blob"] == .bytes(Data([0, 1, 2, 255])))
        #expect(record.fields["count"] == .int64(3))
        #expect(record.fields["draft"] == .int64(1))
        #expect(record.fields["layout"] == .string("{\n  \"columns\": 2\n}"))
        #expect(record.fields["place"] == .location(Location(latitude: 47.5, longitude: 8.25)))
        #expect(record.fields["published"] == .timestamp(Timestamp(millisecondsSince1970: 1_793_525_400_123)))
        #expect(record.fields["ratio"] == .double(2.0))
        #expect(record.fields["related"] == .reference(Reference(recordID: RecordID(recordName: "other", zoneID: Self.zone))))
        #expect(record.fields["tags"] == .list([.string("x"), .int64(1)]))
        #expect(record.fields["title"] == .string("T"))

        // The same values coming back from the cloud (with a new attachment) keep every form.
        var settled = SyncStateUpdate(zoneState: Data("t".utf8))
        settled.settled[record.id] = pending.saves[0].version
        try await adapter.commit(settled)
        var updated = record
        updated.fields["attachment"] = .bytes(Data([1, 1]))
        try await adapter.apply(Self.download([updated]))
        let written = try String(contentsOf: folder.appendingPathComponent("Article/a.json"), encoding: .utf8)
        #expect(written == original)
        #expect(try Data(contentsOf: folder.appendingPathComponent("files/a.bin")) == Data([1, 1]), "the referenced file was written")
        #expect(try await adapter.hasChanges() == false, "the adapter's own writes are not local changes")
    }

    @Test("a location with every part and a reference with an action are written whole and read back as they were")
    func wholeLocationsAndReferenceActions() async throws {
        let directory = try TemporaryDirectory(prefix: "json-tags")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let adapter = try Self.adapter(folder)
        let place = FieldValue.location(
            Location(
                latitude: 48.85, longitude: 2.35, horizontalAccuracy: 5, verticalAccuracy: 3, altitude: 35.5, speed: 1.25, course: 90,
                timestamp: Timestamp(millisecondsSince1970: 1_700_000_000_123)))
        let parent = FieldValue.reference(Reference(recordID: RecordID(recordName: "p", zoneID: Self.zone), action: .deleteSelf))
        let record = Record(
            id: RecordID(recordName: "a", zoneID: Self.zone), recordType: "Article",
            fields: ["place": place, "parent": parent, "title": .string("T")])
        try await adapter.apply(Self.download([record]))
        let document = folder.appendingPathComponent("Article/a.json")
        let written = try String(contentsOf: document, encoding: .utf8)
        #expect(written.contains("\"altitude\" : 35.5") || written.contains("\"altitude\": 35.5"), "\(written)")
        #expect(written.contains("DELETE_SELF"))

        // Another field edited in the document: both go up as they came.
        try Self.write(written.replacingOccurrences(of: "\"T\"", with: "\"edited\""), to: document)
        let pending = try #require(try await adapter.pendingChanges(limit: 10).saves.first?.record)
        #expect(pending["title"] == .string("edited"))
        #expect(pending["place"] == place)
        #expect(pending["parent"] == parent)
    }

    @Test(
        "record names from the cloud never write outside the folder, and come back unchanged",
        arguments: [
            "../x", "/etc/passwd", "a/b", "..", ".", ".hidden", String(repeating: "n", count: 300),
            "ａ／ｂ", "a\u{2215}b", "café", "con", "x.json", "%2F",
        ])
    func hostileNames(_ name: String) async throws {
        let directory = try TemporaryDirectory(prefix: "json-names")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let adapter = try Self.adapter(folder)
        let outside = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        for type in ["Note", "../Escape", "a/b"] {
            let record = Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: type, fields: ["title": .string("t")])
            try await adapter.apply(Self.download([record]))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == outside, "nothing outside the folder")
            #expect(try await adapter.hasChanges() == false)
            // A local edit comes back under the same name and type.
            let files = FileManager.default.enumerator(atPath: folder.path)!.compactMap { $0 as? String }
                .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".gateway") }
            #expect(files.count == 1)
            let url = folder.appendingPathComponent(files[0])
            #expect(url.standardizedFileURL.path.hasPrefix(folder.standardizedFileURL.path + "/"))
            #expect(url.lastPathComponent.utf8.count <= 255)
            try Self.write("{\n  \"title\": \"edited\"\n}\n", to: url)
            let pending = try await adapter.pendingChanges(limit: 10)
            #expect(pending.saves.map(\.record.id.recordName) == [name])
            #expect(pending.saves.map(\.record.recordType) == [type])
            try await adapter.apply(Self.download([], deletes: [record.id]))
            try await adapter.resetSyncState(keepData: false)
        }
    }

    @Test("an empty field is written null only over a value the document held; other empty fields, and null keys left by an earlier release, get no key")
    func emptyFieldsWritten() throws {
        let mapping = JSONFieldMapping(directory: URL(fileURLWithPath: "/nonexistent"), zoneID: Self.zone)
        let record = Record(
            id: RecordID(recordName: "r", zoneID: Self.zone), recordType: "Article",
            namedFields: ["title": .some(.string("t")), "cleared": FieldValue?.none, "QSCloudKitDeviceUUIDKey": FieldValue?.none, "never": FieldValue?.none])
        let previous: [String: JSONValue] = ["title": .string("old"), "cleared": .string("was here"), "QSCloudKitDeviceUUIDKey": .null]
        #expect(try mapping.object(for: record, previous: previous) == ["title": .string("t"), "cleared": .null])
        #expect(try mapping.object(for: record, previous: nil) == ["title": .string("t")])
    }

    @Test("record names that differ only in Unicode normalization are separate files, and a collection refuses to merge them")
    func canonicallyEquivalentNames() async throws {
        let directory = try TemporaryDirectory(prefix: "json-nfd")
        defer { directory.remove() }
        let names = ["\u{E9}", "e\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}"]
        let records = names.enumerated().map { index, name in
            Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "Note", fields: ["title": .string("t\(index)")])
        }
        func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

        let folder = directory.url.appendingPathComponent("docs")
        let adapter = try Self.adapter(folder)
        try await adapter.apply(Self.download(records))
        #expect(try await adapter.hasChanges() == false)
        let files = ["%C3%A9.json", "e%CC%81.json", "%C3%85.json", "A%CC%8A.json", "%E2%84%AB.json"]
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("Note").path).sorted() == files.sorted(), "one file per record")
        // Edited locally, each comes back under its own name with its own values.
        for (index, file) in files.enumerated() {
            try Self.write("{\"title\": \"edited t\(index)\"}", to: folder.appendingPathComponent("Note").appendingPathComponent(file))
        }
        let pending = try await adapter.pendingChanges(limit: 10)
        var titles: [[UInt8]: FieldValue] = [:]
        for save in pending.saves { titles[bytes(save.record.id.recordName)] = save.record["title"] }
        #expect(titles == Dictionary(uniqueKeysWithValues: names.enumerated().map { (bytes($0.element), FieldValue.string("edited t\($0.offset)")) }))
        // A delete from the cloud removes its own file only.
        try await adapter.resetSyncState(keepData: true)
        try await adapter.apply(Self.download([], deletes: [records[1].id]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("Note").path).sorted()
            == files.filter { $0 != "e%CC%81.json" }.sorted())

        // One collection document cannot hold both forms: refused whole, nothing written.
        let collection = directory.url.appendingPathComponent("collection")
        let collected = try Self.adapter(collection, layout: .collection)
        let error = await #expect(throws: JSONFilesAdapterError.self) { try await collected.apply(Self.download(records)) }
        #expect(error?.code == .unwritableName)
        #expect(error?.message.contains("Note.json") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: collection.path).filter { !$0.hasPrefix(".") } == [])
        // A collection file written by hand with both forms is a problem of that file, not a
        // record silently lost.
        try Self.write("{\"\u{E9}\": {\"title\": \"one\"}, \"e\u{301}\": {\"title\": \"two\"}}", to: collection.appendingPathComponent("Note.json"))
        let listed = try await collected.pendingChanges(limit: 10)
        #expect(listed.saves.isEmpty)
        #expect(try await collected.failedRecords().contains { $0.failure.message.contains("Unicode normalization") })
    }

    @Test("a record name with NUL is refused whole, writing nothing")
    func nulName() async throws {
        let directory = try TemporaryDirectory(prefix: "json-nul")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let adapter = try Self.adapter(folder)
        let fine = Record(id: RecordID(recordName: "fine", zoneID: Self.zone), recordType: "Note", fields: [:])
        let hostile = Record(id: RecordID(recordName: "nul\u{0}byte", zoneID: Self.zone), recordType: "Note", fields: [:])
        let error = await #expect(throws: JSONFilesAdapterError.self) { try await adapter.apply(Self.download([fine, hostile])) }
        #expect(error?.code == .unwritableName)
        // Only the kit's identity marker, in the folder's `.gateway`: no document.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [".gateway"])
    }

    @Test("an invalid file is a failed record naming line and column; it is never uploaded or overwritten, others keep syncing")
    func invalidFile() async throws {
        let directory = try TemporaryDirectory(prefix: "json-invalid")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let broken = "{\n  \"title\": \"broken\",\n  \"views\": 12,,\n}\n"
        try Self.write(broken, to: folder.appendingPathComponent("Article/broken.json"))
        try Self.write("{\"title\": \"fine\"}", to: folder.appendingPathComponent("Article/fine.json"))
        try Self.write("[1, 2]", to: folder.appendingPathComponent("Article/array.json"))
        let adapter = try Self.adapter(folder)
        let pending = try await adapter.pendingChanges(limit: 10)
        #expect(pending.saves.map(\.record.id.recordName) == ["fine"])
        let failed = try await adapter.failedRecords().sorted { $0.recordID.recordName < $1.recordID.recordName }
        #expect(failed.map(\.recordID.recordName) == ["array", "broken"])
        #expect(failed.allSatisfy { $0.failure.code == "invalidJSON" })
        #expect(failed[1].failure.message.hasPrefix("Article/broken.json line 3 column 15: expected a member name in quotes"))
        #expect(!failed[1].failure.message.contains("12"), "no file contents in the message")

        let server = Record(id: RecordID(recordName: "broken", zoneID: Self.zone), recordType: "Article", fields: ["title": .string("server")])
        try await adapter.apply(Self.download([server]))
        #expect(try String(contentsOf: folder.appendingPathComponent("Article/broken.json"), encoding: .utf8) == broken, "left in place")

        try Self.write("{\"title\": \"fixed\"}", to: folder.appendingPathComponent("Article/broken.json"))
        let fixed = try await adapter.pendingChanges(limit: 10)
        #expect(fixed.saves.map(\.record.id.recordName).contains("broken"), "a fixed file syncs")
    }

    @Test("a whole number beyond the 64-bit range is a problem naming its place, never a double that another write would put in its stead")
    func wholeNumberBeyondInt64() async throws {
        let directory = try TemporaryDirectory(prefix: "json-bigint")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let text = "{\"title\": \"x\",\n \"n\": 12345678901234567890}"
        try Self.write(text, to: folder.appendingPathComponent("Article/big.json"))
        try Self.write("{\"title\": \"fine\", \"n\": -9223372036854775808, \"d\": 1e300}", to: folder.appendingPathComponent("Article/edge.json"))
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let adapter = try Self.adapter(folder)
        let sync = Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: "json"))
        #expect(try await sync.sync().adapters[0].uploaded == 1, "only the document every number of which a field holds")
        let contents = try await zoneContents(of: cloud, zone: Self.zone)
        #expect(contents["edge"]?["n"] == .int64(.min))
        let failed = try await adapter.failedRecords()
        #expect(failed.map(\.recordID.recordName) == ["big"])
        #expect(failed.first?.failure.message.contains("Article/big.json line 2 column 7: a whole number beyond the 64-bit integer range") == true, "\(failed)")
        #expect(try String(contentsOf: folder.appendingPathComponent("Article/big.json"), encoding: .utf8) == text, "left as it is")
    }

    @Test("doubles no JSON number holds (NaN, the infinities) are written as $double and read back as they were, in lists too")
    func nonFiniteDoubles() async throws {
        let directory = try TemporaryDirectory(prefix: "json-nan")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let adapter = try Self.adapter(folder)
        let record = Record(
            id: RecordID(recordName: "n", zoneID: Self.zone), recordType: "Article",
            fields: ["f": .double(.nan), "g": .double(.infinity), "l": .list([.double(-.infinity), .double(1.5)])])
        try await adapter.apply(Self.download([record]))
        let text = try String(contentsOf: folder.appendingPathComponent("Article/n.json"), encoding: .utf8)
        #expect(text.contains(#""$double" : "NaN""#) || text.contains(#""$double": "NaN""#), "\(text)")
        #expect(!text.contains("null"), "\(text)")
        try Self.write(text.replacingOccurrences(of: "{\n", with: "{\n  \"title\": \"edited\",\n", options: [], range: text.range(of: "{\n")), to: folder.appendingPathComponent("Article/n.json"))
        let edited = try #require(try await adapter.pendingChanges(limit: 10).saves.first?.record)
        #expect(edited["f"].map { if case .double(let value) = $0 { value.isNaN } else { false } } == true, "\(edited)")
        #expect(edited["g"] == .double(.infinity))
        #expect(edited["l"] == .list([.double(-.infinity), .double(1.5)]))
        #expect(edited["title"] == .string("edited"))
    }

    @Test("two files that stand for one record name are a problem naming both, and nothing of that record syncs until one goes")
    func twinFileNames() async throws {
        let directory = try TemporaryDirectory(prefix: "json-twins")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        try Self.write("{\"title\": \"spaces\"}", to: folder.appendingPathComponent("Article/with space.json"))
        try Self.write("{\"title\": \"encoded twin\"}", to: folder.appendingPathComponent("Article/with%20space.json"))
        try Self.write("{\"title\": \"other\"}", to: folder.appendingPathComponent("Article/other.json"))
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let adapter = try Self.adapter(folder)
        let sync = Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: "json"))

        #expect(try await sync.sync().adapters[0].uploaded == 1, "only the record no other file names")
        #expect(try await zoneContents(of: cloud, zone: Self.zone).keys.sorted() == ["other"])
        let failed = try await adapter.failedRecords()
        #expect(failed.map(\.recordID.recordName) == ["with space"])
        #expect(failed.first?.failure.message.contains("Article/with%20space.json holds record with space, which Article/with space.json holds already") == true)
        #expect(failed.first?.failure.code == "duplicateRecordName")
        #expect(failed.first?.failure.message.hasSuffix("rename or remove one of them; the record is not uploaded until then") == true, "\(failed)")

        try FileManager.default.removeItem(at: folder.appendingPathComponent("Article/with%20space.json"))
        #expect(try await sync.sync().adapters[0].uploaded == 1)
        #expect(try await zoneContents(of: cloud, zone: Self.zone)["with space"]?["title"] == .string("spaces"))
        #expect(try await adapter.failedRecords().isEmpty)
    }

    @Test("a JSON folder and a SQLite database sync one zone, with $file assets, and an invalid file stays put")
    func withSQLite() async throws {
        let directory = try TemporaryDirectory(prefix: "json-sqlite")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        try Self.write(
            "{\"title\": \"Hello\", \"views\": 3, \"attachment\": {\"$file\": \"files/hello.bin\"}}",
            to: folder.appendingPathComponent("Article/hello.json"))
        let blob = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("files"), withIntermediateDirectories: true)
        try blob.write(to: folder.appendingPathComponent("files/hello.bin"))
        try Self.write("{ not json", to: folder.appendingPathComponent("Article/broken.json"))
        let json = try Self.adapter(folder)

        let databasePath = directory.path("app.sqlite")
        try await DatabaseQueue(path: databasePath).write { db in
            try db.execute(sql: "CREATE TABLE Article (name TEXT PRIMARY KEY, title TEXT, views INTEGER, attachment BLOB)")
        }
        let sqlite = try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(
                name: "app", path: databasePath, zoneID: Self.zone, tables: [TableMapping(table: "Article")]))
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let jsonSync = Synchronizer(cloud: cloud, adapters: [SyncedAdapter(json)], configuration: SyncConfiguration(deviceID: "json"))
        let sqliteSync = Synchronizer(cloud: cloud, adapters: [SyncedAdapter(sqlite)], configuration: SyncConfiguration(deviceID: "db"))

        #expect(try await jsonSync.sync().adapters[0].uploaded == 1, "the invalid file is not uploaded")
        let contents = try await zoneContents(of: cloud, zone: Self.zone)
        guard case .asset? = contents["hello"]?["attachment"] else {
            Issue.record("the $file was not uploaded as an asset")
            return
        }
        #expect(try await sqliteSync.sync().adapters[0].downloaded == 1)
        let row = try await DatabaseQueue(path: databasePath).read { db -> (String?, Int?, Data?) in
            let row = try Row.fetchOne(db, sql: "SELECT title, views, attachment FROM Article WHERE name = 'hello'")
            return (row?["title"], row?["views"], row?["attachment"])
        }
        #expect(row.0 == "Hello")
        #expect(row.1 == 3)
        #expect(row.2 == blob)

        let replacement = Data(repeating: 7, count: 1_000)
        try await DatabaseQueue(path: databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET attachment = ?, views = 4 WHERE name = 'hello'", arguments: [replacement])
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('broken', 'from the database')")
        }
        #expect(try await sqliteSync.sync().adapters[0].uploaded == 2)
        let report = try await jsonSync.sync().adapters[0]
        #expect(report.outcome == .synced)
        #expect(try Data(contentsOf: folder.appendingPathComponent("files/hello.bin")) == replacement, "the $file file was rewritten")
        let hello = try String(contentsOf: folder.appendingPathComponent("Article/hello.json"), encoding: .utf8)
        #expect(hello.contains("\"$file\": \"files/hello.bin\""))
        #expect(hello.contains("\"views\": 4"))
        #expect(try String(contentsOf: folder.appendingPathComponent("Article/broken.json"), encoding: .utf8) == "{ not json")
        #expect(try await json.failedRecords().map(\.recordID.recordName) == ["broken"])

        // Documents get no keys for empty fields, the gateway's reserved ones among them: a new
        // one holds its values only, and a field cleared elsewhere leaves the document.
        try await DatabaseQueue(path: databasePath).write { db in
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('fresh', 'new')")
            try db.execute(sql: "UPDATE Article SET title = NULL WHERE name = 'hello'")
        }
        #expect(try await sqliteSync.sync().adapters[0].uploaded == 2)
        #expect(try await jsonSync.sync().adapters[0].outcome == .synced)
        let fresh = try JSONValue.parse(Data(contentsOf: folder.appendingPathComponent("Article/fresh.json")), numbers: .exact)
        #expect(fresh == .object(["title": .string("new")]), "\(fresh)")
        let cleared = try JSONValue.parse(Data(contentsOf: folder.appendingPathComponent("Article/hello.json")), numbers: .exact)
        #expect(cleared == .object(["views": .integer(4), "attachment": .object(["$file": .string("files/hello.bin")])]), "\(cleared)")
        #expect(try await jsonSync.sync().adapters[0].uploaded == 0, "what was written reads back as it was")
    }

    @Test("the state of a folder synced by the release before the adapter kit carries over: metadata, zone state, and only real edits pending")
    func legacyStateMigrates() async throws {
        let directory = try TemporaryDirectory(prefix: "json-legacy")
        defer { directory.remove() }
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/previous-release/docs")
        let folder = directory.url.appendingPathComponent("docs")
        // Copied files get new modification times: every document is read again and compared by content.
        try FileManager.default.copyItem(at: fixture, to: folder)
        let adapter = try Self.adapter(folder)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(".gateway/state.sqlite.migrated").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(".gateway/state.sqlite").path))
        #expect(try await adapter.loadZoneState() != nil, "the zone state carried over")
        #expect(try await adapter.syncedRecordIDs().map(\.recordName).sorted() == ["second", "welcome"])
        let pending = try await adapter.pendingChanges(limit: 10)
        #expect(pending.saves.map(\.record.id.recordName) == ["welcome"], "the edit made before the upgrade, and nothing else")
        #expect(pending.saves.first?.metadata != nil, "with the metadata of its last sync")
        #expect(pending.saves.first?.record["title"] == .string("Welcome, edited before the upgrade"))

        // Opening again finds the migrated state and leaves it alone.
        await adapter.close()
        let reopened = try Self.adapter(folder)
        #expect(try await reopened.pendingChangeCount() == 1)
        #expect(try await reopened.syncedRecordIDs().count == 2)
    }

    @Test("a $file path that reaches outside the folder through a link is refused: neither read nor written")
    func fileLinksOutOfTheFolder() throws {
        let directory = try TemporaryDirectory(prefix: "json-file-links")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let outside = directory.url.appendingPathComponent("outside")
        for made in [folder.appendingPathComponent("files"), outside] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
        try Data("secret".utf8).write(to: outside.appendingPathComponent("victim.txt"))
        try Data("mine".utf8).write(to: folder.appendingPathComponent("files/own.txt"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("esc"), withDestinationURL: outside)
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("files/victim.txt"), withDestinationURL: outside.appendingPathComponent("victim.txt"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("alias"), withDestinationURL: folder.appendingPathComponent("files"))
        let mapping = JSONFieldMapping(directory: folder, zoneID: Self.zone)
        #expect(mapping.resolve("esc/victim.txt") == nil, "a linked folder that leads out")
        #expect(mapping.resolve("files/victim.txt") == nil, "a linked file that leads out")
        #expect(mapping.resolve("esc/new.txt") == nil, "a file not there yet, under a linked folder that leads out")
        #expect(mapping.resolve("files/own.txt") != nil)
        #expect(mapping.resolve("alias/own.txt") != nil, "a link that stays inside")
    }

    @Test("a file a $file field names is part of its record: editing it alone is a change, a download never writes over an edit of it, and a file two documents name is never written for one of them")
    func linkedFilesArePartOfTheirRecords() async throws {
        let directory = try TemporaryDirectory(prefix: "json-linked-files")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let file = { (name: String) in folder.appendingPathComponent("files/\(name)") }
        try Self.write("{\"title\": \"A\", \"attachment\": {\"$file\": \"files/a.bin\"}}", to: folder.appendingPathComponent("Note/a.json"))
        try Self.write("{\"title\": \"B\", \"attachment\": {\"$file\": \"files/shared.bin\"}}", to: folder.appendingPathComponent("Note/b.json"))
        try Self.write("{\"title\": \"C\", \"attachment\": {\"$file\": \"files/shared.bin\"}}", to: folder.appendingPathComponent("Note/c.json"))
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("files"), withIntermediateDirectories: true)
        try Data("one".utf8).write(to: file("a.bin"))
        try Data("shared".utf8).write(to: file("shared.bin"))
        let store = try JSONFolderStore(directory: folder.path, layout: .filePerRecord, zoneID: Self.zone, indexPath: directory.path("index.sqlite"))
        let version = { (listing: KitListing, name: String) in listing.entries.first { $0.key.recordName == name }?.version }
        let first = try await store.list(since: nil)

        // The file alone edited: the record's version moves, and a read gives the new bytes.
        try Data("one, edited by hand".utf8).write(to: file("a.bin"))
        let edited = try await store.list(since: first.cursor)
        #expect(edited.entries.map(\.key.recordName) == ["a"])
        #expect(version(edited, "a") != version(first, "a"))
        let read = try await store.read([KitRecordKey(recordName: "a", recordType: "Note")])
        #expect(read.first?.record?["attachment"] == .bytes(Data("one, edited by hand".utf8)))

        // Edited by hand again, not read since: a download holds the record back, the file kept.
        try Data("edited again".utf8).write(to: file("a.bin"))
        let fromCloud = { (name: String, bytes: String) in
            Record(
                id: RecordID(recordName: name, zoneID: Self.zone), recordType: "Note",
                fields: ["title": .string(name.uppercased()), "attachment": .bytes(Data(bytes.utf8))])
        }
        let held = try await store.write(saves: [fromCloud("a", "from the cloud")], deletes: [])
        #expect(held.map(\.isHeldBack) == [true])
        #expect(try Data(contentsOf: file("a.bin")) == Data("edited again".utf8))

        // Read, then downloaded: written to the file, with the version a later look agrees with.
        let looked = try await store.list(since: nil)
        let written = try await store.write(saves: [fromCloud("a", "from the cloud")], deletes: [])
        #expect(written.map(\.isHeldBack) == [false])
        #expect(try Data(contentsOf: file("a.bin")) == Data("from the cloud".utf8))
        let after = try await store.list(since: looked.cursor)
        #expect(version(after, "a") == nil || version(after, "a") == written.first?.version, "no change of its own after the gateway's write")

        // A file two documents name: b's new bytes go inline in b, and c keeps its file.
        let shared = try await store.write(saves: [fromCloud("b", "b only")], deletes: [])
        #expect(shared.map(\.isHeldBack) == [false])
        #expect(try Data(contentsOf: file("shared.bin")) == Data("shared".utf8))
        let b = try String(contentsOf: folder.appendingPathComponent("Note/b.json"), encoding: .utf8)
        #expect(b.contains("$bytes") && !b.contains("$file"), "\(b)")
        let c = try await store.read([KitRecordKey(recordName: "c", recordType: "Note")])
        #expect(c.first?.record?["attachment"] == .bytes(Data("shared".utf8)))
    }

    @Test("a document another program edits while a write prepares its page keeps the edit: its records are held back, the rest written")
    func editWhilePreparing() async throws {
        let directory = try TemporaryDirectory(prefix: "json-edit-while-preparing")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let (a, b) = (folder.appendingPathComponent("Note/a.json"), folder.appendingPathComponent("Note/b.json"))
        try Self.write("{\"title\": \"A\"}", to: a)
        try Self.write("{\"title\": \"B\"}", to: b)
        var store = try JSONFolderStore(directory: folder.path, layout: .filePerRecord, zoneID: Self.zone, indexPath: directory.path("index.sqlite"))
        let before = try await store.list(since: nil)
        store.afterPreparing = { try? Self.write("{\"title\": \"A, edited by hand\"}", to: a) }
        let answers = try await store.write(
            saves: ["a", "b"].map { Record(id: RecordID(recordName: $0, zoneID: Self.zone), recordType: "Note", fields: ["title": .string("from the cloud")]) },
            deletes: [])
        #expect(String(decoding: try Data(contentsOf: a), as: UTF8.self).contains("A, edited by hand"))
        #expect(String(decoding: try Data(contentsOf: b), as: UTF8.self).contains("from the cloud"))
        #expect(answers.filter(\.isHeldBack).map(\.key.recordName) == ["a"])
        #expect(answers.filter { !$0.isHeldBack }.map(\.key.recordName) == ["b"])
        // The next look reads the hand edit as a change.
        store.afterPreparing = nil
        let version = { (listing: KitListing) in listing.entries.first { $0.key.recordName == "a" }?.version }
        let after = try await store.list(since: before.cursor)
        #expect(version(after) != nil && version(after) != version(before))
    }

    @Test("listings since a cursor return only what changed; a new index, or a problem that comes or goes, gives a complete one")
    func incrementalListings() async throws {
        let directory = try TemporaryDirectory(prefix: "json-cursor")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        try Self.write("{\"a\": {\"title\": \"A\"}, \"b\": {\"title\": \"B\"}}", to: folder.appendingPathComponent("Note.json"))
        try Self.write("{\"c\": {\"title\": \"C\"}}", to: folder.appendingPathComponent("Other.json"))
        let store = try JSONFolderStore(directory: folder.path, layout: .collection, zoneID: Self.zone, indexPath: directory.path("index.sqlite"))
        let first = try await store.list(since: nil)
        #expect(first.isComplete && Set(first.entries.map(\.key.recordName)) == ["a", "b", "c"])
        let quiet = try await store.list(since: first.cursor)
        #expect(!quiet.isComplete && quiet.entries.isEmpty && quiet.deleted.isEmpty, "nothing changed")

        try Self.write("{\"a\": {\"title\": \"A2\"}}", to: folder.appendingPathComponent("Note.json"))
        let edited = try await store.list(since: quiet.cursor)
        #expect(!edited.isComplete)
        #expect(edited.entries.map(\.key.recordName) == ["a"], "only the record whose content changed")
        #expect(edited.deleted == ["b"])

        try Self.write("{ broken", to: folder.appendingPathComponent("Other.json"))
        let broken = try await store.list(since: edited.cursor)
        #expect(broken.isComplete, "a new problem: complete")
        #expect(broken.problems.map(\.recordName) == ["Other"])
        #expect(Set(broken.entries.map(\.key.recordName)) == ["a", "c"], "the broken file's records keep their last versions")
        try Self.write("{\"c\": {\"title\": \"C\"}}", to: folder.appendingPathComponent("Other.json"))
        let fixed = try await store.list(since: broken.cursor)
        #expect(fixed.isComplete && fixed.problems.isEmpty, "a problem gone: complete, so the kit forgets it")

        let elsewhere = try JSONFolderStore(directory: folder.path, layout: .collection, zoneID: Self.zone, indexPath: directory.path("other.sqlite"))
        #expect(try await elsewhere.list(since: fixed.cursor).isComplete, "another index's cursor")
        #expect(try await store.list(since: "garbage").isComplete)
    }
}
