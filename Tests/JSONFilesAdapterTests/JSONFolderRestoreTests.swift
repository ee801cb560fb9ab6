@testable import AdapterKit
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import JSONFilesAdapter
import SQLiteAdapter
import Testing

/// A JSON folder replaced or restored from an older copy never rolls the zone back (DESIGN D4):
/// the identity marker in `.gateway/store.json` travels with every copy of the folder.
@Suite("JSON folders restored or replaced")
struct JSONFolderRestoreTests {
    struct Setup {
        let directory: TemporaryDirectory
        let folder: URL
        let databasePath: String
        let cloud: EmbeddedCloud
        let sqliteSync: Synchronizer

        init() async throws {
            directory = try TemporaryDirectory(prefix: "json-restore")
            folder = directory.url.appendingPathComponent("docs")
            try JSONFilesBehaviourTests.write("{\"title\": \"one\"}", to: folder.appendingPathComponent("Article/1.json"))
            try JSONFilesBehaviourTests.write("{\"title\": \"two\"}", to: folder.appendingPathComponent("Article/2.json"))
            databasePath = directory.path("app.sqlite")
            cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            sqliteSync = try await JSONFilesBehaviourTests.sqliteArticles(at: databasePath, columns: "title TEXT", cloud: cloud, device: "gateway")
        }

        func jsonSync() throws -> Synchronizer {
            Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try JSONFilesBehaviourTests.adapter(folder))],
                configuration: SyncConfiguration(deviceID: "gateway"))
        }

        func title(_ name: String) throws -> String? {
            try DatabaseQueue(path: databasePath).read { db in try String.fetchOne(db, sql: "SELECT title FROM Article WHERE name = ?", arguments: [name]) }
        }

        func document(_ name: String) throws -> String {
            try String(contentsOf: folder.appendingPathComponent("Article/\(name).json"), encoding: .utf8)
        }

        /// Leaves the journal `body` builds (from the state as it finds it) in the adapter's
        /// state, as a gateway killed between writing a downloaded page and committing it does.
        func leaveJournal(_ body: @escaping @Sendable (Database) throws -> KitJournal) async throws {
            let state = try DatabaseQueue(path: JSONFilesBehaviourTests.configuration(folder).statePath)
            try await state.write { db in
                let journal = try body(db)
                try db.execute(sql: "INSERT OR REPLACE INTO journal (id, data) VALUES (1, ?)", arguments: [journal.encoded()])
            }
            try state.close()
        }

        /// `cp -a`: the copy keeps the files' times.
        func copy(_ from: URL, to: URL) throws { try TemporaryDirectory.copyPreservingTimes(from: from, to: to) }
    }

    @Test("a folder restored with cp -a from a copy taken after a sync, before a newer edit arrived, takes the newer edit")
    func restoredFromOlderCopy() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        let backup = setup.directory.url.appendingPathComponent("docs-backup")
        try setup.copy(setup.folder, to: backup)

        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET title = 'edited in SQLite' WHERE name = '1'")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try setup.document("1").contains("edited in SQLite"))

        try FileManager.default.removeItem(at: setup.folder)
        try setup.copy(backup, to: setup.folder)
        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "the restored document met the newer version without a common ancestor")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in SQLite", "the newer edit was not rolled back")
        #expect(try setup.document("1").contains("edited in SQLite"))
        #expect(try setup.title("2") == "two")
    }

    @Test("one document put back from an older copy with its times (the folder's marker untouched) rejoins instead of rolling the zone back")
    func documentRestoredInPlace() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        let document = setup.folder.appendingPathComponent("Article/1.json")
        let backup = setup.directory.url.appendingPathComponent("1.json.bak")
        try setup.copy(document, to: backup)
        // The copy is older than what the folder holds next, whatever the clock's resolution.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: backup.path)

        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET title = 'edited in SQLite' WHERE name = '1'")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try setup.document("1").contains("edited in SQLite"))

        try FileManager.default.removeItem(at: document)
        try setup.copy(backup, to: document)
        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "the older copy met the cloud's version without a common ancestor")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in SQLite", "the newer edit was not rolled back")
        #expect(try setup.document("1").contains("edited in SQLite"))
    }

    @Test("a document edited after the machine's clock was stepped back is an edit, not a restore: it reaches the other stores")
    func editUnderClockSteppedBack() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        // The gateway last read the documents while the clock was an hour ahead (NTP then stepped
        // it back): every time it recorded is later than any write made now.
        let index = try DatabaseQueue(path: JSONFilesBehaviourTests.configuration(setup.folder).indexPath)
        try await index.write { db in try db.execute(sql: "UPDATE files SET mtime = mtime + 3600000000000") }
        try index.close()

        try JSONFilesBehaviourTests.write("{\"title\": \"edited in JSON\"}", to: setup.folder.appendingPathComponent("Article/1.json"))
        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0, "an edit written under the stepped clock has its ancestor")
        #expect(report.adapters[0].uploaded == 1)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in JSON")
    }

    @Test("a folder restored after the gateway died writing a download rejoins: the interrupted write is not replayed into the copy")
    func restoredAfterInterruptedDownload() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        let original = setup.directory.url.appendingPathComponent("docs-original")
        try setup.copy(setup.folder, to: original)
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('3', 'three'), ('4', 'four')")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)

        // The gateway was killed writing the page that held document 4 (its journal stays), and
        // the operator then put back the folder as it was before the first sync.
        try await setup.leaveJournal { db in
            let zoneState = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") ?? Data()
            let four = Record(id: RecordID(recordName: "4", zoneID: JSONFilesBehaviourTests.zone), recordType: "Article", fields: ["title": .string("four")])
            let journal = KitJournal(saves: [four], deletes: [], before: [:], update: SyncStateUpdate(zoneState: zoneState), skipped: [])
            return journal
        }
        try FileManager.default.removeItem(at: setup.folder)
        try setup.copy(original, to: setup.folder)

        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].deletedRemotely == 0, "a document the copy predates is no delete")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("3") == "three")
        #expect(try setup.title("4") == "four")
        #expect(try setup.document("3").contains("three"), "the rejoin downloaded the zone from the start")
        #expect(try setup.document("4").contains("four"))
    }

    @Test("a copy taken while the folder's marker was ahead of the kit's state (the gateway killed between the two) is still a copy")
    func restoredFromCopyTakenAheadOfState() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)

        // The gateway was killed after moving the epoch in the folder, before its state recorded
        // the move; the operator then copied the folder.
        let markerURL = setup.folder.appendingPathComponent(".gateway/store.json")
        var marker = try JSONDecoder().decode(KitStoreIdentity.self, from: Data(contentsOf: markerURL))
        marker.epoch += 1
        try JSONEncoder().encode(marker).write(to: markerURL)
        let backup = setup.directory.url.appendingPathComponent("docs-backup")
        try setup.copy(setup.folder, to: backup)

        // After the copy, a new row arrives from SQLite; then the copy is put back.
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('3', 'three')")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try setup.document("3").contains("three"))
        try FileManager.default.removeItem(at: setup.folder)
        try setup.copy(backup, to: setup.folder)

        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].deletedRemotely == 0, "the document the copy predates is no delete")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("3") == "three")
        #expect(try setup.document("3").contains("three"), "the copy was recognised and the zone downloaded again")
    }

    @Test("a document deleted in a folder restored from a copy that held it is deleted everywhere; one the copy predates comes back")
    func deletedAfterRestore() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        let backup = setup.directory.url.appendingPathComponent("docs-backup")
        try setup.copy(setup.folder, to: backup)

        // After the copy: an edit and a new row arrive from SQLite.
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET title = 'edited in SQLite' WHERE name = '1'")
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('3', 'three')")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)

        // The operator restores the copy, then the application deletes document 2, which the
        // copy held.
        try FileManager.default.removeItem(at: setup.folder)
        try setup.copy(backup, to: setup.folder)
        try FileManager.default.removeItem(at: setup.folder.appendingPathComponent("Article/2.json"))
        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].deletedRemotely == 1, "the delete made after the restore was uploaded")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("2") == nil, "the delete reached the other store")
        #expect(try setup.title("1") == "edited in SQLite", "the newer edit was not rolled back")
        #expect(try setup.title("3") == "three", "the row the copy predates is no delete")
        #expect(try setup.document("3").contains("three"))
    }

    @Test("documents the gateway created just before it died: one edited keeps the edit; one rewritten whole cannot be told from a stranger's and joins")
    func editOfInterruptedCreate() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        try await DatabaseQueue(path: setup.databasePath).write { db in try db.execute(sql: "ALTER TABLE Article ADD COLUMN note TEXT") }
        #expect(try await setup.jsonSync().sync().succeeded)
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "INSERT INTO Article (name, title, note) VALUES ('3', 'three', 'a note'), ('4', 'four', 'another')")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)

        // The gateway died after writing documents 3 and 4 and before committing its state: the
        // journal stays, the state has no trace of them.
        try await setup.leaveJournal { db in
            let zoneState = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") ?? Data()
            var saves: [Record] = []
            var metadata: [RecordID: Data] = [:]
            for (name, title, note) in [("3", "three", "a note"), ("4", "four", "another")] {
                let id = RecordID(recordName: name, zoneID: JSONFilesBehaviourTests.zone)
                saves.append(Record(id: id, recordType: "Article", fields: ["title": .string(title), "note": .string(note)]))
                metadata[id] = try Data.fetchOne(db, sql: "SELECT data FROM metadata WHERE record_name = ?", arguments: [name])
            }
            let journal = KitJournal(saves: saves, deletes: [], before: [:], update: SyncStateUpdate(metadata: metadata, zoneState: zoneState), skipped: [])
            try db.execute(sql: "DELETE FROM metadata WHERE record_name IN ('3', '4'); DELETE FROM records WHERE record_name IN ('3', '4')")
            return journal
        }
        // Document 3's note is edited (its title still holds what the gateway wrote); document
        // 4 is rewritten whole, as by a program that created it at the same time.
        try JSONFilesBehaviourTests.write(
            "{\"note\": \"edited in JSON\", \"title\": \"three\"}", to: setup.folder.appendingPathComponent("Article/3.json"))
        try JSONFilesBehaviourTests.write(
            "{\"note\": \"mine\", \"title\": \"mine\"}", to: setup.folder.appendingPathComponent("Article/4.json"))

        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 1, "document 3's edit has the gateway's write as its ancestor; document 4 joins")
        #expect(try await setup.sqliteSync.sync().succeeded)
        let notes = try await DatabaseQueue(path: setup.databasePath).read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT name, note FROM Article WHERE name IN ('3', '4')").map { ($0[0] as String, $0[1] as String?) })
        }
        #expect(notes["3"] == "edited in JSON")
        #expect(notes["4"] == "another", "without a common ancestor the cloud's version wins (join_prefers: cloud), reported")
    }

    @Test("a document the gateway updated just before it died, then edited by the application in a field the update changed, keeps the edit")
    func editOfInterruptedUpdate() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        try await DatabaseQueue(path: setup.databasePath).write { db in try db.execute(sql: "ALTER TABLE Article ADD COLUMN note TEXT") }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        let statePath = JSONFilesBehaviourTests.configuration(setup.folder).statePath
        let (oldMetadata, oldObserved) = try await DatabaseQueue(path: statePath).read { db in
            (try Data.fetchOne(db, sql: "SELECT data FROM metadata WHERE record_name = '1'"),
             try String.fetchOne(db, sql: "SELECT observed FROM records WHERE record_name = '1'"))
        }
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET title = 'two titles', note = 'a note' WHERE name = '1'")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)

        // The gateway died after writing that update into document 1 and before committing its
        // state: the journal stays, and the state still holds the version before the update.
        try await setup.leaveJournal { db in
            let zoneState = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") ?? Data()
            let metadata = try #require(try Data.fetchOne(db, sql: "SELECT data FROM metadata WHERE record_name = '1'"))
            let id = RecordID(recordName: "1", zoneID: JSONFilesBehaviourTests.zone)
            let update = Record(id: id, recordType: "Article", fields: ["title": .string("two titles"), "note": .string("a note")])
            var journal = KitJournal(
                saves: [update], deletes: [], before: [RecordName("1"): try #require(oldObserved)],
                update: SyncStateUpdate(metadata: [id: metadata], zoneState: zoneState), skipped: [])
            journal.changedFields = [RecordName("1"): ["note", "title"]]
            try db.execute(sql: "UPDATE metadata SET data = ? WHERE record_name = '1'", arguments: [oldMetadata])
            try db.execute(sql: "UPDATE records SET observed = ? WHERE record_name = '1'", arguments: [oldObserved])
            return journal
        }
        // The application edits the title the update had changed; the note still holds its value.
        try JSONFilesBehaviourTests.write(
            "{\"note\": \"a note\", \"title\": \"edited in JSON\"}", to: setup.folder.appendingPathComponent("Article/1.json"))

        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0, "the edit has the gateway's update as its ancestor")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in JSON")
    }

    @Test("a document of its own the gateway was overwriting when it died, then deleted by the application, comes back: the page downloads again")
    func deleteOfInterruptedWrite() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "INSERT INTO Article (name, title) VALUES ('3', 'three')")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        let statePath = JSONFilesBehaviourTests.configuration(setup.folder).statePath
        let before = try await DatabaseQueue(path: statePath).read { db in try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") }
        #expect(try await setup.jsonSync().sync().succeeded)

        // The folder had a document 3 of its own, never synced; the gateway died writing the
        // cloud's version over it: its state is where it was before that page (it saw the
        // folder's own document), and the journal holds the page.
        try await setup.leaveJournal { db in
            let after = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") ?? Data()
            let id = RecordID(recordName: "3", zoneID: JSONFilesBehaviourTests.zone)
            var metadata: [RecordID: Data] = [:]
            metadata[id] = try Data.fetchOne(db, sql: "SELECT data FROM metadata WHERE record_name = '3'")
            let own = KitRecordObservation.observed(Record(id: id, recordType: "Article", fields: ["title": .string("mine")]))
            let journal = KitJournal(
                saves: [Record(id: id, recordType: "Article", fields: ["title": .string("three")])], deletes: [], before: [RecordName("3"): own],
                update: SyncStateUpdate(metadata: metadata, zoneState: after), skipped: [])
            try db.execute(sql: "DELETE FROM metadata WHERE record_name = '3'")
            try db.execute(sql: "UPDATE records SET observed = ? WHERE record_name = '3'", arguments: [own])
            try db.execute(sql: "UPDATE zone SET state = ? WHERE id = 1", arguments: [before])
            return journal
        }
        // The application deletes the document (the write had landed, or it had its own).
        try FileManager.default.removeItem(at: setup.folder.appendingPathComponent("Article/3.json"))

        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try setup.document("3").contains("three"), "the store does not silently lack a record the zone holds")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("3") == "three")
    }

    @Test("a journal round-trips with the fields its saves change, and one written by an earlier release (without them) still decodes")
    func journalFormats() throws {
        let zone = JSONFilesBehaviourTests.zone
        let id = RecordID(recordName: "1", zoneID: zone)
        var journal = KitJournal(
            saves: [Record(id: id, recordType: "Article", fields: ["title": .string("one")])], deletes: [], before: [RecordName("1"): "h:00"],
            update: SyncStateUpdate(zoneState: Data("t".utf8)), skipped: [])
        journal.changedFields = [RecordName("1"): ["note", "title"]]
        let decoded = try KitJournal.decode(journal.encoded(), zone: zone, statePath: "state.sqlite")
        #expect(decoded.changedFields == journal.changedFields)
        #expect(decoded.saves.map(\.id) == [id])

        // An earlier release wrote the journal up to the sending set: no trailing section.
        journal.changedFields = [:]
        let earlier = journal.encoded().dropLast()
        let old = try KitJournal.decode(Data(earlier), zone: zone, statePath: "state.sqlite")
        #expect(old.changedFields.isEmpty)
        #expect(old.before == journal.before)
    }

    @Test("a new folder at the adapter's path (a typo, a fresh copy without the marker) joins the zone instead of overwriting it")
    func replacedFolder() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        try await DatabaseQueue(path: setup.databasePath).write { db in
            try db.execute(sql: "UPDATE Article SET title = 'edited in SQLite' WHERE name = '2'")
        }
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try setup.document("2").contains("edited in SQLite"))

        // The folder is replaced by the original documents, without the marker.
        try FileManager.default.removeItem(at: setup.folder)
        try JSONFilesBehaviourTests.write("{\"title\": \"one\"}", to: setup.folder.appendingPathComponent("Article/1.json"))
        try JSONFilesBehaviourTests.write("{\"title\": \"two\"}", to: setup.folder.appendingPathComponent("Article/2.json"))
        let report = try await setup.jsonSync().sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 0)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("2") == "edited in SQLite")
        #expect(try setup.document("2").contains("edited in SQLite"))
    }

    @Test("a restored folder keeps the ancestor of a document it holds as the kit last saw it: an edit the backup held stays an edit")
    func restoredEditStaysAnEdit() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        let failing = FaultInjectingCloud(wrapping: setup.cloud, plan: .none, seed: 1)
        func jsonSync(_ cloud: any CloudDatabase) throws -> Synchronizer {
            Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try JSONFilesBehaviourTests.adapter(setup.folder))],
                configuration: SyncConfiguration(deviceID: "gateway", retry: RetryPolicy(maxAttempts: 1)))
        }
        #expect(try await jsonSync(setup.cloud).sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)

        // Document 1 is edited and backed up; the upload of the edit fails, so the kit has seen
        // the edit (its epoch moved on) but the cloud has not.
        try JSONFilesBehaviourTests.write("{\"title\": \"edited in JSON\"}", to: setup.folder.appendingPathComponent("Article/1.json"))
        let backup = setup.directory.url.appendingPathComponent("docs-backup")
        failing.script(.error(CloudError(.networkFailure, "reset")), on: .modify)
        #expect(try await jsonSync(failing).sync().succeeded == false)
        try setup.copy(setup.folder, to: backup)
        try JSONFilesBehaviourTests.write("{\"title\": \"edited again\"}", to: setup.folder.appendingPathComponent("Article/2.json"))
        failing.script(.error(CloudError(.networkFailure, "reset")), on: .modify)
        #expect(try await jsonSync(failing).sync().succeeded == false)

        try FileManager.default.removeItem(at: setup.folder)
        try setup.copy(backup, to: setup.folder)
        let report = try await jsonSync(setup.cloud).sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0, "document 1 is the edit the kit saw, not a stranger to the cloud's version")
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in JSON")
    }

    @Test("an ordinary edit after a sync is still an edit: the marker moves with the kit, not against it")
    func ordinaryEdits() async throws {
        let setup = try await Setup()
        defer { setup.directory.remove() }
        #expect(try await setup.jsonSync().sync().succeeded)
        #expect(try await setup.sqliteSync.sync().succeeded)
        try JSONFilesBehaviourTests.write("{\"title\": \"edited in JSON\"}", to: setup.folder.appendingPathComponent("Article/1.json"))
        let report = try await setup.jsonSync().sync()
        #expect(report.adapters[0].uploaded == 1)
        #expect(report.adapters[0].conflictCount == 0)
        #expect(try await setup.sqliteSync.sync().succeeded)
        #expect(try setup.title("1") == "edited in JSON")
        let marker = try String(contentsOf: setup.folder.appendingPathComponent(".gateway/store.json"), encoding: .utf8)
        #expect(marker.contains("\"epoch\""))
    }
}
