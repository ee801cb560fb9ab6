import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import Testing

/// A record another store's values make unacceptable here (a check, a trigger's veto) is left
/// out of its page: the zone goes on both ways, the record is reported, kept as the store holds
/// it, and arrives once the cloud's version or the store changes.
@Suite("Refused downloads")
struct RefusedDownloadTests {
    static let plainSchema = #"CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER);"#
    /// The Notes schema (rank ≥ 0) and a veto on one title, which the operator can drop.
    static let strictSchema = Notes.schema + """
        CREATE TRIGGER veto_insert BEFORE INSERT ON "Note" WHEN NEW.title = 'vetoed' BEGIN SELECT RAISE(ABORT, 'vetoed title'); END;
        CREATE TRIGGER veto_update BEFORE UPDATE ON "Note" WHEN NEW.title = 'vetoed' BEGIN SELECT RAISE(ABORT, 'vetoed title'); END;
        """

    struct Pair {
        let directory: TemporaryDirectory
        let cloud: EmbeddedCloud
        let plain: SQLiteFile
        let strict: SQLiteFile
        let a: Synchronizer
        let b: Synchronizer

        init() throws {
            directory = try TemporaryDirectory(prefix: "refused")
            cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            plain = try SQLiteFile(directory, name: "a.sqlite", schema: RefusedDownloadTests.plainSchema)
            strict = try SQLiteFile(directory, name: "b.sqlite", schema: RefusedDownloadTests.strictSchema)
            a = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(plain, name: "a"))], configuration: SyncConfiguration(deviceID: "gateway-a"))
            b = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(strict, name: "b"))], configuration: SyncConfiguration(deviceID: "gateway-b"))
        }

        func refused() async throws -> [String: RefusedDownload] {
            try ZoneSyncState(decoding: try await b.adapters[0].adapter.loadZoneState()).refused
        }
    }

    @Test("a refused record is left out of its page, reported each sync, and arrives when the cloud's version changes or the store is fixed")
    func refusedRecordWaits() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        for index in 0..<10 { try pair.plain.execute(#"INSERT INTO "Note" VALUES (?, 't', ?)"#, ["r\(index)", index]) }
        try pair.plain.execute(#"INSERT INTO "Note" VALUES ('negative', 'n', -1), ('veto', 'vetoed', 1)"#)
        #expect(try await pair.a.sync().succeeded)

        let first = try await pair.b.sync().adapters[0]
        #expect(first.outcome == .synced, "\(first.outcome)")
        #expect(first.downloaded == 10)
        #expect(first.failedRecords == 2)
        #expect(Set(first.refusedAtEnd.map(\.recordID.recordName)) == ["negative", "veto"])
        #expect(first.refusedAtEnd.allSatisfy { $0.failure.code == RefusedDownload.failureCode })
        let veto = try #require(first.refusedAtEnd.first { $0.recordID.recordName == "veto" })
        #expect(veto.failure.message.contains("vetoed title"), "\(veto.failure.message)")
        #expect(try Notes.contents(pair.strict).count == 10)
        let refused = try await pair.refused()
        #expect(Set(refused.keys) == ["negative", "veto"])
        #expect(refused["negative"]?.recordType == "Note")

        // The zone goes on both ways.
        try pair.strict.execute(#"INSERT INTO "Note" VALUES ('fromB', 'b', 3)"#)
        let second = try await pair.b.sync().adapters[0]
        #expect(second.outcome == .synced && second.uploaded == 1 && second.failedRecords == 2)
        #expect(try await pair.refused()["negative"]?.since == refused["negative"]?.since, "a refusal keeps the date it began")
        #expect(try await pair.a.sync().succeeded)
        #expect(try Notes.contents(pair.plain)["fromB"] == ["title": .string("b"), "rank": .int64(3)])

        // The cloud's version changes to one the store takes.
        try pair.plain.execute(#"UPDATE "Note" SET rank = 5 WHERE name = 'negative'"#)
        #expect(try await pair.a.sync().succeeded)
        let third = try await pair.b.sync().adapters[0]
        #expect(third.outcome == .synced && third.failedRecords == 1)
        #expect(try Notes.contents(pair.strict)["negative"] == ["title": .string("n"), "rank": .int64(5)])
        #expect(Set(try await pair.refused().keys) == ["veto"])

        // The store changes: the next sync looks the record up and takes it.
        try pair.strict.execute("DROP TRIGGER veto_insert; DROP TRIGGER veto_update")
        let fourth = try await pair.b.sync().adapters[0]
        #expect(fourth.outcome == .synced && fourth.failedRecords == 0 && fourth.refusedAtEnd.isEmpty)
        #expect(try await pair.refused().isEmpty)
        #expect(try Notes.contents(pair.strict) == Notes.contents(pair.plain))
        #expect(try await pair.b.adapters[0].adapter.pendingChangeCount() == 0)
    }

    @Test("a local edit of a refused record is not uploaded over the cloud's version; it is merged with it once the store takes that version")
    func localEditOfARefusedRecordWaits() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        try pair.plain.execute(#"INSERT INTO "Note" VALUES ('r', 'one', 1)"#)
        #expect(try await pair.a.sync().succeeded)
        #expect(try await pair.b.sync().succeeded)
        try pair.plain.execute(#"UPDATE "Note" SET rank = -1 WHERE name = 'r'"#)
        #expect(try await pair.a.sync().succeeded)
        #expect(try await pair.b.sync().adapters[0].failedRecords == 1)

        try pair.strict.execute(#"UPDATE "Note" SET title = 'two' WHERE name = 'r'"#)
        let held = try await pair.b.sync().adapters[0]
        #expect(held.outcome == .synced && held.uploaded == 0, "the edit waits for the cloud's version")
        #expect(try await Notes.zoneRows(pair.cloud)["r"] == ["title": .string("one"), "rank": .int64(-1)])
        #expect(try await pair.b.adapters[0].adapter.pendingChangeCount() == 1, "the edit stays pending")

        try pair.plain.execute(#"UPDATE "Note" SET rank = 2 WHERE name = 'r'"#)
        #expect(try await pair.a.sync().succeeded)
        let merged = try await pair.b.sync().adapters[0]
        #expect(merged.outcome == .synced && merged.failedRecords == 0 && merged.uploaded == 1, "\(merged)")
        #expect(try await pair.a.sync().succeeded)
        let both = ["title": FieldValue.string("two"), "rank": .int64(2)]
        #expect(try Notes.contents(pair.plain)["r"] == both)
        #expect(try Notes.contents(pair.strict)["r"] == both)
    }

    @Test("a row a trigger skips without an error (RAISE(IGNORE)), in a group of rows or alone, is a refused record, not taken for written")
    func triggerThatSkipsIsARefusal() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        try pair.strict.execute("""
            CREATE TRIGGER skip_insert BEFORE INSERT ON "Note" WHEN NEW.title = 'ignored' BEGIN SELECT RAISE(IGNORE); END;
            CREATE TRIGGER skip_update BEFORE UPDATE ON "Note" WHEN NEW.title = 'ignored' BEGIN SELECT RAISE(IGNORE); END;
            """)
        for index in 0..<60 { try pair.plain.execute(#"INSERT INTO "Note" VALUES (?, 't', ?)"#, [String(format: "r%02d", index), index]) }
        #expect(try await pair.a.sync().succeeded)
        #expect(try await pair.b.sync().succeeded)
        // One row of a group of many, one written alone at the end, and a new row.
        try pair.plain.execute(#"UPDATE "Note" SET title = 'ignored' WHERE name IN ('r10', 'r59')"#)
        try pair.plain.execute(#"INSERT INTO "Note" VALUES ('s', 'ignored', 1)"#)
        try pair.plain.execute(#"UPDATE "Note" SET rank = rank + 100 WHERE name NOT IN ('r10', 'r59')"#)
        #expect(try await pair.a.sync().succeeded)
        let report = try await pair.b.sync().adapters[0]
        #expect(report.outcome == .synced, "\(report.outcome)")
        #expect(Set(report.refusedAtEnd.map(\.recordID.recordName)) == ["r10", "r59", "s"])
        #expect(report.refusedAtEnd.allSatisfy { $0.failure.message.contains("skipped by a trigger") }, "\(report.refusedAtEnd)")
        let held = try Notes.contents(pair.strict)
        #expect(held["r11"]?["rank"] == .int64(111), "the rest of the page was written")
        #expect(held["r10"]?["title"] == .string("t") && held["s"] == nil)

        // The store's edit of a skipped row is not uploaded over the cloud's title.
        try pair.strict.execute(#"UPDATE "Note" SET rank = 7 WHERE name = 'r10'"#)
        #expect(try await pair.b.sync().adapters[0].uploaded == 0)
        #expect(try await Notes.zoneRows(pair.cloud)["r10"]?["title"] == .string("ignored"))

        // Without the triggers, the cloud's rows arrive, merged with that edit.
        try pair.strict.execute("DROP TRIGGER skip_insert; DROP TRIGGER skip_update")
        let fixed = try await pair.b.sync().adapters[0]
        #expect(fixed.outcome == .synced && fixed.refusedAtEnd.isEmpty, "\(fixed)")
        #expect(try await pair.a.sync().succeeded)
        #expect(try Notes.contents(pair.strict) == Notes.contents(pair.plain))
        #expect(try Notes.contents(pair.plain)["r10"] == ["title": .string("ignored"), "rank": .int64(7)])
    }

    @Test("past the zone's maximum of refusals the page fails as a whole, naming a record, and nothing of it is applied")
    func tooManyRefusalsFailThePage() async throws {
        let pair = try Pair()
        defer { pair.directory.remove() }
        let count = ZoneSyncState.maximumRefusedDownloads + 5
        for index in 0..<count { try pair.plain.execute(#"INSERT INTO "Note" VALUES (?, 't', -1)"#, ["n\(index)"]) }
        try pair.plain.execute(#"INSERT INTO "Note" VALUES ('fine', 't', 1)"#)
        #expect(try await pair.a.sync().succeeded)
        let report = try await pair.b.sync().adapters[0]
        guard case .failed(_, let message) = report.outcome else {
            Issue.record("the sync succeeded with \(report.failedRecords) failed records")
            return
        }
        #expect(message.contains("writing downloaded record n"), "\(message)")
        #expect(try Notes.contents(pair.strict).isEmpty, "nothing of the page was applied")
        let state = try ZoneSyncState(decoding: try await pair.b.adapters[0].adapter.loadZoneState())
        #expect(state.token == nil && state.refused.isEmpty, "the token did not move")
    }
}

extension Notes {
    /// The zone's "Note" records as name → (title, rank).
    static func zoneRows(_ cloud: EmbeddedCloud) async throws -> [String: [String: FieldValue]] {
        try await zoneContents(of: cloud, zone: zone)
    }
}
