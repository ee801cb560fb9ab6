import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import TestScheduling
import Testing

/// What operators do to stores behind the gateway's back: restore a backup, replace a file, run
/// an older schema. None of it may undo a write that reached the zone (DESIGN D4).
@Suite("SQLite stores replaced, restored and on older schemas", .heavy)
struct StoreIdentityTests {
    struct Pair {
        let directory: TemporaryDirectory
        let cloud: EmbeddedCloud
        let fileA: SQLiteFile
        let fileB: SQLiteFile

        init(schema: String = Notes.schema) throws {
            directory = try TemporaryDirectory(prefix: "store-identity")
            cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            fileA = try SQLiteFile(directory, name: "a.sqlite", schema: schema)
            fileB = try SQLiteFile(directory, name: "b.sqlite", schema: schema)
        }

        /// A pair whose stores both hold notes 1 and 2, synced through the cloud.
        static func syncingTwoNotes() async throws -> Pair {
            let pair = try Pair()
            try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1)"#)
            try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('2', 'two', 2)"#)
            #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
            #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
            return pair
        }

        func synchronizer(_ file: SQLiteFile, name: String, joinPrefers: JoinPreference = .cloud, policy: MergePolicy = .merge, prefers: MergePreference = .server) throws
            -> Synchronizer
        {
            Synchronizer(
                cloud: cloud,
                adapters: [
                    SyncedAdapter(
                        try Notes.adapter(file, name: name),
                        options: AdapterSyncOptions(merge: MergeSettings(policy: policy, prefers: prefers), joinPrefers: joinPrefers))
                ],
                configuration: SyncConfiguration(deviceID: "gateway"))
        }
    }

    /// Copies a SQLite file as `sqlite3 .backup` would (a consistent snapshot).
    static func backup(_ file: SQLiteFile, to path: String) throws {
        let target = try DatabaseQueue(path: path)
        try file.database.backup(to: target)
        try target.close()
    }

    static func restore(_ path: String, over file: SQLiteFile, directory: TemporaryDirectory) throws -> SQLiteFile {
        try file.database.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) }
        try FileManager.default.copyItem(atPath: path, toPath: file.path)
        return try SQLiteFile(directory, name: (file.path as NSString).lastPathComponent, schema: "SELECT 1")
    }

    @Test(
        "a store restored from a backup taken before its first sync joins the zone: the cloud's newer values win and are reported",
        arguments: [MergePreference.server, .client])
    func restoredBeforeFirstSync(prefers: MergePreference) async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 1...3 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        let backupPath = pair.directory.path("a-before-sync.sqlite")
        try Self.backup(pair.fileA, to: backupPath)

        // Both adapters are one gateway's (one device id), as in the default config.
        let a = try pair.synchronizer(pair.fileA, name: "a", prefers: prefers)
        let b = try pair.synchronizer(pair.fileB, name: "b", prefers: prefers)
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE name = '1'"#)
        try pair.fileA.execute(#"DELETE FROM "Note" WHERE name = '3'"#)
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        #expect(try Notes.contents(pair.fileB)["1"]?["title"] == .string("edited in a"))

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        let rejoined = try pair.synchronizer(restored, name: "a", prefers: prefers)
        let report = try await rejoined.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 2, "row 1 (edited) and row 3 (deleted) met the cloud without a common ancestor")
        #expect(report.adapters[0].conflicts[.serverWon] == 2)
        #expect(try await b.sync().succeeded)
        let expected: [String: [String: FieldValue]] = [
            "1": ["title": .string("edited in a"), "rank": .int64(1)], "2": ["title": .string("one"), "rank": .int64(2)],
        ]
        #expect(try Notes.contents(restored) == expected, "the restored store took the zone's values and its deletion")
        #expect(try Notes.contents(pair.fileB) == expected, "the other store kept the newer edit")
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone) == expected)
    }

    @Test("--store-wins: a restored store declared the truth uploads its values over the zone's")
    func restoredStoreWins() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1)"#)
        let backupPath = pair.directory.path("a-before-sync.sqlite")
        try Self.backup(pair.fileA, to: backupPath)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE name = '1'"#)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        let report = try await pair.synchronizer(restored, name: "a", joinPrefers: .store).sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.localWon] == 1)
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone) == ["1": ["title": .string("one"), "rank": .int64(1)]])
    }

    @Test("a store restored from a backup taken after a sync keeps its stale pending edit below the newer cloud value")
    func restoredAfterSync() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1)"#)
        let a = try pair.synchronizer(pair.fileA, name: "a")
        #expect(try await a.sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'x1' WHERE name = '1'"#)
        let backupPath = pair.directory.path("a-pending.sqlite")
        try Self.backup(pair.fileA, to: backupPath)
        #expect(try await a.sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'x2' WHERE name = '1'"#)
        #expect(try await a.sync().succeeded)

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        #expect(try await pair.synchronizer(restored, name: "a").sync().succeeded)
        #expect(try Notes.contents(restored)["1"]?["title"] == .string("x2"), "the newer value this store wrote later is not rolled back")
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone)["1"]?["title"] == .string("x2"))
    }

    @Test("a restored store that deletes a row its adapter uploaded after the backup deletes it from the zone: nobody changed it since")
    func restoredThenDeleted() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        // The gateway watches the store (its capture triggers are in the file) before the backup.
        let a = try pair.synchronizer(pair.fileA, name: "a")
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1)"#)
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('2', 'two', 2)"#)
        let backupPath = pair.directory.path("a-before-sync.sqlite")
        try Self.backup(pair.fileA, to: backupPath)
        #expect(try await a.sync().succeeded)
        let b = try pair.synchronizer(pair.fileB, name: "b")
        #expect(try await b.sync().succeeded)
        try pair.fileB.execute(#"UPDATE "Note" SET title = 'edited in b' WHERE name = '2'"#)
        #expect(try await b.sync().succeeded)

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        try restored.execute(#"DELETE FROM "Note" WHERE name IN ('1', '2')"#)
        let report = try await pair.synchronizer(restored, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.localWon] == 1, "row 1: the delete is newer than this adapter's own upload")
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "row 2: another store edited it since, so it comes back")
        let expected: [String: [String: FieldValue]] = ["2": ["title": .string("edited in b"), "rank": .int64(2)]]
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone) == expected)
        #expect(try Notes.contents(restored) == expected)
        #expect(try await b.sync().succeeded)
        #expect(try Notes.contents(pair.fileB) == expected)
    }

    @Test("a restored store's delete is newer than every change its adapter uploaded after the backup, however many there were")
    func restoredThenDeletedAfterManyChanges() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        let a = try pair.synchronizer(pair.fileA, name: "a")
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1)"#)
        let backupPath = pair.directory.path("a-one-change.sqlite")
        try Self.backup(pair.fileA, to: backupPath)
        // More changes after the backup than the backup holds: numbered on from the backup's last
        // version, the delete below would get a version the upload of 'x3' already had.
        for title in ["x1", "x2", "x3"] {
            try pair.fileA.execute(#"UPDATE "Note" SET title = ? WHERE name = '1'"#, [title])
        }
        #expect(try await a.sync().succeeded)

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        try restored.execute(#"DELETE FROM "Note" WHERE name = '1'"#)
        let report = try await pair.synchronizer(restored, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.localWon] == 1)
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone).isEmpty, "the delete made after the restore reaches the zone")
        #expect(try Notes.contents(restored).isEmpty)
    }

    // Found by the history checker (seed 12315, there in PostgreSQL): adding the column made the
    // adapter forget the synced change tag (so the zone downloads again), and the delete then
    // met the cloud's color, a field it had no ancestor for, as an edit made elsewhere.
    @Test("a row deleted after its table gained a column the cloud already fills is deleted everywhere, not revived by that column's values")
    func deletedAfterColumnAdded() async throws {
        let pair = try await Pair.syncingTwoNotes()
        defer { pair.directory.remove() }
        try pair.fileB.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT"#)
        try pair.fileB.execute(#"UPDATE "Note" SET color = 'red'"#)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)

        try pair.fileA.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT"#)
        try pair.fileA.execute(#"DELETE FROM "Note" WHERE name = '1'"#)
        let report = try await pair.synchronizer(pair.fileA, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts.isEmpty, "deleting the version it synced is no conflict")
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone).keys.sorted() == ["2"])
        #expect(try pair.fileA.rows(#"SELECT name, color FROM "Note""#).map { "\($0[0] as String) \($0[1] as String? ?? "-")" } == ["2 red"])
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try Notes.contents(pair.fileB).keys.sorted() == ["2"])
    }

    @Test("a column added with a default that the cloud has no values for keeps its defaults through the zone's download; a field the cloud clears is cleared")
    func addedColumnKeepsItsDefaults() async throws {
        let pair = try await Pair.syncingTwoNotes()
        defer { pair.directory.remove() }
        // A migration in B only; its rows read the default, which the zone has never held.
        try pair.fileB.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT DEFAULT 'red'"#)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try pair.fileB.rows(#"SELECT color FROM "Note" ORDER BY name"#).map { $0[0] as String? } == ["red", "red"])

        try pair.fileA.execute(#"UPDATE "Note" SET title = 'one, edited', rank = NULL WHERE name = '1'"#)
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('3', 'three', 3)"#)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        let rows = try pair.fileB.rows(#"SELECT name, title, rank, color FROM "Note" ORDER BY name"#).map {
            "\($0[0] as String) \($0[1] as String) \(($0[2] as Int?).map(String.init) ?? "-") \($0[3] as String? ?? "-")"
        }
        #expect(rows == ["1 one, edited - red", "2 two 2 red", "3 three 3 red"], "the cleared rank is cleared; a new row takes the default")
    }

    // Found by the history checker (seed 10875): the change log numbered a restored file's changes
    // on from the backup's last version, so a delete the backup already held could not be told
    // from one made after the restore, and the rule above took both for the newer act.
    @Test("a restored store's delete captured before its backup does not delete the record its adapter created again since")
    func deleteFromBeforeTheBackup() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        let a = try pair.synchronizer(pair.fileA, name: "a")
        // Created and deleted before the first sync: the backup holds a pending delete of row 1.
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'old', 1)"#)
        try pair.fileA.execute(#"DELETE FROM "Note" WHERE name = '1'"#)
        let backupPath = pair.directory.path("a-with-old-delete.sqlite")
        try Self.backup(pair.fileA, to: backupPath)
        // Row 1 created again after the backup, and uploaded.
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'new', 1)"#)
        #expect(try await a.sync().succeeded)

        let restored = try Self.restore(backupPath, over: pair.fileA, directory: pair.directory)
        let report = try await pair.synchronizer(restored, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1, "the backup's delete is older than the upload of row 1")
        let expected: [String: [String: FieldValue]] = ["1": ["title": .string("new"), "rank": .int64(1)]]
        #expect(try await zoneContents(of: pair.cloud, zone: Notes.zone) == expected, "the newer record stays in the zone")
        #expect(try Notes.contents(restored) == expected, "and comes back to the restored store")
    }

    /// Drops table `Note` of `file` and creates it again holding `dump` (name, title, rank), as a
    /// table rebuilt from a dump is: without the capture triggers.
    static func rebuild(_ file: SQLiteFile, from dump: [Row]) throws {
        try file.execute(#"DROP TABLE "Note""#)
        try file.execute(Notes.schema)
        for row in dump {
            try file.execute(#"INSERT INTO "Note" VALUES (?, ?, ?)"#, [row[0] as String, row[1] as String, row[2] as Int64])
        }
    }

    @Test("a table dropped and restored from an older dump joins the zone again instead of uploading its old rows")
    func tableRestoredFromDump() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 1...3 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        let a = try pair.synchronizer(pair.fileA, name: "a")
        let b = try pair.synchronizer(pair.fileB, name: "b")
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        try pair.fileB.execute(#"UPDATE "Note" SET title = 'edited in b' WHERE name = '2'"#)
        #expect(try await b.sync().succeeded)
        #expect(try await a.sync().succeeded)

        try pair.fileA.execute(#"DROP TABLE "Note""#)
        try pair.fileA.execute(Notes.schema)
        for index in 1...3 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        let report = try await pair.synchronizer(pair.fileA, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflicts[.serverWon] == 1)
        #expect(try await b.sync().succeeded)
        #expect(try Notes.contents(pair.fileA)["2"]?["title"] == .string("edited in b"))
        #expect(try Notes.contents(pair.fileB)["2"]?["title"] == .string("edited in b"))
    }

    @Test("a table rebuilt from a dump joins the zone: its rows meet the cloud without an ancestor, and a row the dump lacks was deleted by no one")
    func tableRebuiltFromDump() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 1...3 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE name = '2'"#)
        // The dump holds rows 1 and 2 (with the edit); row 3 is edited after it, then the table
        // is rebuilt from the dump.
        let dump = try pair.fileA.rows(#"SELECT name, title, rank FROM "Note" WHERE name <> '3'"#)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'lost with the old table' WHERE name = '3'"#)
        try Self.rebuild(pair.fileA, from: dump)
        let report = try await pair.synchronizer(pair.fileA, name: "a").sync()
        #expect(report.succeeded)
        // Without its triggers, the rebuilt table cannot tell the dump's edit from one made after
        // it: row 2 meets the cloud without a common ancestor, and the cloud's version wins,
        // reported (the store's is kept with `gateway sync --store-wins a`).
        #expect(report.adapters[0].conflicts[.serverWon] == 1)
        #expect(report.adapters[0].uploaded == 0)
        #expect(report.adapters[0].deletedRemotely == 0, "row 3, missing from the dump, was deleted by no one")
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try Notes.contents(pair.fileB)["2"]?["title"] == .string("one"))
        #expect(try Notes.contents(pair.fileA)["3"]?["title"] == .string("one"), "row 3 came back from the cloud")
        #expect(try Notes.contents(pair.fileB)["3"]?["title"] == .string("one"))
    }

    @Test("a rebuilt table's row that holds exactly its synced values takes the cloud's newer version, a field cleared since included")
    func tableRebuiltWithTheSyncedVersion() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        try pair.fileA.execute(#"INSERT INTO "Note" VALUES ('1', 'one', 1), ('2', 'two', 2)"#)
        let a = try pair.synchronizer(pair.fileA, name: "a")
        let b = try pair.synchronizer(pair.fileB, name: "b")
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        let dump = try pair.fileA.rows(#"SELECT name, title, rank FROM "Note""#)

        // b deletes row 1 and creates it again with a title only; a, not synced since, is then
        // rebuilt from its dump, which holds row 1 as a last synced it.
        try pair.fileB.execute(#"DELETE FROM "Note" WHERE name = '1'"#)
        #expect(try await b.sync().succeeded)
        try pair.fileB.execute(#"INSERT INTO "Note" VALUES ('1', 'one again', NULL)"#)
        #expect(try await b.sync().succeeded)
        try Self.rebuild(pair.fileA, from: dump)

        let report = try await pair.synchronizer(pair.fileA, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 0, "the dump's rows are the synced versions, no edits")
        #expect(report.adapters[0].conflictCount == 0)
        #expect(try await b.sync().succeeded)
        for file in [pair.fileA, pair.fileB] {
            #expect(try Notes.contents(file)["1"] == ["title": .string("one again")])
            #expect(try Notes.contents(file)["2"] == ["title": .string("two"), "rank": .int64(2)])
        }
    }

    @Test("a store on an older schema never erases a column it does not have; the column, added later, gets the cloud's values")
    func olderSchema() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 1...100 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        let a = try pair.synchronizer(pair.fileA, name: "a")
        #expect(try await a.sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)

        try pair.fileB.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT"#)
        try pair.fileB.execute(#"UPDATE "Note" SET color = 'red'"#)
        // A new adapter over the altered table, as a restarted gateway opens it.
        let b = try pair.synchronizer(pair.fileB, name: "b")
        #expect(try await b.sync().succeeded)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE CAST(name AS INTEGER) <= 50"#)
        for _ in 0..<2 {
            #expect(try await a.sync().succeeded)
            #expect(try await b.sync().succeeded)
        }
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 100)
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE title = 'edited in a'"#) == 50)

        // A concurrent edit on both sides merges field by field without touching the color.
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'again in a' WHERE name = '1'"#)
        try pair.fileB.execute(#"UPDATE "Note" SET rank = 1000 WHERE name = '1'"#)
        #expect(try await b.sync().succeeded)
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        let row = try pair.fileB.rows(#"SELECT title, rank, color FROM "Note" WHERE name = '1'"#)[0]
        #expect(row[0] as String? == "again in a")
        #expect(row[1] as Int64? == 1000)
        #expect(row[2] as String? == "red")

        try pair.fileA.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT"#)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 100, "the added column received the cloud's values")
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 100)
    }

    @Test("a column dropped and added again between two syncs gets the cloud's values back, and a row edited meanwhile keeps its edit")
    func columnDroppedAndAddedAgain() async throws {
        let pair = try Pair(schema: #"CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER, color TEXT)"#)
        defer { pair.directory.remove() }
        for index in 1...10 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?, 'red')"#, ["\(index)", index]) }
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)

        // The application gives the column up and takes it back (a migration and its rollback),
        // with no sync in between; then it edits row 1's title (its color, emptied by the drop,
        // is not part of that edit) and gives row 2 a new color.
        try pair.fileB.execute(#"ALTER TABLE "Note" DROP COLUMN color"#)
        try pair.fileB.execute(#"ALTER TABLE "Note" ADD COLUMN color TEXT"#)
        try pair.fileB.execute(#"UPDATE "Note" SET title = 'edited in b' WHERE name = '1'"#)
        try pair.fileB.execute(#"UPDATE "Note" SET color = 'blue' WHERE name = '2'"#)
        let report = try await pair.synchronizer(pair.fileB, name: "b").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 2, "the two edits, and no emptied color, were uploaded")
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 9, "the emptied colors came back from the cloud")
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 9)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'blue' AND name = '2'"#) == 1)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE title = 'edited in b'"#) == 1)
    }

    @Test("a schema change that empties no column (an index) leaves a field the application cleared, or a row it inserted again, as it made them")
    func clearedAfterUnrelatedSchemaChange() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 1...3 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?)"#, ["\(index)", index]) }
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)

        try pair.fileB.execute(#"CREATE INDEX "Note_by_rank" ON "Note" (rank)"#)
        try pair.fileB.execute(#"UPDATE "Note" SET title = NULL WHERE name = '1'"#)
        try pair.fileB.execute(#"DELETE FROM "Note" WHERE name = '2'"#)
        try pair.fileB.execute(#"INSERT INTO "Note" (name, rank) VALUES ('2', 20)"#)
        let report = try await pair.synchronizer(pair.fileB, name: "b").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].uploaded == 2 && report.adapters[0].conflictCount == 0)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        for file in [pair.fileA, pair.fileB] {
            #expect(try Notes.contents(file)["1"] == ["rank": .int64(1)], "the cleared title stays cleared")
            #expect(try Notes.contents(file)["2"] == ["rank": .int64(20)], "the row inserted again has no title")
        }
    }

    @Test("a renamed column keeps its values: they are the store's, uploaded under the new name, and the old field stays in the zone")
    func columnRenamed() async throws {
        let pair = try Pair(schema: #"CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER, color TEXT)"#)
        defer { pair.directory.remove() }
        for index in 1...10 { try pair.fileA.execute(#"INSERT INTO "Note" VALUES (?, 'one', ?, 'red')"#, ["\(index)", index]) }
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)

        // Store a's application renames the column (no trigger fires for that) and edits a title.
        try pair.fileA.execute(#"ALTER TABLE "Note" RENAME COLUMN color TO hue"#)
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE name = '1'"#)
        let report = try await pair.synchronizer(pair.fileA, name: "a").sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].conflictCount == 0)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE hue = 'red'"#) == 10, "the renamed column kept its values")
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE color = 'red'"#) == 10, "the old field stayed in the zone")
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE title = 'edited in a'"#) == 1)

        // Store b renames too: both hold the values under the new name, and nothing moves.
        try pair.fileB.execute(#"ALTER TABLE "Note" RENAME COLUMN color TO hue"#)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE hue = 'red'"#) == 10)
        let records = try await zoneContents(of: pair.cloud, zone: Notes.zone)
        #expect(records.values.filter { $0["hue"] == .string("red") && $0["color"] == .string("red") }.count == 10, "a store on the new schema uploads its values under the new name")
    }

    @Test("a column renamed onto the name of one dropped since the last sync: its values are uploaded, and an edited row's emptied field gets the cloud's value back")
    func columnRenamedOntoADroppedOnesName() async throws {
        let pair = try Pair(schema: #"CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER, hue TEXT, color TEXT)"#)
        defer { pair.directory.remove() }
        try pair.fileB.execute(#"INSERT INTO "Note" (name, title, color) VALUES ('1', 'one', 'red')"#)
        try pair.fileB.execute(#"INSERT INTO "Note" (name, title, hue) VALUES ('2', 'two', 'teal')"#)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)

        // Store a's application edits row 1's title, gives the color column up and renames hue
        // to color, with no sync in between: row 1's color is empty only because of the drop,
        // and row 2's color holds its hue under the new name.
        try pair.fileA.execute(#"UPDATE "Note" SET title = 'edited in a' WHERE name = '1'"#)
        try pair.fileA.execute(#"ALTER TABLE "Note" DROP COLUMN color"#)
        try pair.fileA.execute(#"ALTER TABLE "Note" RENAME COLUMN hue TO color"#)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        for file in [pair.fileA, pair.fileB] {
            let rows = try file.rows(#"SELECT name, title, color FROM "Note" ORDER BY name"#)
            #expect(rows.map { $0[1] as String? } == ["edited in a", "two"])
            #expect(rows.map { $0[2] as String? } == ["red", "teal"], "row 1's color came back; row 2's renamed value reached the zone")
        }
        #expect(try pair.fileB.count(#"SELECT COUNT(*) FROM "Note" WHERE name = '2' AND hue = 'teal'"#) == 1, "the old field stayed in the zone")
    }

    @Test("the same, where the edited row is the store's own insert, merged with the cloud's record in a sync whose upload failed")
    func columnRenamedOntoADroppedOnesNameAfterAFailedUpload() async throws {
        let pair = try Pair(schema: #"CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER, hue TEXT, color TEXT)"#)
        defer { pair.directory.remove() }
        try pair.fileB.execute(#"INSERT INTO "Note" (name, color) VALUES ('1', 'red')"#)
        try pair.fileB.execute(#"INSERT INTO "Note" (name, title, hue) VALUES ('2', 'two', 'teal')"#)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)

        try pair.fileA.execute(#"INSERT INTO "Note" (name, title) VALUES ('1', 'one in a')"#)
        let faulty = FaultInjectingCloud(wrapping: pair.cloud, plan: .none, seed: 1)
        for _ in 0..<50 { faulty.script(.error(CloudError(.networkFailure, "reset")), on: .modify) }
        let failed = try await Synchronizer(
            cloud: faulty, adapters: [SyncedAdapter(try Notes.adapter(pair.fileA, name: "a"))], configuration: SyncConfiguration(deviceID: "gateway")
        ).sync()
        #expect(!failed.succeeded)
        #expect(try pair.fileA.count(#"SELECT COUNT(*) FROM "Note" WHERE name = '1' AND title = 'one in a' AND color = 'red'"#) == 1, "the download merged row 1")

        try pair.fileA.execute(#"ALTER TABLE "Note" DROP COLUMN color"#)
        try pair.fileA.execute(#"ALTER TABLE "Note" RENAME COLUMN hue TO color"#)
        #expect(try await pair.synchronizer(pair.fileA, name: "a").sync().succeeded)
        #expect(try await pair.synchronizer(pair.fileB, name: "b").sync().succeeded)
        for file in [pair.fileA, pair.fileB] {
            let rows = try file.rows(#"SELECT name, title, color FROM "Note" ORDER BY name"#)
            #expect(rows.map { $0[1] as String? } == ["one in a", "two"])
            #expect(rows.map { $0[2] as String? } == ["red", "teal"], "row 1's color came back; row 2's renamed value reached the zone")
        }
    }

    @Test("an adapter's change signals wake a listener once more when it closes, whatever the file looked like before", .timeLimit(.minutes(1)))
    func signalsWakeOnClose() async throws {
        let directory = try TemporaryDirectory(prefix: "signals-close")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: Notes.schema)
        let adapter = try Notes.adapter(file)
        var signals = adapter.changeSignals().makeAsyncIterator()
        await signals.start()
        // What a file moved over the adapter's path looks like to its probe (a connection opened
        // by path finds no change log): unreadable, and so it stays after the adapter closes.
        try file.execute(#"DROP TABLE "_gateway_log""#)
        #expect(await signals.next() != nil, "the log gone is a change")
        // A listener waiting on the replaced adapter's signals when it closes is not left
        // waiting for good: a service follows the adapter opened on the new file from there.
        let waiting = Task { [signals] in
            var signals = signals
            return await signals.next()
        }
        await adapter.close()
        #expect(await waiting.value != nil)
    }
}
