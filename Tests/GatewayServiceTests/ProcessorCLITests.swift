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

    @Test("a column of file paths syncs the files' contents; the other store gets them under its own folder; a path outside the folder or to no file is never sent")
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
            try db.execute(
                sql: """
                    INSERT INTO photo VALUES (1, 'a cat', 'cat.png'), (2, 'a dog', 'sub/dog.png'), (3, 'escape', '../secret.txt'),
                                             (4, 'missing', 'nope.png'), (5, 'no picture', NULL)
                    """)
        }
        let b = try DatabaseQueue(path: directory.path("b.sqlite"))
        try await b.write { db in try db.execute(sql: "CREATE TABLE photo (id INTEGER PRIMARY KEY, headline TEXT, image TEXT)") }
        try Data(Self.config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))

        let sync = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(sync.status == 0, "\(sync)")
        let rows = try await b.read { db in
            try Row.fetchAll(db, sql: "SELECT id, headline, image FROM photo ORDER BY id").map { ($0[0] as Int64, $0[1] as String?, $0[2] as String?) }
        }
        #expect(rows.map(\.1) == ["a cat", "a dog", "escape", "missing", "no picture"], "caption travels as headline")
        #expect(rows.map(\.2) == [Self.hex(cat), Self.hex(dog), nil, nil, nil], "files arrive under their content's name; nothing else")
        #expect(FileManager.default.contents(atPath: directory.path("files-b/\(Self.hex(cat))")) == cat)
        #expect(FileManager.default.contents(atPath: directory.path("files-b/\(Self.hex(dog))")) == dog)
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
}
