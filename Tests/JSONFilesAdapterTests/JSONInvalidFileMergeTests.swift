import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import JSONFilesAdapter
import SQLiteAdapter
import Testing

/// A downloaded record whose file is invalid on disk is not written, and the folder's copy keeps
/// its common ancestor with the cloud: once the file is fixed, whatever it then holds meets the
/// cloud's newer version through a merge, so an edit made elsewhere meanwhile is never undone
/// (DESIGN D4).
@Suite("JSON files: a download held back by an invalid file")
struct JSONInvalidFileMergeTests {
    struct Setup {
        let directory: TemporaryDirectory
        let folder: URL
        let databasePath: String
        let cloud: EmbeddedCloud
        let sqliteSync: Synchronizer
        let jsonSync: Synchronizer

        let layout: JSONFilesAdapterConfiguration.Layout

        init(_ layout: JSONFilesAdapterConfiguration.Layout) async throws {
            self.layout = layout
            directory = try TemporaryDirectory(prefix: "json-invalid-merge")
            folder = directory.url.appendingPathComponent("docs")
            file = folder.appendingPathComponent(layout == .filePerRecord ? "Article/d1.json" : "Article.json")
            try JSONFilesBehaviourTests.write(Self.text("{\"title\": \"t0\", \"n\": 1}", layout), to: file)
            databasePath = directory.path("app.sqlite")
            cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            sqliteSync = try await JSONFilesBehaviourTests.sqliteArticles(at: databasePath, columns: "title TEXT, n INTEGER", cloud: cloud, device: "db")
            jsonSync = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try JSONFilesBehaviourTests.adapter(folder, layout: layout))],
                configuration: SyncConfiguration(deviceID: "json"))
            #expect(try await jsonSync.sync().succeeded)
            #expect(try await sqliteSync.sync().succeeded)
            #expect(try row("d1")?.title == "t0")
        }

        /// The document that holds record d1: its own file, or the record type's collection.
        let file: URL

        /// `object` as the document of d1 in `layout`.
        static func text(_ object: String, _ layout: JSONFilesAdapterConfiguration.Layout) -> String {
            layout == .filePerRecord ? object : "{\"d1\": \(object)}"
        }

        func writeFile(_ object: String) throws { try JSONFilesBehaviourTests.write(Self.text(object, layout), to: file) }

        /// Record d1 as its document holds it.
        func document() throws -> [String: Any]? {
            guard let data = try? Data(contentsOf: file), let top = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return layout == .filePerRecord ? top : top["d1"] as? [String: Any]
        }

        func execute(_ sql: String) async throws {
            try await DatabaseQueue(path: databasePath).write { db in try db.execute(sql: sql) }
        }

        func row(_ name: String) throws -> (title: String?, n: Int?)? {
            try DatabaseQueue(path: databasePath).read { db in
                try Row.fetchOne(db, sql: "SELECT title, n FROM Article WHERE name = ?", arguments: [name]).map { ($0["title"], $0["n"]) }
            }
        }

        /// The file goes invalid while the database edits the record, and both sync: the edit
        /// reaches the cloud, and the folder's download of it is held back.
        func editWhileInvalid(_ edit: String) async throws {
            let broken = Self.text("{\"title\": \"t1-broken\", \"n\": 1", layout)
            try JSONFilesBehaviourTests.write(broken, to: file)
            try await execute(edit)
            #expect(try await sqliteSync.sync().succeeded)
            _ = try await jsonSync.sync()
            #expect(try String(contentsOf: file, encoding: .utf8) == broken, "the invalid file is left as it is")
        }
    }

    @Test("fixed with an edit of another field: both edits survive", arguments: [JSONFilesAdapterConfiguration.Layout.filePerRecord, .collection])
    func fixedWithAnEdit(layout: JSONFilesAdapterConfiguration.Layout) async throws {
        let setup = try await Setup(layout)
        defer { setup.directory.remove() }
        try await setup.editWhileInvalid("UPDATE Article SET n = 100 WHERE name = 'd1'")
        try setup.writeFile("{\"title\": \"t1\", \"n\": 1}")
        #expect(try await setup.jsonSync.sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.row("d1")?.title == "t1")
        #expect(try setup.row("d1")?.n == 100, "the database's edit made while the file was invalid is kept")
        #expect(try setup.document()?["n"] as? Int == 100)
        #expect(try setup.document()?["title"] as? String == "t1")
    }

    @Test("fixed back to what it held before: the cloud's newer version arrives", arguments: [JSONFilesAdapterConfiguration.Layout.filePerRecord, .collection])
    func fixedBackUnchanged(layout: JSONFilesAdapterConfiguration.Layout) async throws {
        let setup = try await Setup(layout)
        defer { setup.directory.remove() }
        try await setup.editWhileInvalid("UPDATE Article SET n = 100 WHERE name = 'd1'")
        try setup.writeFile("{\"title\": \"t0\", \"n\": 1}")
        #expect(try await setup.jsonSync.sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.document()?["n"] as? Int == 100, "the folder converges on the edit it could not take while invalid")
        #expect(try setup.row("d1")?.n == 100)
    }

    @Test("deleted once it was invalid: the edit made meanwhile beats the delete", arguments: [JSONFilesAdapterConfiguration.Layout.filePerRecord, .collection])
    func deletedAfterward(layout: JSONFilesAdapterConfiguration.Layout) async throws {
        let setup = try await Setup(layout)
        defer { setup.directory.remove() }
        try await setup.editWhileInvalid("UPDATE Article SET title = 'edited in the database' WHERE name = 'd1'")
        if layout == .filePerRecord {
            try FileManager.default.removeItem(at: setup.file)
        } else {
            try JSONFilesBehaviourTests.write("{}", to: setup.file)
        }
        let report = try await setup.jsonSync.sync()
        #expect(report.succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.row("d1")?.title == "edited in the database", "the edit is not deleted")
        #expect(try setup.document()?["title"] as? String == "edited in the database", "the file comes back with the edit")
    }
}
