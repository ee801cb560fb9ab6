import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import JSONFilesAdapter
import SQLiteAdapter
import Testing

/// A document that lacks a key leaves that field unknown: the cloud keeps its value, and the
/// document receives it back, so the folder and the cloud end up holding the same record.
@Suite("JSON documents that lack a key")
struct JSONPartialDocumentTests {
    @Test("a document rewritten without a key keeps the cloud's value and gets it back in the same sync")
    func missingKeyComesBack() async throws {
        let directory = try TemporaryDirectory(prefix: "json-partial")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("docs")
        let document = folder.appendingPathComponent("Article/1.json")
        try JSONFilesBehaviourTests.write("{\"title\": \"one\"}", to: document)
        let databasePath = directory.path("app.sqlite")
        try await DatabaseQueue(path: databasePath).write { db in
            try db.execute(sql: "CREATE TABLE Article (name TEXT PRIMARY KEY, title TEXT, body TEXT)")
        }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let sqlite = Synchronizer(
            cloud: cloud,
            adapters: [
                SyncedAdapter(
                    try SQLiteAdapter(
                        configuration: SQLiteAdapterConfiguration(
                            name: "app", path: databasePath, zoneID: JSONFilesBehaviourTests.zone, tables: [TableMapping(table: "Article")])))
            ],
            configuration: SyncConfiguration(deviceID: "gateway"))
        func json() throws -> Synchronizer {
            Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try JSONFilesBehaviourTests.adapter(folder))], configuration: SyncConfiguration(deviceID: "gateway"))
        }
        #expect(try await json().sync().succeeded)
        #expect(try await sqlite.sync().succeeded)
        try await DatabaseQueue(path: databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET body = 'written in SQLite' WHERE name = '1'")
        }
        #expect(try await sqlite.sync().succeeded)
        #expect(try await json().sync().succeeded)
        #expect(try String(contentsOf: document, encoding: .utf8).contains("written in SQLite"))

        // The application rewrites the document without the key it does not use.
        try JSONFilesBehaviourTests.write("{\"title\": \"edited in JSON\"}", to: document)
        // One sync: the upload, then a follow-up pass that downloads the record the cloud completed.
        let upload = try await json().sync()
        #expect(upload.adapters[0].uploaded == 1)
        #expect(upload.adapters[0].downloaded == 1, "the follow-up pass brought the cloud's completed version")
        #expect(upload.adapters[0].conflictCount == 0)
        let text = try String(contentsOf: document, encoding: .utf8)
        #expect(text.contains("edited in JSON"))
        #expect(text.contains("written in SQLite"), "the document received the field the cloud kept, in the same sync")
        let quiet = try await json().sync()
        #expect(quiet.succeeded && quiet.adapters[0].downloaded == 0 && quiet.adapters[0].uploaded == 0, "and the folder is quiet afterwards")

        #expect(try await sqlite.sync().succeeded)
        let row = try DatabaseQueue(path: databasePath).read { db in
            try Row.fetchOne(db, sql: "SELECT title, body FROM Article WHERE name = '1'")
        }
        #expect(row?["title"] == "edited in JSON")
        #expect(row?["body"] == "written in SQLite")
    }
}
