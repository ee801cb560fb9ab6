import GatewayCore
import Foundation
import GRDB
import GatewayTesting
import TestScheduling
import Testing

/// Record processors as a user configures them: a SQLite column of file paths syncs the files'
/// contents to a second store, which gets the files under its own folder, and a column synced
/// under another field name.
@Suite("Record processors through the CLI", .heavy)
struct ProcessorCLITests {
    static let config = """
        gateway: { state_dir: state }
        cloud: { kind: embedded, path: cloud.sqlite }
        adapters:
          - name: a
            kind: sqlite
            path: a.sqlite
            zone: Photos
            tables:
              - table: photo
                record_type: Photo
                processors:
                  - { kind: rename, from: caption, to: headline }
                  - { kind: file_reference, field: image, folder: files-a }
          - name: b
            kind: sqlite
            path: b.sqlite
            zone: Photos
            tables:
              - table: photo
                record_type: Photo
                processors: [{ kind: file_reference, field: image, folder: files-b }]
        """

    static func hex(_ data: Data) -> String { AssetChecksum.of(data) }

    @Test("a column of file paths syncs the files' contents; the other store gets them under its own folder; a path outside the folder or to no file stops that adapter, naming it, until fixed")
    func fileReferencesAndRename() async throws {
        let directory = try TemporaryDirectory(prefix: "processors")
        defer { directory.remove() }
        let cat = Data((0..<5000).map { UInt8($0 % 251) })
        let dog = Data("woof".utf8)
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("files-a/sub"), withIntermediateDirectories: true)
        try cat.write(to: directory.url.appendingPathComponent("files-a/cat.png"))
        try dog.write(to: directory.url.appendingPathComponent("files-a/sub/dog.png"))
        try Data("secret".utf8).write(to: directory.url.appendingPathComponent("secret.txt"))
        let a = try DatabaseQueue(path: directory.path("a.sqlite"))
        try await a.write { db in
            try db.execute(sql: "CREATE TABLE photo (id INTEGER PRIMARY KEY, caption TEXT, image TEXT)")
            try db.execute(sql: "INSERT INTO photo VALUES (1, 'a cat', 'cat.png'), (2, 'a dog', 'sub/dog.png'), (5, 'no picture', NULL)")
        }
        let b = try DatabaseQueue(path: directory.path("b.sqlite"))
        try await b.write { db in try db.execute(sql: "CREATE TABLE photo (id INTEGER PRIMARY KEY, headline TEXT, image TEXT)") }
        try Data(Self.config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))

        let sync = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(sync.status == 0, "\(sync)")
        let rows = try await b.read { db in
            try Row.fetchAll(db, sql: "SELECT id, headline, image FROM photo ORDER BY id").map { ($0[0] as Int64, $0[1] as String?, $0[2] as String?) }
        }
        #expect(rows.map(\.1) == ["a cat", "a dog", "no picture"], "caption travels as headline")
        #expect(rows.map(\.2) == [Self.hex(cat), Self.hex(dog), nil], "files arrive under their content's name")
        #expect(FileManager.default.contents(atPath: directory.path("files-b/\(Self.hex(cat))")) == cat)
        #expect(FileManager.default.contents(atPath: directory.path("files-b/\(Self.hex(dog))")) == dog)

        // A path leading out of the folder, or to no file: adapter a stops, naming the record and
        // the path; nothing of it is sent, and b keeps syncing.
        for bad in ["../secret.txt", "nope.png"] {
            try await a.write { db in try db.execute(sql: "INSERT OR REPLACE INTO photo VALUES (3, 'bad', ?)", arguments: [bad]) }
            let refused = try await GatewayCLI.run(["sync"], in: directory.url)
            #expect(refused.status == 1, "\(refused)")
            #expect(refused.stdout.contains("record 3: field image names '\(bad)'"), "\(refused)")
            #expect(try await b.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM photo WHERE id = 3") } == 0)
        }
        try await a.write { db in try db.execute(sql: "UPDATE photo SET image = 'sub/dog.png' WHERE id = 3") }
        let fixed = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(fixed.status == 0, "\(fixed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path("files-b")).count == 2, "the secret outside the folder was never sent")

        // b's edit comes back to a under a's names; the picture is still the same bytes.
        try await b.write { db in try db.execute(sql: "UPDATE photo SET headline = 'the cat' WHERE id = 1") }
        let again = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(again.status == 0, "\(again)")
        let back = try a.read { db in try Row.fetchOne(db, sql: "SELECT caption, image FROM photo WHERE id = 1") }
        #expect(back?[0] as String? == "the cat")
        let image = try #require(back?[1] as String?)
        #expect(FileManager.default.contents(atPath: directory.path("files-a/\(image)")) == cat, "a's row names a file under its folder with the same bytes")
        let quiet = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(quiet.stdout.contains("Nothing to do"), "nothing churns: \(quiet)")
    }

    @Test("a rename onto a name the table also has as a column, or encrypting a renamed field, is refused before anything syncs")
    func refusedRenames() async throws {
        let directory = try TemporaryDirectory(prefix: "processors-refused")
        defer { directory.remove() }
        let a = try DatabaseQueue(path: directory.path("a.sqlite"))
        try await a.write { db in try db.execute(sql: "CREATE TABLE photo (id INTEGER PRIMARY KEY, caption TEXT, headline TEXT, image TEXT)") }
        let config = Self.config
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let collision = try await GatewayCLI.run(["validate"], in: directory.url)
        #expect(collision.status != 0, "\(collision)")
        #expect(collision.stderr.contains("renames a column to headline, which is also a column of the table"), "\(collision)")

        let encrypted = config.replacingOccurrences(of: "record_type: Photo\n        processors:\n          - { kind: rename", with: "record_type: Photo\n        encrypted: [caption]\n        processors:\n          - { kind: rename")
        #expect(encrypted != config)
        try Data(encrypted.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let refused = try await GatewayCLI.run(["validate"], in: directory.url)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("field 'caption' is renamed by a processor"), "\(refused)")
    }
}
