import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import Testing

@Suite("SQLite mapping")
struct SQLiteMappingTests {
    static let zone = ZoneID(zoneName: "Mapped")

    static func adapter(_ file: SQLiteFile, _ tables: [TableMapping]) throws -> SQLiteAdapter {
        try SQLiteAdapter(configuration: SQLiteAdapterConfiguration(name: "mapped", path: file.path, zoneID: zone, tables: tables))
    }

    /// Applies `pending` saves of one adapter to another, as the synchronizer would.
    static func copy(_ pending: PendingChanges, to adapter: SQLiteAdapter) async throws {
        try await adapter.apply(DownloadedChanges(writes: pending.saves.map(\.record), state: SyncStateUpdate(zoneState: Data())))
    }

    @Test("composite, text and blob keys become record names and back, through templates")
    func keysAndTemplates() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = """
            CREATE TABLE line (invoice INTEGER, code TEXT, qty INTEGER, PRIMARY KEY (invoice, code));
            CREATE TABLE blobbed (id BLOB PRIMARY KEY, label TEXT);
            CREATE TABLE marked (id TEXT PRIMARY KEY, label TEXT);
            """
        let source = try SQLiteFile(directory, schema: schema)
        try source.execute("INSERT INTO line VALUES (7, 'a|b\\c', 3), (7, 'plain', 1), (8, '', 2)")
        try source.execute("INSERT INTO blobbed VALUES (x'00ff10', 'bytes')")
        // Combining marks right after the prefix and after a separator: one character with it,
        // but names are matched and split by bytes, as the triggers build them.
        try source.execute("INSERT INTO line VALUES (9, 'a|\u{301}', 4)")
        try source.execute("INSERT INTO marked VALUES ('\u{301}x', 'mark')")
        let tables = [
            TableMapping(table: "line", recordType: "InvoiceLine", recordName: "<Type>.<pk>"),
            TableMapping(table: "blobbed", recordName: "b:<pk>"),
            TableMapping(table: "marked", recordName: "m:<pk>"),
        ]
        let adapter = try Self.adapter(source, tables)
        let pending = try await adapter.pendingChanges(limit: 10)
        let names = Set(pending.saves.map(\.record.id.recordName))
        #expect(names == ["InvoiceLine.7|a\\|b\\\\c", "InvoiceLine.7|plain", "InvoiceLine.8|", "InvoiceLine.9|a\\|\u{301}", "b:00FF10", "m:\u{301}x"])
        #expect(pending.saves.first { $0.record.id.recordName == "InvoiceLine.7|plain" }?.record.fields == ["qty": .int64(1)])
        #expect(pending.saves.allSatisfy { ["InvoiceLine", "blobbed", "marked"].contains($0.record.recordType) })

        let target = try SQLiteFile(directory, schema: schema)
        let copy = try Self.adapter(target, tables)
        try await Self.copy(pending, to: copy)
        #expect(try target.rows("SELECT invoice, code, qty FROM line ORDER BY invoice, code").map { "\($0[0] as Int64)/\($0[1] as String)/\($0[2] as Int64)" }
            == ["7/a|b\\c/3", "7/plain/1", "8//2", "9/a|\u{301}/4"])
        #expect(try target.rows("SELECT hex(id), label FROM blobbed").map { "\($0[0] as String)=\($0[1] as String)" } == ["00FF10=bytes"])
        #expect(try target.rows("SELECT hex(id), label FROM marked").map { "\($0[0] as String)=\($0[1] as String)" } == ["CC8178=mark"])
        #expect(try await copy.hasChanges() == false, "applied rows are not local changes")
    }

    @Test("column types map to field types, with overrides, and write back")
    func columnTypes() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = """
            CREATE TABLE thing (id INTEGER PRIMARY KEY, n INTEGER, x REAL, s TEXT, b BLOB, flag BOOLEAN,
                                made DATETIME, seen INTEGER, at_ms INTEGER, plain_date TEXT);
            """
        let source = try SQLiteFile(directory, schema: schema)
        try source.execute(
            "INSERT INTO thing VALUES (1, 42, 2.5, 'text', x'0102', 1, '2024-05-01 12:30:00', 1714566600, 1714566600123, '2024-05-01')")
        let mapping = TableMapping(table: "thing", columnTypes: ["seen": .unixSeconds, "at_ms": .unixMilliseconds])
        let adapter = try Self.adapter(source, [mapping])
        let record = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        let stamp = Timestamp(millisecondsSince1970: 1_714_566_600_000)
        #expect(record.fields == [
            "n": .int64(42), "x": .double(2.5), "s": .string("text"), "b": .bytes(Data([1, 2])), "flag": .int64(1),
            "made": .timestamp(stamp), "seen": .timestamp(stamp),
            "at_ms": .timestamp(Timestamp(millisecondsSince1970: 1_714_566_600_123)), "plain_date": .string("2024-05-01"),
        ])
        let target = try SQLiteFile(directory, schema: schema)
        try await Self.copy(PendingChanges(saves: [PendingSave(record: record, metadata: nil, version: 1)]), to: try Self.adapter(target, [mapping]))
        let row = try #require(try target.rows("SELECT n, x, s, hex(b), flag, made, seen, at_ms FROM thing").first)
        #expect(row[0] as Int64 == 42 && row[1] as Double == 2.5 && row[2] as String == "text" && row[3] as String == "0102")
        #expect(row[4] as Int64 == 1)
        #expect(row[5] as String == "2024-05-01T12:30:00.000Z")
        #expect(row[6] as Int64 == 1_714_566_600 && row[7] as Int64 == 1_714_566_600_123)
    }

    @Test("a NaN, which SQLite would store as NULL, is kept as the text NaN that a real column reads back as NaN; infinities stay doubles")
    func notANumber() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = "CREATE TABLE thing (id INTEGER PRIMARY KEY, x REAL, y REAL, s TEXT);"
        let source = try SQLiteFile(directory, schema: schema)
        try source.execute("INSERT INTO thing VALUES (1, 0, 0, 'a')")
        let adapter = try Self.adapter(source, [TableMapping(table: "thing")])
        var record = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        record.fields = ["x": .double(.nan), "y": .double(-.infinity), "s": .string("NaN")]
        try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data())))
        let row = try #require(try source.rows("SELECT typeof(x), x, y, s FROM thing").first)
        #expect(row[0] as String == "text" && row[1] as String == "NaN" && row[2] as Double == -.infinity && row[3] as String == "NaN")
        try source.execute("UPDATE thing SET x = x WHERE id = 1")
        let read = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(read["x"].map { if case .double(let value) = $0 { value.isNaN } else { false } } == true, "\(read)")
        #expect(read["y"] == .double(-.infinity))
        #expect(read["s"] == .string("NaN"), "a text column keeps the text")
    }

    @Test("text holding a NUL character is read whole, on every path that reads a row (pending changes, local state)")
    func textWithNul() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let source = try SQLiteFile(directory, schema: "CREATE TABLE thing (id TEXT PRIMARY KEY, s TEXT, n INTEGER);")
        let adapter = try Self.adapter(source, [TableMapping(table: "thing")])
        var record = try #require(try await { () async throws -> Record? in
            try source.execute("INSERT INTO thing VALUES ('a', 'x', 1)")
            return try await adapter.pendingChanges(limit: 1).saves.first?.record
        }())
        let whole = "h\u{e9}llo \u{0} nul \u{1F600}"
        record.fields["s"] = .string(whole)
        try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data())))
        #expect(try source.rows("SELECT hex(s) FROM thing").first?[0] as String? == Data(whole.utf8).map { String(format: "%02X", $0) }.joined())
        // Another column edited: the row goes up again, with the text as the store holds it.
        try source.execute("UPDATE thing SET n = 2")
        let pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(pending["s"] == .string(whole))
        let local = try await adapter.localState(for: [record.id])
        #expect(local[record.id]?.record?["s"] == .string(whole))
    }

    @Test("a downloaded value the table refuses fails the apply naming the record and the constraint, in a page of many, never the value")
    func refusedValueNamesTheRecord() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let source = try SQLiteFile(directory, schema: "CREATE TABLE thing (id TEXT PRIMARY KEY, n INTEGER CHECK (n >= 0));")
        let adapter = try Self.adapter(source, [TableMapping(table: "thing")])
        let page = (0..<120).map { index in
            Record(id: RecordID(recordName: "r\(index)", zoneID: Self.zone), recordType: "thing", fields: ["n": .int64(index == 77 ? -4242 : Int64(index))])
        }
        let refused = await #expect(throws: SQLiteAdapterError.self) {
            try await adapter.apply(DownloadedChanges(writes: page, state: SyncStateUpdate(zoneState: Data())))
        }
        #expect(refused?.message.hasPrefix("writing downloaded record r77: ") == true, "\(String(describing: refused))")
        #expect(refused?.refusedRecordName == "r77", "the synchronizer can leave that record out")
        #expect(refused?.message.contains("CHECK constraint failed") == true, "\(String(describing: refused))")
        #expect(refused?.message.contains("4242") == false)
        #expect(try source.rows("SELECT COUNT(*) FROM thing").first?[0] as Int? == 0, "nothing of the page was written")
    }

    @Test("a NOT NULL column with a default that a record has no value for takes its default in a new row and keeps its value in an existing one")
    func notNullDefaultsWhereTheRecordHasNoValue() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let source = try SQLiteFile(
            directory, schema: "CREATE TABLE thing (id TEXT PRIMARY KEY, title TEXT, status TEXT NOT NULL DEFAULT 'active', n INTEGER NOT NULL DEFAULT 0);")
        let adapter = try Self.adapter(source, [TableMapping(table: "thing")])
        try source.execute("INSERT INTO thing (id, title, status, n) VALUES ('old', 'Old', 'archived', 7)")
        _ = try await adapter.pendingChanges(limit: 10)
        // As a store without those columns writes them: no value for status or n.
        let records = [("old", "Old, edited elsewhere"), ("new", "New"), ("set", "Set")].map { name, title in
            Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "thing", fields: ["title": .string(title)])
        }
        var withStatus = records[2]
        withStatus["status"] = .string("draft")
        try await adapter.apply(DownloadedChanges(writes: [records[0], records[1], withStatus], state: SyncStateUpdate(zoneState: Data())))
        let rows = try source.rows("SELECT id, title, status, n FROM thing ORDER BY id").map { "\($0[0] as String) \($0[1] as String) \($0[2] as String) \($0[3] as Int)" }
        #expect(rows == ["new New active 0", "old Old, edited elsewhere archived 7", "set Set draft 0"])
    }

    @Test("lists, locations, references and timestamps a text column holds as text go back up as the cloud sent them while the cell is unchanged")
    func typedCellsKeepTheirValues() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let source = try SQLiteFile(directory, schema: "CREATE TABLE thing (id TEXT PRIMARY KEY, tags TEXT, place TEXT, parent TEXT, at TEXT, n INTEGER);")
        let adapter = try Self.adapter(source, [TableMapping(table: "thing")])
        try source.execute("INSERT INTO thing (id, n) VALUES ('a', 1)")
        var record = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        let sent = TypedFieldSamples.fields(zone: Self.zone)
        record.fields = sent
        try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data())))
        #expect(try source.rows("SELECT typeof(tags), typeof(place), typeof(parent), typeof(at) FROM thing").first.map { row in
            (0..<4).map { row[$0] as String }
        } == ["text", "text", "text", "text"], "the application sees text")

        // Another column edited: every typed value goes up as the cloud sent it.
        try source.execute("UPDATE thing SET n = 2")
        var pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        for field in ["tags", "place", "parent", "at"] { #expect(pending[field] == sent[field], "\(field)") }
        #expect(pending["n"] == .int64(2))
        let local = try await adapter.localState(for: [record.id])
        #expect(local[record.id]?.record?["place"] == sent["place"])

        // The application rewrote one cell: that cell is what it holds now; the others keep theirs.
        try source.execute("UPDATE thing SET tags = '[\"y\"]'")
        pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(pending["tags"] == .string("[\"y\"]"))
        #expect(pending["place"] == sent["place"])

        // A later download of plain text forgets the kept value.
        var plain = record
        plain.fields = ["place": .string("Paris"), "n": .int64(3)]
        try await adapter.apply(DownloadedChanges(writes: [plain], state: SyncStateUpdate(zoneState: Data())))
        try source.execute("UPDATE thing SET n = 4")
        pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(pending["place"] == .string("Paris"))
        #expect(pending["tags"] == nil)

        // Typed again, then deleted by the application, the delete synced: a row inserted later
        // under the name, holding the same text, is a new record read as it is.
        try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data())))
        let placeText = try #require(try source.rows("SELECT place FROM thing").first?[0] as String?)
        try source.execute("DELETE FROM thing")
        try await adapter.commit(SyncStateUpdate(metadata: [record.id: RecordMetadata.encodedDeletion()], zoneState: Data()))
        try source.execute("INSERT INTO thing (id, place, n) VALUES ('a', '\(placeText)', 5)")
        pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(pending["place"] == .string(placeText))
    }

    @Test("included and excluded columns: excluded data is neither sent nor overwritten")
    func includeExclude() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = "CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT, secret TEXT, cache TEXT);"
        let file = try SQLiteFile(directory, schema: schema)
        try file.execute("INSERT INTO note VALUES ('n', 'title', 'local only', 'cached')")
        let adapter = try Self.adapter(file, [TableMapping(table: "note", include: ["title"])])
        let record = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(record.fields == ["title": .string("title")])
        let pending = try await adapter.pendingChanges(limit: 1)
        var update = SyncStateUpdate(zoneState: Data())
        update.settled[record.id] = pending.saves[0].version
        try await adapter.commit(update)
        try file.execute("UPDATE note SET cache = 'other' WHERE id = 'n'")
        #expect(try await adapter.hasChanges() == false, "a change to a column that is not synced is not a change")
        var remote = record
        remote.fields = ["title": .string("from the cloud")]
        try await adapter.apply(DownloadedChanges(writes: [remote], state: SyncStateUpdate(zoneState: Data())))
        let row = try #require(try file.rows("SELECT title, secret, cache FROM note").first)
        #expect(row[0] as String == "from the cloud" && row[1] as String == "local only" && row[2] as String == "other")
    }

    @Test("startup errors name the file, table and column, and write nothing")
    func startupErrors() throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE keyed (id INTEGER PRIMARY KEY, a TEXT); CREATE TABLE loose (a TEXT);")
        func failure(_ tables: [TableMapping]) -> SQLiteAdapterError? {
            do {
                _ = try Self.adapter(file, tables)
                return nil
            } catch {
                return error as? SQLiteAdapterError
            }
        }
        let missing = failure([TableMapping(table: "nope")])
        #expect(missing?.code == .missingTable)
        #expect(missing?.message.contains("nope") == true && missing?.message.contains(file.path) == true)
        let column = failure([TableMapping(table: "keyed", exclude: ["ghost"])])
        #expect(column?.code == .missingColumn && column?.message.contains("ghost") == true)
        #expect(failure([TableMapping(table: "loose")])?.code == .noPrimaryKey)
        #expect(failure([TableMapping(table: "keyed", recordName: "no-key-here")])?.code == .invalidMapping)
        #expect(failure([TableMapping(table: "keyed"), TableMapping(table: "keyed", recordType: "Other")])?.code == .invalidMapping)
        let collide = failure([
            TableMapping(table: "keyed"),
            TableMapping(table: "loose", recordType: "L"),
        ])
        #expect(collide?.code == .noPrimaryKey || collide?.code == .invalidMapping)
        try file.execute("CREATE TABLE other (id INTEGER PRIMARY KEY)")
        #expect(failure([TableMapping(table: "keyed"), TableMapping(table: "other")])?.code == .invalidMapping)
        #expect(try file.count("SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '_gateway_%'") == 0, "a refused configuration writes nothing")
    }

    @Test("a store opens while another program holds its write lock, once the lock is released")
    func opensWhileAnotherProgramWrites() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        // A new file in rollback-journal mode, as other programs create them: the adapter's switch
        // to WAL needs the lock that the writer below holds.
        let file = try SQLiteFile(directory, schema: "CREATE TABLE keyed (id INTEGER PRIMARY KEY, a TEXT);")
        let locked = LockedValue(false)
        let writer = Task {
            try file.database.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE; INSERT INTO keyed (id, a) VALUES (1, 'written by another program')")
                locked.set(true)
                Thread.sleep(forTimeInterval: 0.3)
                try db.execute(sql: "COMMIT")
            }
        }
        while !locked.get() { try await Task.sleep(for: .milliseconds(5)) }
        let adapter = try Self.adapter(file, [TableMapping(table: "keyed")])
        try await writer.value
        #expect(try await adapter.pendingChangeCount() == 1, "the other program's row is queued")
    }

    @Test("identifiers are quoted: odd table and column names work")
    func hostileIdentifiers() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = #"CREATE TABLE "we""ird table" ("k""ey" TEXT PRIMARY KEY, "sel""ect; drop" TEXT, "ünï" INTEGER);"#
        let file = try SQLiteFile(directory, schema: schema)
        try file.execute(#"INSERT INTO "we""ird table" VALUES ('a''b', 'v', 1)"#)
        let adapter = try Self.adapter(file, [TableMapping(table: "we\"ird table", recordType: "Weird")])
        let pending = try await adapter.pendingChanges(limit: 5)
        #expect(pending.saves.map(\.record.id.recordName) == ["a'b"])
        #expect(pending.saves.first?.record.fields == ["sel\"ect; drop": .string("v"), "ünï": .int64(1)])
        let target = try SQLiteFile(directory, schema: schema)
        try await Self.copy(pending, to: try Self.adapter(target, [TableMapping(table: "we\"ird table", recordType: "Weird")]))
        #expect(try target.count(#"SELECT COUNT(*) FROM "we""ird table" WHERE "k""ey" = 'a''b'"#) == 1)
    }

    @Test("existing rows are queued once; a table added later is backfilled; reopening queues nothing again")
    func backfill() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT);")
        try file.execute("INSERT INTO a (v) VALUES ('1'), ('2'), ('3')")
        try file.execute("INSERT INTO b (v) VALUES ('x')")
        let first = try Self.adapter(file, [TableMapping(table: "a", recordName: "a-<pk>")])
        #expect(try await first.pendingChangeCount() == 3)
        let reopened = try Self.adapter(file, [TableMapping(table: "a", recordName: "a-<pk>")])
        #expect(try await reopened.pendingChangeCount() == 3, "reopening does not queue rows again")
        let widened = try Self.adapter(file, [TableMapping(table: "a", recordName: "a-<pk>"), TableMapping(table: "b", recordName: "b-<pk>")])
        #expect(try await widened.pendingChangeCount() == 4, "the added table's row is queued")
        let narrowed = try Self.adapter(file, [TableMapping(table: "b", recordName: "b-<pk>")])
        #expect(try await narrowed.pendingChangeCount() == 1, "a table no longer synced leaves the change log")
        try file.execute("INSERT INTO a (v) VALUES ('4')")
        #expect(try await narrowed.pendingChangeCount() == 1, "and its triggers are gone")
    }

    @Test("backfilled rows come in table order and before later edits; reading them does not wait for a program's write lock")
    func backfillOrderAndReadsBesideWriters() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);")
        try file.execute("INSERT INTO a (id, v) VALUES (3, 'c'), (1, 'a'), (2, 'b')")
        let adapter = try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(
                name: "mapped", path: file.path, zoneID: Self.zone, tables: [TableMapping(table: "a")], busyTimeout: .seconds(1)))
        try file.execute("UPDATE a SET v = 'a2' WHERE id = 1")
        try file.execute("INSERT INTO a (id, v) VALUES (4, 'd')")
        let pending = try await adapter.pendingChanges(limit: 10)
        #expect(pending.saves.map(\.record.id.recordName) == ["2", "3", "1", "4"], "an edit after the backfill goes after it")
        #expect(pending.saves.map(\.version) == pending.saves.map(\.version).sorted() && Set(pending.saves.map(\.version)).count == 4)
        #expect(pending.saves.first { $0.record.id.recordName == "1" }?.record.fields["v"] == .string("a2"))

        // Another program takes the write lock and keeps it: with every change folded, pending
        // changes are still read (a write would wait, then fail after the 1 s busy timeout).
        let (locked, release) = (LockedValue(false), LockedValue(false))
        let writer = Task {
            try file.database.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.set(true)
                while !release.get() { Thread.sleep(forTimeInterval: 0.01) }
                try db.execute(sql: "COMMIT")
            }
        }
        while !locked.get() { try await Task.sleep(for: .milliseconds(5)) }
        let read: Result<PendingChanges, any Error>
        do {
            read = .success(try await adapter.pendingChanges(limit: 10))
        } catch {
            read = .failure(error)
        }
        release.set(true)
        try await writer.value
        #expect(try read.get().saves.map(\.record.id.recordName) == ["2", "3", "1", "4"])
    }

    @Test("change versions follow the capture clock and only grow: across folds, a clock set back, and a file restored from a copy")
    func versionsFollowTheClock() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);")
        let adapter = try Self.adapter(file, [TableMapping(table: "a")])
        func versions() async throws -> [String: Int64] {
            let pending = try await adapter.pendingChanges(limit: 100)
            var versions: [String: Int64] = [:]
            for save in pending.saves { versions[save.record.id.recordName] = save.version }
            for delete in pending.deletes { versions[delete.recordID.recordName] = delete.version }
            return versions
        }
        let before = Int64(Date().timeIntervalSince1970 * 1_000_000) - 1_000_000
        try file.execute("INSERT INTO a (id, v) VALUES (1, 'a'), (2, 'b')")
        let first = try await versions()
        #expect(first["1"]! >= before && first["1"]! < first["2"]!, "numbered from the clock (microseconds), in capture order")

        let restored = try SQLiteFile(directory, name: "copy.sqlite", schema: "")
        try file.database.backup(to: restored.database)
        // A change whose trigger read a clock set back by an hour (here, a delete of record 3)
        // still gets a higher version.
        try file.execute(#"INSERT INTO "_gateway_log" (record_name, table_name, at) VALUES ('3', 'a', julianday('now', '-1 hour'))"#)
        let second = try await versions()
        #expect(second["3"]! > second["2"]!)
        try file.execute("DELETE FROM a WHERE id = 1")
        let third = try await versions()
        #expect(third["1"]! > second["3"]!, "a later change of a record takes a higher version")

        // The copy numbers a change made now above every version the file handed out since it
        // was taken: the clock moved on.
        // A delete in the copy, its capture dated a second later, as anything after a restore is.
        try restored.execute("DELETE FROM a WHERE id = 2")
        try restored.execute(#"UPDATE "_gateway_log" SET at = julianday('now', '+1 second') WHERE record_name = '2'"#)
        let fromCopy = try await Self.adapter(restored, [TableMapping(table: "a")]).pendingChanges(limit: 100)
        #expect(fromCopy.deletes.map(\.recordID.recordName) == ["2"])
        #expect(fromCopy.deletes.map(\.version).allSatisfy { $0 > third["1"]! })
    }

    @Test("a backfill numbers rows in table order whatever their rowids: gaps, negatives, a column named rowid, WITHOUT ROWID, the extremes")
    func backfillNumbering() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(
            directory,
            schema: """
                CREATE TABLE g (id INTEGER PRIMARY KEY, v TEXT);
                CREATE TABLE s ("rowid" TEXT PRIMARY KEY, v TEXT);
                CREATE TABLE w (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
                CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT);
                """)
        try file.execute("INSERT INTO g (id, v) VALUES (1000, 'a'), (-5, 'b'), (7, 'c'), (0, 'd')")
        try file.execute(#"INSERT INTO s ("rowid", v) VALUES ('b', 'first'), ('a', 'second')"#)
        try file.execute("INSERT INTO w (k, v) VALUES ('b', 'x'), ('a', 'y')")
        try file.execute("INSERT INTO x (id, v) VALUES (9223372036854775807, 'max'), (-9223372036854775808, 'min')")
        let tables = ["g", "s", "w", "x"].map { TableMapping(table: $0, recordName: "\($0)-<pk>") }
        let adapter = try Self.adapter(file, tables)
        try file.execute("UPDATE g SET v = 'b2' WHERE id = -5")
        let pending = try await adapter.pendingChanges(limit: 20)
        #expect(
            pending.saves.map(\.record.id.recordName)
                == ["g-0", "g-7", "g-1000", "s-b", "s-a", "w-a", "w-b", "x--9223372036854775808", "x-9223372036854775807", "g--5"],
            "tables in name order, each in rowid (or key) order, the later edit last")
        let versions = pending.saves.map(\.version)
        #expect(versions == versions.sorted() && Set(versions).count == versions.count)
        #expect(try await Self.adapter(file, tables).pendingChangeCount() == 10, "reopening queues nothing again")
    }

    @Test("pending changes read with their rows in one statement: prefixes and suffixes in any script, negative, extreme and empty keys, deleted rows")
    func pendingChangesWithRows() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE n (id INTEGER PRIMARY KEY, v TEXT);")
        try file.execute("INSERT INTO n (id, v) VALUES (-3, 'minus'), (0, 'zero'), (9223372036854775807, 'max'), (42, 'gone')")
        let integers = try Self.adapter(file, [TableMapping(table: "n", recordName: "Ünï·<pk>")])
        try file.execute("DELETE FROM n WHERE id = 42")
        let pending = try await integers.pendingChanges(limit: 10)
        #expect(
            pending.saves.map { "\($0.record.id.recordName)=\($0.record.fields["v"].map { "\($0)" } ?? "nil")" }
                == ["Ünï·-3=string(\"minus\")", "Ünï·0=string(\"zero\")", "Ünï·9223372036854775807=string(\"max\")"])
        #expect(pending.deletes.map(\.recordID.recordName) == ["Ünï·42"], "a deleted row is a delete")

        let other = try SQLiteFile(directory, name: "texts", schema: "CREATE TABLE s (k TEXT PRIMARY KEY, v TEXT);")
        try other.execute("INSERT INTO s (k, v) VALUES ('a', 'plain'), ('ü|x', 'unicode'), ('', 'empty'), ('007', 'padded')")
        let texts = try Self.adapter(other, [TableMapping(table: "s", recordName: "<pk>.nöte")])
        let read = try await texts.pendingChanges(limit: 10)
        #expect(Set(read.saves.map(\.record.id.recordName)) == ["a.nöte", "ü|x.nöte", ".nöte", "007.nöte"])
        #expect(read.saves.first { $0.record.id.recordName == ".nöte" }?.record.fields["v"] == .string("empty"))
        #expect(read.saves.first { $0.record.id.recordName == "007.nöte" }?.record.fields["v"] == .string("padded"))
        #expect(read.deletes.isEmpty)
    }

    @Test("a column added to a synced table is picked up without a restart")
    func addedColumn() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT);")
        let adapter = try Self.adapter(file, [TableMapping(table: "note")])
        try file.execute("ALTER TABLE note ADD COLUMN color TEXT")
        try file.execute("INSERT INTO note VALUES ('n', 't', 'red')")
        #expect(try await adapter.pendingChanges(limit: 1).saves.first?.record.fields == ["title": .string("t"), "color": .string("red")])
        let remote = Record(id: RecordID(recordName: "m", zoneID: Self.zone), recordType: "note", fields: ["title": .string("r"), "color": .string("blue")])
        try await adapter.apply(DownloadedChanges(writes: [remote], state: SyncStateUpdate(zoneState: Data())))
        #expect(try file.rows("SELECT color FROM note WHERE id = 'm'").first?[0] as String? == "blue")
    }

    @Test("a synced table dropped and created again is captured again and joins the zone: its rows queued without metadata, the download position forgotten")
    func recreatedTable() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT);")
        let adapter = try Self.adapter(file, [TableMapping(table: "note")])
        try file.execute("INSERT INTO note VALUES ('a', 'A'), ('b', 'B')")
        #expect(try await adapter.markPendingSavesUploaded().count == 2)
        #expect(try await adapter.pendingChangeCount() == 0)

        // Written while no trigger exists: only the comparison can find these changes.
        try file.execute("DROP TABLE note; CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT); INSERT INTO note VALUES ('a', 'A2'), ('c', 'C')")
        let compared = try await adapter.pendingChanges(limit: 10)
        #expect(Set(compared.saves.map(\.record.id.recordName)) == ["a", "c"])
        #expect(compared.saves.allSatisfy { $0.metadata == nil }, "the restored rows share no history with what was synced")
        #expect(compared.deletes.isEmpty, "a synced row missing from the restored table is not deleted: the cloud brings it back")
        #expect(try await adapter.loadZoneState() == nil, "the zone is downloaded again")
        try file.execute("INSERT INTO note VALUES ('d', 'D')")
        #expect(try await adapter.pendingChanges(limit: 10).saves.map(\.record.id.recordName).contains("d"), "the triggers are back")

        // The same while the gateway is not running: found when it opens the file.
        try file.execute("DROP TABLE note; CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT); INSERT INTO note VALUES ('e', 'E')")
        let reopened = try Self.adapter(file, [TableMapping(table: "note")])
        let found = try await reopened.pendingChanges(limit: 10)
        #expect(Set(found.saves.map(\.record.id.recordName)) == ["e"])
        #expect(found.deletes.isEmpty, "the changes captured on the table that is gone are dropped: nobody deleted its rows")
        let again = try Self.adapter(file, [TableMapping(table: "note")])
        #expect(try await again.pendingChangeCount() == 1, "opening once more queues nothing new")
    }

    @Test("changing a row's key logs a delete of the old name and a save of the new one")
    func keyChange() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT);")
        let adapter = try Self.adapter(file, [TableMapping(table: "note")])
        try file.execute("INSERT INTO note VALUES ('old', 't')")
        let pending = try await adapter.pendingChanges(limit: 5)
        var update = SyncStateUpdate(zoneState: Data())
        update.settled[pending.saves[0].record.id] = pending.saves[0].version
        try await adapter.commit(update)
        try file.execute("UPDATE note SET id = 'new' WHERE id = 'old'")
        let changed = try await adapter.pendingChanges(limit: 5)
        #expect(changed.saves.map(\.record.id.recordName) == ["new"])
        #expect(changed.deletes.map(\.recordID.recordName) == ["old"])
    }

    @Test("uploaded and downloaded records of several tables remember their table; deletes find their rows")
    func tablesOfSyncedRecords() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let schema = """
            CREATE TABLE line (invoice INTEGER, code TEXT, qty INTEGER, PRIMARY KEY (invoice, code));
            CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT);
            """
        let file = try SQLiteFile(directory, schema: schema)
        try file.execute("INSERT INTO line VALUES (7, 'a', 3)")
        try file.execute("INSERT INTO note VALUES (1, 'one')")
        let tables = [
            TableMapping(table: "line", recordType: "Line", recordName: "<Type>.<pk>"),
            TableMapping(table: "note", recordType: "Note", recordName: "<Type>.<pk>"),
        ]
        let adapter = try Self.adapter(file, tables)
        #expect(try await adapter.markPendingSavesUploaded().count == 2)
        let remote = Record(id: RecordID(recordName: "Note.2", zoneID: Self.zone), recordType: "Note", fields: ["title": .string("two")])
        var state = SyncStateUpdate(zoneState: Data())
        state.metadata[remote.id] = RecordMetadata(syncedRecord: remote).encoded()
        try await adapter.apply(DownloadedChanges(writes: [remote], state: state))
        let remembered = try file.rows(#"SELECT record_name, table_name FROM "_gateway_records" ORDER BY record_name"#)
            .map { "\($0[0] as String)=\($0[1] as String)" }
        #expect(remembered == ["Line.7|a=line", "Note.1=note", "Note.2=note"])

        let gone = [RecordID(recordName: "Line.7|a", zoneID: Self.zone), RecordID(recordName: "Note.2", zoneID: Self.zone)]
        var removal = SyncStateUpdate(zoneState: Data())
        removal.removedMetadata = Set(gone)
        try await adapter.apply(DownloadedChanges(deletes: gone, state: removal))
        #expect(try file.count("SELECT COUNT(*) FROM line") == 0)
        #expect(try file.rows("SELECT id FROM note").map { $0[0] as Int64 } == [1])
        #expect(try await adapter.hasChanges() == false)
    }

    @Test("records of types the store has no table for are ignored")
    func unknownTypes() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-map")
        defer { directory.remove() }
        let file = try SQLiteFile(directory, schema: "CREATE TABLE note (id TEXT PRIMARY KEY, title TEXT);")
        let adapter = try Self.adapter(file, [TableMapping(table: "note")])
        let stranger = Record(id: RecordID(recordName: "x", zoneID: Self.zone), recordType: "Invoice", fields: ["total": .int64(3)])
        var state = SyncStateUpdate(zoneState: Data([1]))
        state.metadata[stranger.id] = Data([1])
        try await adapter.apply(DownloadedChanges(writes: [stranger], state: state))
        #expect(try file.count("SELECT COUNT(*) FROM note") == 0)
        #expect(try await adapter.syncedRecordIDs().isEmpty)
        #expect(try await adapter.loadZoneState() == Data([1]), "the token still moves")
    }
}
