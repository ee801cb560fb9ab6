import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// The PostgreSQL adapter against real tables: types from the catalog, keys, identifiers,
/// schema changes and clear errors.
@Suite("PostgreSQL adapter behaviour", .heavy)
struct PostgresAdapterBehaviourTests {
    static let zone = ZoneID(zoneName: "Types")

    /// A table with one column of each supported type, a composite key and odd identifiers.
    static func createTypes(in schema: String) -> [String] {
        [
            "CREATE SCHEMA \"\(schema)\"",
            "CREATE TYPE \"\(schema)\".mood AS ENUM ('calm', 'odd \"one\"')",
            #"""
            CREATE TABLE "\#(schema)"."Odd ""Table""" (
                "region" text, "n°" integer, small smallint, big bigint, exact numeric(30, 10), r real, d double precision,
                "flag" boolean, "bytes" bytea, stamp timestamptz, plain timestamp, day date, id uuid, doc jsonb, tags text[],
                counts integer[], feeling "\#(schema)".mood, label varchar(20), initial char(3),
                PRIMARY KEY ("region", "n°"))
            """#,
        ]
    }

    static let row = #"""
        INSERT INTO "%@"."Odd ""Table""" VALUES ('eu|west', 7, -3, 9007199254740993, 12345678901234567890.0123456789, 1.5, 2.25,
            true, '\x00ff', '2026-01-02 03:04:05.678+00', '2026-01-02 03:04:05.678', '2026-01-02',
            'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": [1, 2]}', ARRAY['x', 'y z'], ARRAY[1, 2, 3], 'odd "one"', 'label', 'ab')
        """#

    /// The commit of an upload that sent every save of `pending` and got each back as sent.
    static func uploaded(_ pending: PendingChanges) -> SyncStateUpdate {
        var update = SyncStateUpdate(zoneState: Data("z".utf8))
        for save in pending.saves {
            update.settled[save.record.id] = save.version
            update.metadata[save.record.id] = RecordMetadata(syncedRecord: save.record).encoded()
        }
        return update
    }

    /// A fresh database with `public.note` created by `table` (a CREATE TABLE statement), and an
    /// adapter syncing it.
    static func noteAdapter(_ label: String, table: String) async throws -> (PostgresEndpoint, PostgresAdapter) {
        let endpoint = try await PostgresTestServer.freshDatabase(label)
        try await PostgresConnectionPool.execute([table], on: endpoint, doing: "setting up")
        let adapter = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "notes", endpoint: endpoint, zoneID: Self.zone, tables: [PostgresTableMapping(table: "note")]))
        return (endpoint, adapter)
    }

    @Test("lists, locations, references and timestamps a text or jsonb column holds as text go back up as the cloud sent them while the cell is unchanged")
    func typedCellsKeepTheirValues() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter(
            "typed_cells", table: "CREATE TABLE public.note (id bigint PRIMARY KEY, tags text, place jsonb, parent text, at text, n bigint)")
        defer { Task { await adapter.close() } }
        try await PostgresConnectionPool.execute(["INSERT INTO public.note (id, n) VALUES (1, 1)"], on: endpoint, doing: "inserting")
        var record = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        let sent = TypedFieldSamples.fields(zone: Self.zone)
        record.fields = sent
        try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data())))

        // Another column edited: every typed value goes up as the cloud sent it.
        try await PostgresConnectionPool.execute(["UPDATE public.note SET n = 2"], on: endpoint, doing: "editing")
        var pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        for field in ["tags", "place", "parent", "at"] { #expect(pending[field] == sent[field], "\(field)") }
        #expect(pending["n"] == .int64(2))

        // The application rewrote one cell: that cell is what it holds now; the others keep theirs.
        try await PostgresConnectionPool.execute(["UPDATE public.note SET tags = 'plain'"], on: endpoint, doing: "editing")
        pending = try #require(try await adapter.pendingChanges(limit: 1).saves.first?.record)
        #expect(pending["tags"] == .string("plain"))
        #expect(pending["place"] == sent["place"])
    }

    @Test("types from the catalog become fields and come back exactly, with a composite key and odd identifiers")
    func typesRoundTrip() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("types")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        for statement in Self.createTypes(in: "source") + Self.createTypes(in: "replica") + [Self.row.replacingOccurrences(of: "%@", with: "source")] {
            try await pool.withConnection(doing: "setting up") { try await $0.query(PostgresQuery(unsafeSQL: statement), logger: $0.logger) }
        }
        let tables = [PostgresTableMapping(table: "Odd \"Table\"", recordType: "Odd")]
        let source = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "source", endpoint: endpoint, schema: "source", zoneID: Self.zone, tables: tables))
        let replica = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "replica", endpoint: endpoint, schema: "replica", zoneID: Self.zone, tables: tables))

        let pending = try await source.pendingChanges(limit: 10)
        #expect(pending.saves.count == 1, "the existing row is queued once")
        let record = try #require(pending.saves.first?.record)
        #expect(record.id.recordName == "eu\\|west|7", "a composite key, escaped")
        #expect(record["n°"] == nil, "key columns are the name, not fields")
        #expect(record["small"] == .int64(-3))
        #expect(record["big"] == .int64(9_007_199_254_740_993), "bigint beyond a double's precision stays exact")
        #expect(record["exact"] == .string("12345678901234567890.0123456789"), "numeric is kept exact, as text")
        #expect(record["r"] == .double(1.5))
        #expect(record["d"] == .double(2.25))
        #expect(record["flag"] == .int64(1))
        #expect(record["bytes"] == .bytes(Data([0x00, 0xff])))
        #expect(record["stamp"] == .timestamp(Timestamp(millisecondsSince1970: 1_767_323_045_678)))
        #expect(record["plain"] == .timestamp(Timestamp(millisecondsSince1970: 1_767_323_045_678)), "timestamp without zone is UTC")
        #expect(record["day"] == .timestamp(Timestamp(millisecondsSince1970: 1_767_312_000_000)))
        #expect(record["id"] == .string("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
        #expect(record["doc"] == .string(#"{"k": [1, 2]}"#))
        #expect(record["tags"] == .list([.string("x"), .string("y z")]))
        #expect(record["counts"] == .list([.int64(1), .int64(2), .int64(3)]))
        #expect(record["feeling"] == .string("odd \"one\""), "enums travel as their label")
        #expect(record["label"] == .string("label"))
        #expect(record["initial"] == .string("ab"), "char(n) pads with blanks, which PostgreSQL drops when it turns the value into text")

        var download = SyncStateUpdate(zoneState: Data("z".utf8))
        download.metadata[record.id] = Data("m".utf8)
        try await replica.apply(DownloadedChanges(writes: [record], state: download, expectedPendingVersions: [record.id: 0]))
        #expect(try await replica.hasChanges() == false, "the gateway's own writes are not captured")
        let compare = #"""
            SELECT "region", "n°", small, big, exact, r, d, flag, bytes, stamp, plain, day, id, doc, tags, counts, feeling, label, initial
            FROM "%@"."Odd ""Table"""
            """#
        var texts: [String] = []
        for schema in ["source", "replica"] {
            texts.append(
                try await pool.withConnection(doing: "reading") { connection in
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM (\(compare.replacingOccurrences(of: "%@", with: schema))) t"),
                        logger: connection.logger)
                    var text = ""
                    for try await (value) in rows.decode(String.self) { text += value }
                    return text
                })
        }
        #expect(texts[0] == texts[1], "the replica's row equals the source's, type for type")
        #expect(!texts[0].isEmpty)
        await source.close()
        await replica.close()
        await pool.close()
    }

    @Test("values no field holds exactly come back as they were: arrays of several dimensions, with NULLs, of json, NULL; timestamps finer than a millisecond, at a day's end, infinite; and a download of another field's edit keeps them")
    func valuesFieldsCannotHoldExactly() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("exact_values")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        let columns = """
            id int PRIMARY KEY, title text, tags text[], grid text[][], docs jsonb[], holes int[], amounts numeric[], shifted int[], empty text[],
            stamp timestamptz, plain timestamp, forever timestamptz, never date, zeros float8[]
            """
        try await PostgresConnectionPool.execute(
            [
                "CREATE SCHEMA a", "CREATE SCHEMA b", "CREATE TABLE a.note (\(columns))", "CREATE TABLE b.note (\(columns))",
                """
                INSERT INTO a.note VALUES
                  (1, 'x', NULL, '{{a,b},{c,d}}', ARRAY['{"k": 1}'::jsonb, '[1, 2.50]'], '{NULL,2}', '{1.50,2}', '[0:1]={7,8}', '{}',
                   '2024-06-01 12:34:56.789012+00', '2024-01-01 23:59:59.9999', 'infinity', '-infinity', '{-0,1.5,NaN}'),
                  (2, 'y', '{NULL,x}', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '-infinity', 'infinity', '{0,2}')
                """,
            ], on: endpoint, doing: "setting up")
        let directory = try TemporaryDirectory(prefix: "pg-exact")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        func gateway(_ schema: String) async throws -> (Synchronizer, PostgresAdapter) {
            let adapter = try await PostgresAdapter.open(
                PostgresAdapterConfiguration(name: schema, endpoint: endpoint, schema: schema, zoneID: Self.zone, tables: [PostgresTableMapping(table: "note")]))
            return (Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: "gateway")), adapter)
        }
        let (a, adapterA) = try await gateway("a")
        let (b, adapterB) = try await gateway("b")
        func rows(_ schema: String, _ columns: String) async throws -> [String] {
            try await pool.withConnection(doing: "reading") { connection in
                let rows = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM (SELECT \(columns) FROM \(schema).note ORDER BY id) t"), logger: connection.logger)
                var texts: [String] = []
                for try await (value) in rows.decode(String.self) { texts.append(value) }
                return texts
            }
        }
        let exact = "id, title, tags, grid, docs, holes, amounts, shifted, empty, forever, never, zeros::text"
        let before = try await rows("a", exact + ", stamp, plain")
        #expect(try await a.sync().succeeded)
        #expect(try await b.sync().succeeded)
        #expect(try await rows("b", exact) == rows("a", exact), "every value but a timestamp's finer part arrives as it was")
        let stamps = try await rows("b", "stamp, plain")
        #expect(stamps.first == #"{"stamp":"2024-06-01T12:34:56.789+00:00","plain":"2024-01-01T23:59:59.999"}"#, "milliseconds, rounded down: \(stamps)")
        #expect(stamps.last == #"{"stamp":null,"plain":null}"#)

        // b edits the title only; a downloads the record and keeps every other value as it was.
        try await PostgresConnectionPool.execute(["UPDATE b.note SET title = 'edited in b'"], on: endpoint, doing: "editing")
        #expect(try await b.sync().succeeded)
        let report = try await a.sync()
        #expect(report.succeeded)
        #expect(report.adapters[0].downloaded == 2)
        #expect(try await rows("a", "title") == [#"{"title":"edited in b"}"#, #"{"title":"edited in b"}"#])
        let after = try await rows("a", exact + ", stamp, plain")
        #expect(after == before.map { $0.replacingOccurrences(of: #""title":"x""#, with: #""title":"edited in b""#).replacingOccurrences(of: #""title":"y""#, with: #""title":"edited in b""#) })
        #expect(try await adapterA.hasChanges() == false)
        #expect(try await a.sync().adapters[0].uploaded == 0, "nothing a download kept looks like an edit")

        // A list as a store without arrays keeps it (SQLite: its JSON text) goes back into the array.
        let fromSQLite = Record(
            id: RecordID(recordName: "3", zoneID: Self.zone), recordType: "note",
            fields: [
                "tags": .string(#"["a","b c"]"#), "shifted": .string("[0:1]={7,8}"),
                "zeros": .list([.double(.nan), .double(2), .double(-.infinity)]),
            ])
        try await adapterA.apply(DownloadedChanges(writes: [fromSQLite], state: SyncStateUpdate(zoneState: try await adapterA.loadZoneState() ?? Data())))
        #expect(
            try await rows("a", "tags, shifted::text AS shifted, zeros::text AS zeros").last
                == #"{"tags":["a","b c"],"shifted":"[0:1]={7,8}","zeros":"{NaN,2,-Infinity}"}"#, "a list's NaN and infinities too")
        await adapterA.close()
        await adapterB.close()
        await pool.close()
    }

    @Test("rows whose keys differ only in Unicode normalization sync as separate records, by COPY and by statement")
    func canonicallyEquivalentKeys() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("nfc_nfd")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        // Composed and decomposed accents and the Ångström sign: equal as Swift strings, not to
        // PostgreSQL's text comparison.
        let keys = ["\u{E9}", "e\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}"]
        var statements = ["CREATE SCHEMA a", "CREATE SCHEMA b"]
        statements += ["a", "b"].map { "CREATE TABLE \($0).note (id text PRIMARY KEY, title text)" }
        for (index, key) in keys.enumerated() { statements.append("INSERT INTO a.note VALUES ('\(key)', 'title \(index)')") }
        try await PostgresConnectionPool.execute(statements, on: endpoint, doing: "setting up")
        func rows(_ schema: String) async throws -> [String: String] {
            try await pool.withConnection(doing: "reading") { connection in
                var result: [String: String] = [:]
                let rows = try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT encode(convert_to(id, 'UTF8'), 'hex'), title FROM \(schema).note"), logger: connection.logger)
                for try await (hex, title) in rows.decode((String, String).self) { result[hex] = title }
                return result
            }
        }
        let directory = try TemporaryDirectory(prefix: "pg-nfd")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        var gateways: [Synchronizer] = []
        var adapters: [PostgresAdapter] = []
        for schema in ["a", "b"] {
            let adapter = try await PostgresAdapter.open(
                PostgresAdapterConfiguration(name: schema, endpoint: endpoint, schema: schema, zoneID: Self.zone, tables: [PostgresTableMapping(table: "note")]))
            adapters.append(adapter)
            gateways.append(Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: schema)))
        }
        try await Synchronizer.syncInTurns(gateways)
        let first = try await rows("a")
        #expect(first.count == keys.count)
        #expect(try await rows("b") == first, "new rows went in by COPY, each under its own key")

        try await PostgresConnectionPool.execute(
            ["UPDATE a.note SET title = 'edited in a' WHERE id IN ('\(keys[0])', '\(keys[3])')",
             "UPDATE b.note SET title = 'edited in b' WHERE id = '\(keys[1])'", "DELETE FROM b.note WHERE id = '\(keys[4])'"],
            on: endpoint, doing: "editing")
        try await Synchronizer.syncInTurns(gateways)
        let after = try await rows("a")
        #expect(try await rows("b") == after)
        #expect(after == ["c3a9": "edited in a", "65cc81": "edited in b", "c385": "title 2", "41cc8a": "edited in a"])
        for adapter in adapters { await adapter.close() }
        await pool.close()
    }

    @Test("a downloaded record whose name cannot be a key of its table is left out and the rest of the page applies, by COPY and by statement")
    func namesThatFitNoKey() async throws {
        for (label, absent) in [("no_key_copy", true), ("no_key_statement", false)] {
            let (endpoint, adapter) = try await Self.noteAdapter(label, table: "CREATE TABLE public.note (id integer PRIMARY KEY, n smallint, title text)")
            // Not a number, a number out of integer's range, empty, and two that fit.
            let names = ["1", "hello", "99999999999", "", "2"]
            let records = names.map { Record(id: RecordID(recordName: $0, zoneID: Self.zone), recordType: "note", fields: ["title": .string("t")]) }
            var state = SyncStateUpdate(zoneState: Data("token".utf8))
            for record in records { state.metadata[record.id] = RecordMetadata(syncedRecord: record).encoded() }
            try await adapter.apply(
                DownloadedChanges(
                    writes: records, state: state, expectedPendingVersions: Dictionary(uniqueKeysWithValues: records.map { ($0.id, 0) }),
                    absentLocally: absent ? Set(records.map(\.id)) : []))
            let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
            let ids = try await pool.withConnection(doing: "reading") { connection in
                var ids: [Int] = []
                for try await id in try await connection.query("SELECT id FROM public.note ORDER BY id", logger: connection.logger).decode(Int.self) { ids.append(id) }
                return ids
            }
            await pool.close()
            #expect(ids == [1, 2], "\(label)")
            #expect(try await adapter.loadZoneState() == Data("token".utf8))
            #expect(Set(try await adapter.localState(for: records.map(\.id)).keys.map(\.recordName)) == ["1", "2"])
            await adapter.close()
        }
    }

    @Test("new records go in by COPY with every type exactly as statements write them; array columns fall back to statements")
    func copyWritesTypesExactly() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("copy_types")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        var statements: [String] = []
        // COPY takes names without double quotes: the same table under a plain name.
        for schema in ["source", "by_statement", "by_copy"] {
            statements += Self.createTypes(in: schema) + [#"ALTER TABLE "\#(schema)"."Odd ""Table""" RENAME TO "Odd Table""#]
        }
        statements.append(Self.row.replacingOccurrences(of: "%@", with: "source").replacingOccurrences(of: #"."Odd ""Table""""#, with: #"."Odd Table""#))
        for statement in statements {
            try await pool.withConnection(doing: "setting up") { try await $0.query(PostgresQuery(unsafeSQL: statement), logger: $0.logger) }
        }
        let withoutArrays = PostgresTableMapping(table: "Odd Table", recordType: "Odd", exclude: ["tags", "counts"])
        let source = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "source", endpoint: endpoint, schema: "source", zoneID: Self.zone, tables: [withoutArrays]))
        var record = try #require(try await source.pendingChanges(limit: 10).saves.first?.record)
        // Values at the edges of what COPY's text input reads.
        record["exact"] = .string("-0.0000000001")
        record["r"] = .double(-1.0e-5)
        record["d"] = .double(.infinity)
        record["label"] = .string("tab\there \\N")
        for (schema, absent) in [("by_statement", false), ("by_copy", true)] {
            let target = try await PostgresAdapter.open(
                PostgresAdapterConfiguration(name: schema, endpoint: endpoint, schema: schema, zoneID: Self.zone, tables: [withoutArrays]))
            var update = SyncStateUpdate(zoneState: Data("z".utf8))
            update.metadata[record.id] = Data("m".utf8)
            try await target.apply(
                DownloadedChanges(writes: [record], state: update, expectedPendingVersions: [record.id: 0], absentLocally: absent ? [record.id] : []))
            #expect(try await target.hasChanges() == false, "the gateway's own writes are not captured")
            let local = try await target.localState(for: [record.id])
            #expect(local[record.id]?.metadata == Data("m".utf8), "the metadata went in with the row")
            await target.close()
        }
        let compare = #"""
            SELECT "region", "n°", small, big, exact, r, d, flag, bytes, stamp, plain, day, id, doc, feeling, label, initial
            FROM "%@"."Odd Table"
            """#
        var texts: [String] = []
        for schema in ["by_statement", "by_copy"] {
            texts.append(
                try await pool.withConnection(doing: "reading") { connection in
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT row_to_json(t)::text FROM (\(compare.replacingOccurrences(of: "%@", with: schema))) t"),
                        logger: connection.logger)
                    var text = ""
                    for try await (value) in rows.decode(String.self) { text += value }
                    return text
                })
        }
        #expect(!texts[0].isEmpty)
        #expect(texts[0] == texts[1], "COPY wrote the row exactly as the statements did")
        await source.close()
        await pool.close()
    }

    @Test("a column added to a synced table is picked up without a restart")
    func addedColumn() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("added_column", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        try await PostgresConnectionPool.execute(
            ["ALTER TABLE public.note ADD COLUMN rank integer", "INSERT INTO public.note VALUES (1, 'one', 5)"], on: endpoint,
            doing: "changing the table")
        let record = try #require(try await adapter.pendingChanges(limit: 10).saves.first?.record)
        #expect(record.fields == ["title": .string("one"), "rank": .int64(5)])
        await adapter.close()
    }

    @Test("one statement's many rows, a key changed by an update, an unchanged update and a delete are each captured once")
    func statementCapture() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("statement_capture", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        try await PostgresConnectionPool.execute(
            ["INSERT INTO public.note SELECT i, 'n' || i FROM generate_series(1, 500) AS i"], on: endpoint, doing: "writing")
        #expect(try await adapter.pendingChangeCount() == 500)
        #expect(try await adapter.markPendingSavesUploaded().count == 500)

        try await PostgresConnectionPool.execute(
            [
                "UPDATE public.note SET id = id + 1000 WHERE id <= 2",  // 1, 2 gone; 1001, 1002 new
                "UPDATE public.note SET title = title WHERE id = 3",  // same values: still a change to compare
                "DELETE FROM public.note WHERE id IN (4, 5)",
                "INSERT INTO public.note VALUES (6, 'six') ON CONFLICT (id) DO UPDATE SET title = 'six'",
            ], on: endpoint, doing: "changing")
        let pending = try await adapter.pendingChanges(limit: 100)
        #expect(Set(pending.saves.map(\.record.id.recordName)) == ["1001", "1002", "3", "6"])
        #expect(Set(pending.deletes.map(\.recordID.recordName)) == ["1", "2", "4", "5"])
        await adapter.close()
    }

    @Test("TRUNCATE is captured: every synced row reads as deleted unless written again after it, also under session_replication_role = replica")
    func truncateCapture() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("truncate_capture", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        try await PostgresConnectionPool.execute(
            ["INSERT INTO public.note SELECT i, 'n' || i FROM generate_series(1, 5) AS i"], on: endpoint, doing: "writing")
        #expect(try await adapter.markPendingSavesUploaded().count == 5)
        #expect(try await adapter.hasChanges() == false)

        try await PostgresConnectionPool.execute(
            ["TRUNCATE public.note", "INSERT INTO public.note VALUES (2, 'two again')"], on: endpoint, doing: "truncating")
        #expect(try await adapter.hasChanges())
        #expect(try await adapter.pendingChangeCount() == 5, "the five synced rows, row 2 counted once")
        let pending = try await adapter.pendingChanges(limit: 100)
        #expect(Set(pending.deletes.map(\.recordID.recordName)) == ["1", "3", "4", "5"])
        #expect(pending.saves.map(\.record.id.recordName) == ["2"])
        _ = try await adapter.markPendingSavesUploaded()

        // A write made as a replication subscriber applies it is the store's change too.
        try await PostgresConnectionPool.execute(
            ["SET session_replication_role = replica", "UPDATE public.note SET title = 'replicated' WHERE id = 2", "RESET session_replication_role"],
            on: endpoint, doing: "replicating")
        #expect(try await adapter.pendingChanges(limit: 100).saves.map(\.record.id.recordName) == ["2"])
        await adapter.close()
    }

    @Test("a downloaded value the table cannot take fails the apply with a message naming the table and the kind of refusal, never the value")
    func refusedValueMessage() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("refused_value", table: "CREATE TABLE public.note (id integer PRIMARY KEY, qty integer, code text UNIQUE)")
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (1, 1, 'a')"], on: endpoint, doing: "writing")
        _ = try await adapter.markPendingSavesUploaded()
        func apply(_ fields: [String: FieldValue], name: String) async throws {
            let record = Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "note", fields: fields)
            try await adapter.apply(DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data("z".utf8))))
        }
        let badCast = await #expect(throws: PostgresAdapterError.self) { try await apply(["qty": .string("twelve-SECRET")], name: "2") }
        #expect(badCast?.message.contains("into table note was refused: a value is not valid input for its column's type") == true, "\(String(describing: badCast))")
        #expect(badCast?.message.contains("SECRET") == false)
        #expect(badCast?.refusedRecordName == "2", "the synchronizer can leave that record out")
        // In a page of many, the message names the record refused, found by writing halves.
        let page = (10..<40).map { index in
            Record(
                id: RecordID(recordName: "\(index)", zoneID: Self.zone), recordType: "note",
                fields: ["qty": index == 27 ? .string("many-SECRET") : .int64(Int64(index))])
        }
        let named = await #expect(throws: PostgresAdapterError.self) {
            try await adapter.apply(DownloadedChanges(writes: page, state: SyncStateUpdate(zoneState: Data("z".utf8))))
        }
        #expect(named?.message.hasPrefix("writing downloaded record 27 into table note was refused: a value is not valid input") == true, "\(String(describing: named))")
        #expect(named?.message.contains("SECRET") == false)
        #expect(named?.refusedRecordName == "27")
        let duplicate = await #expect(throws: PostgresAdapterError.self) { try await apply(["qty": .int64(2), "code": .string("a")], name: "3") }
        #expect(duplicate?.message.contains("a unique index already holds that key (table note, constraint note_code_key)") == true, "\(String(describing: duplicate))")
        #expect(duplicate?.refusedRecordName == nil, "a key another row holds is not the record's values alone")
        await adapter.close()
    }

    @Test("a text longer than its varchar or char column, or than a varchar key, is refused on every write path, never cut to fit")
    func tooLongTextIsRefusedNotCut() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter(
            "too_long_text", table: "CREATE TABLE public.note (id varchar(3) PRIMARY KEY, title varchar(5), flag char(2))")
        defer { Task { await adapter.close() } }
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES ('abc', 'short', 'ok')"], on: endpoint, doing: "writing")
        _ = try await adapter.markPendingSavesUploaded()
        func rows() async throws -> [String] {
            try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
                let rows = try await connection.query("SELECT id || '|' || title || '|' || flag FROM public.note ORDER BY id", logger: connection.logger)
                var found: [String] = []
                for try await (row) in rows.decode(String.self) { found.append(row) }
                return found
            }
        }
        func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
            Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "note", fields: fields)
        }
        let cases: [(record: Record, absent: Bool)] = [
            (note("abc", ["title": .string("much too long"), "flag": .string("ok")]), false),  // an update
            (note("abc", ["title": .string("short"), "flag": .string("way too long")]), false),
            (note("abcdef", ["title": .string("new"), "flag": .string("ok")]), false),  // a key cut to "abc" would overwrite that row
            (note("xyz", ["title": .string("much too long"), "flag": .string("ok")]), true),  // a plain insert
        ]
        for (record, absent) in cases {
            var page = DownloadedChanges(writes: [record], state: SyncStateUpdate(zoneState: Data("z".utf8)))
            if absent { page.absentLocally = [record.id] }
            let refused = await #expect(throws: PostgresAdapterError.self, "\(record.id.recordName) \(record.fields)") { try await adapter.apply(page) }
            #expect(refused?.refusedRecordName == record.id.recordName, "\(String(describing: refused))")
            #expect(try await rows() == ["abc|short|ok"], "nothing was cut to fit")
        }
    }

    @Test("a row a BEFORE trigger skips by returning NULL is named as refused, not taken for written")
    func triggerThatSkipsIsARefusal() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("trigger_skips", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        defer { Task { await adapter.close() } }
        try await PostgresConnectionPool.execute(
            [
                "INSERT INTO public.note SELECT i, 'note ' || i FROM generate_series(1, 40) AS i",
                "CREATE FUNCTION public.skip() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.title = 'ignored' THEN RETURN NULL; END IF; RETURN NEW; END $$",
                "CREATE TRIGGER skip BEFORE UPDATE ON public.note FOR EACH ROW EXECUTE FUNCTION public.skip()",
            ], on: endpoint, doing: "setting up")
        _ = try await adapter.markPendingSavesUploaded()
        let page = (1...40).map { index in
            Record(
                id: RecordID(recordName: "\(index)", zoneID: Self.zone), recordType: "note",
                fields: ["title": .string(index == 23 ? "ignored" : "edited \(index)")])
        }
        let skipped = await #expect(throws: PostgresAdapterError.self) {
            try await adapter.apply(DownloadedChanges(writes: page, state: SyncStateUpdate(zoneState: Data("z".utf8))))
        }
        #expect(skipped?.refusedRecordName == "23", "\(String(describing: skipped))")
        #expect(skipped?.message.contains("skipped by a trigger") == true, "\(String(describing: skipped))")
        let edited = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query("SELECT count(*) FROM public.note WHERE title LIKE 'edited%'", logger: connection.logger)
            var count: Int64 = 0
            for try await (value) in rows.decode(Int64.self) { count = value }
            return count
        }
        #expect(edited == 0, "nothing of the page was written")
        // Without that record, the page goes in.
        try await adapter.apply(DownloadedChanges(writes: page.filter { $0.id.recordName != "23" }, state: SyncStateUpdate(zoneState: Data("z".utf8))))
    }

    @Test("records another store's values make unacceptable here are left out of their page and reported; the rest syncs, and a dropped constraint lets them in")
    func refusedDownloadsThroughTheSynchronizer() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("refused_downloads")
        try await PostgresConnectionPool.execute(
            [
                "CREATE SCHEMA a", "CREATE SCHEMA b", "CREATE TABLE a.note (id int PRIMARY KEY, title text, qty int)",
                "CREATE TABLE b.note (id int PRIMARY KEY, title varchar(8), qty int CONSTRAINT positive CHECK (qty > 0))",
                "INSERT INTO a.note SELECT i, 'note ' || i, i FROM generate_series(1, 30) AS i",
                "UPDATE a.note SET qty = -7 WHERE id = 12", "UPDATE a.note SET title = 'a title too long' WHERE id = 21",
                "UPDATE a.note SET title = 'vetoed' WHERE id = 25",
                "CREATE FUNCTION b.veto() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.title = 'vetoed' THEN RAISE EXCEPTION 'no such title'; END IF; RETURN NEW; END $$",
                "CREATE TRIGGER veto BEFORE INSERT OR UPDATE ON b.note FOR EACH ROW EXECUTE FUNCTION b.veto()",
            ], on: endpoint, doing: "setting up")
        let directory = try TemporaryDirectory(prefix: "pg-refused")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        func gateway(_ schema: String) async throws -> (Synchronizer, PostgresAdapter) {
            let adapter = try await PostgresAdapter.open(
                PostgresAdapterConfiguration(name: schema, endpoint: endpoint, schema: schema, zoneID: Self.zone, tables: [PostgresTableMapping(table: "note")]))
            return (Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: schema)), adapter)
        }
        let (a, adapterA) = try await gateway("a")
        let (b, adapterB) = try await gateway("b")
        defer { Task { await adapterA.close(); await adapterB.close() } }
        func count() async throws -> Int64 {
            try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting") { connection in
                let rows = try await connection.query("SELECT count(*) FROM b.note", logger: connection.logger)
                var total: Int64 = 0
                for try await (value) in rows.decode(Int64.self) { total = value }
                return total
            }
        }
        #expect(try await a.sync().succeeded)
        let first = try await b.sync().adapters[0]
        #expect(first.outcome == .synced, "\(first.outcome)")
        #expect(first.failedRecords == 3)
        #expect(Set(first.refusedAtEnd.map(\.recordID.recordName)) == ["12", "21", "25"])
        let vetoed = try #require(first.refusedAtEnd.first { $0.recordID.recordName == "25" })
        #expect(vetoed.failure.message.contains("a trigger refused a row"), "\(vetoed.failure.message)")
        let check = try #require(first.refusedAtEnd.first { $0.recordID.recordName == "12" })
        #expect(check.failure.message.contains("a check constraint refused a row"), "\(check.failure.message)")
        #expect(!check.failure.message.contains("-7"), "never the value")
        #expect(try await count() == 27)

        try await PostgresConnectionPool.execute(["ALTER TABLE b.note DROP CONSTRAINT positive", "DROP TRIGGER veto ON b.note"], on: endpoint, doing: "fixing")
        let second = try await b.sync().adapters[0]
        #expect(second.outcome == .synced && second.failedRecords == 1, "\(second)")
        #expect(second.refusedAtEnd.map(\.recordID.recordName) == ["21"])
        #expect(try await count() == 29)
        #expect(try await adapterB.pendingChangeCount() == 0)
    }

    @Test("parents first: a first sync queues a parent table's rows first, and a page writes parents before their children and deletes children first, whatever the order of its records")
    func foreignKeyOrder() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("foreign_keys")
        try await PostgresConnectionPool.execute(
            [
                "CREATE TABLE public.child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES public.parent (id), title text)",
                "CREATE TABLE public.parent (id int PRIMARY KEY, title text)",
            ].reversed() + ["INSERT INTO public.parent VALUES (10, 'p')", "INSERT INTO public.child VALUES (10, 10, 'c')"],
            on: endpoint, doing: "setting up")
        // The child table first in the configuration, as its records come first in the page.
        let adapter = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: "family", endpoint: endpoint, zoneID: Self.zone,
                tables: [PostgresTableMapping(table: "child", recordName: "<Type>.<pk>"), PostgresTableMapping(table: "parent", recordName: "<Type>.<pk>")]))
        // The rows the first sync queues upload parents first, so they reach other stores first.
        #expect(try await adapter.pendingChanges(limit: 10).saves.map(\.record.id.recordName) == ["parent.10", "child.10"])
        func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: Self.zone) }
        let child = Record(id: id("child.1"), recordType: "child", fields: ["parent_id": .int64(1), "title": .string("c")])
        let parent = Record(id: id("parent.1"), recordType: "parent", fields: ["title": .string("p")])
        var synced = SyncStateUpdate(zoneState: Data("z".utf8))
        for record in [child, parent] { synced.metadata[record.id] = RecordMetadata(syncedRecord: record).encoded() }
        var page = DownloadedChanges(writes: [child, parent], state: synced)
        page.absentLocally = [child.id, parent.id]
        try await adapter.apply(page)
        try await adapter.apply(DownloadedChanges(writes: [child, parent], state: SyncStateUpdate(zoneState: Data("z".utf8))))
        try await adapter.apply(DownloadedChanges(deletes: [parent.id, child.id], state: SyncStateUpdate(zoneState: Data("z".utf8))))
        let left = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting") { connection in
            var count: Int64 = -1
            for try await value in try await connection.query("SELECT (SELECT count(*) FROM public.parent WHERE id = 1) + (SELECT count(*) FROM public.child WHERE id = 1)", logger: connection.logger)
                .decode(Int64.self)
            {
                count = value
            }
            return count
        }
        #expect(left == 0)
        await adapter.close()
    }

    @Test("captured changes wait in the log until the adapter moves them; an edit still in the log is kept by an apply and outlives an upload's settling")
    func captureLog() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("capture_log", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        func scalar(_ sql: String) async throws -> String {
            try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
                let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
                for try await value in rows.decode(String.self) { return value }
                return ""
            }
        }
        // Two statements touching one row: the log holds both, the adapter counts the record once.
        try await PostgresConnectionPool.execute(
            ["INSERT INTO public.note SELECT i, 'n' || i FROM generate_series(1, 300) AS i", "UPDATE public.note SET title = 'one' WHERE id = 1"],
            on: endpoint, doing: "writing")
        #expect(try await scalar("SELECT count(*)::text FROM gateway.change_log") == "301")
        #expect(try await scalar("SELECT count(*)::text FROM gateway.changes") == "0")
        #expect(try await adapter.hasChanges())
        #expect(try await adapter.pendingChangeCount() == 300)

        let first = try await adapter.pendingChanges(limit: 1_000)
        #expect(first.saves.count == 300)
        #expect(first.saves.first { $0.record.id.recordName == "1" }?.record.fields["title"] == .string("one"))
        #expect(try await scalar("SELECT count(*)::text FROM gateway.change_log") == "0", "reading the pending changes moved the log")
        #expect(Set(first.saves.map(\.version)).count == 300, "each record has a version of its own")

        // Record 1 is uploaded as read above, but edited again before the upload is settled:
        // the edit, still in the log when the outcome commits, keeps the record pending.
        let one = try #require(first.saves.first { $0.record.id.recordName == "1" })
        try await PostgresConnectionPool.execute(["UPDATE public.note SET title = 'one, edited' WHERE id = 1"], on: endpoint, doing: "editing")
        try await adapter.commit(Self.uploaded(first))
        let again = try await adapter.pendingChanges(limit: 1_000)
        #expect(again.saves.map(\.record.id.recordName) == ["1"])
        #expect(try #require(again.saves.first).version > one.version)
        #expect(again.saves.first?.record.fields["title"] == .string("one, edited"))

        // The merge read record 2 as not pending; it is edited before the page is applied. The
        // edit sits in the log, and the apply still leaves the record alone.
        let two = RecordID(recordName: "2", zoneID: Self.zone)
        #expect(try await adapter.localState(for: [two])[two]?.pendingVersion == nil)
        try await PostgresConnectionPool.execute(["UPDATE public.note SET title = 'two, local' WHERE id = 2"], on: endpoint, doing: "editing")
        var page = DownloadedChanges(state: SyncStateUpdate(zoneState: Data("z2".utf8)))
        page.writes = [Record(id: two, recordType: "note", fields: ["title": .string("two, from the cloud")])]
        page.expectedPendingVersions[two] = 0
        try await adapter.apply(page)
        #expect(try await scalar("SELECT title FROM public.note WHERE id = 2") == "two, local")
        #expect(Set(try await adapter.pendingChanges(limit: 1_000).saves.map(\.record.id.recordName)) == ["1", "2"])
        await adapter.close()
    }

    @Test("a NOT NULL column with a default that a record has no value for takes its default in a new row and keeps its value in an existing one, by COPY and by statements", arguments: [false, true])
    func notNullDefaultsWhereTheRecordHasNoValue(absent: Bool) async throws {
        let (endpoint, adapter) = try await Self.noteAdapter(
            "not_null_defaults_\(absent)",
            table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text, status text NOT NULL DEFAULT 'active', n bigint NOT NULL DEFAULT 0)")
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (1, 'Old', 'archived', 7)"], on: endpoint, doing: "writing")
        _ = try await adapter.pendingChanges(limit: 10)
        // As a store without those columns writes them: no value for status or n.
        var records = [("1", "Old, edited elsewhere"), ("2", "New"), ("3", "Set")].map { name, title in
            Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "note", fields: ["title": .string(title)])
        }
        records[2]["status"] = .string("draft")
        var page = DownloadedChanges(writes: records, state: SyncStateUpdate(zoneState: Data("z".utf8)))
        if absent { page.absentLocally = [records[1].id, records[2].id] }
        try await adapter.apply(page)
        let rows = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query("SELECT id, title, status, n FROM public.note ORDER BY id", logger: connection.logger)
            var found: [String] = []
            for try await (id, title, status, n) in rows.decode((Int32, String, String, Int64).self) { found.append("\(id) \(title) \(status) \(n)") }
            return found
        }
        #expect(rows == ["1 Old, edited elsewhere archived 7", "2 New active 0", "3 Set draft 0"])
        await adapter.close()
    }

    @Test("a column added with a default that the cloud has no values for keeps its defaults when records arrive without it; a field the cloud clears is cleared")
    func addedColumnKeepsItsDefaults() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("added_column_defaults", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text, rank bigint)")
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (1, 'one', 1), (2, 'two', 2)"], on: endpoint, doing: "writing")
        let first = try await adapter.pendingChanges(limit: 10)
        try await adapter.commit(Self.uploaded(first))
        try await PostgresConnectionPool.execute(["ALTER TABLE public.note ADD COLUMN color text DEFAULT 'red'"], on: endpoint, doing: "migrating")
        let ids = ["1", "2", "3"].map { RecordID(recordName: $0, zoneID: Self.zone) }
        var page = DownloadedChanges(
            writes: [
                Record(id: ids[0], recordType: "note", fields: ["title": .string("one, edited")]),
                Record(id: ids[1], recordType: "note", fields: ["title": .string("two"), "rank": .int64(2)]),
                Record(id: ids[2], recordType: "note", fields: ["title": .string("three"), "rank": .int64(3)]),
            ], state: SyncStateUpdate(zoneState: Data("z2".utf8)))
        page.expectedPendingVersions = Dictionary(uniqueKeysWithValues: ids.map { ($0, Int64(0)) })
        page.absentLocally = [ids[2]]
        try await adapter.apply(page)
        let rows = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query("SELECT id, title, rank, color FROM public.note ORDER BY id", logger: connection.logger)
            var found: [String] = []
            for try await (id, title, rank, color) in rows.decode((Int32, String, Int64?, String?).self) {
                found.append("\(id) \(title) \(rank.map(String.init) ?? "-") \(color ?? "-")")
            }
            return found
        }
        #expect(rows == ["1 one, edited - red", "2 two 2 red", "3 three 3 red"], "the cleared rank is cleared; a new row takes the default")
        await adapter.close()
    }

    @Test("a row another program updates while a page is applied keeps that edit: the apply is rolled back and made again without it")
    func editCommittedDuringApply() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("edit_during_apply", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        func titles() async throws -> [String] {
            try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
                let rows = try await connection.query("SELECT title FROM public.note ORDER BY id", logger: connection.logger)
                var titles: [String] = []
                for try await title in rows.decode(String.self) { titles.append(title) }
                return titles
            }
        }
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (3, 'three'), (4, 'four')"], on: endpoint, doing: "writing")
        let first = try await adapter.pendingChanges(limit: 100)
        try await adapter.commit(Self.uploaded(first))
        #expect(try await adapter.pendingChangeCount() == 0)

        let (three, four) = (RecordID(recordName: "3", zoneID: Self.zone), RecordID(recordName: "4", zoneID: Self.zone))
        var page = DownloadedChanges(state: SyncStateUpdate(zoneState: Data("z2".utf8)))
        page.writes = [
            Record(id: three, recordType: "note", fields: ["title": .string("three, from the cloud")]),
            Record(id: four, recordType: "note", fields: ["title": .string("four, from the cloud")]),
        ]
        page.expectedPendingVersions = [three: 0, four: 0]
        let applied = page
        // Another program's update of row 3 is under way when the apply checks for edits (not
        // committed: not seen), and commits while the apply's write of the row waits for it.
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "an edit held open") { editor in
            try await editor.query("BEGIN", logger: editor.logger)
            try await editor.query("UPDATE public.note SET title = 'three, local' WHERE id = 3", logger: editor.logger)
            let applying = Task { try await adapter.apply(applied) }
            // PostgreSQL tells no client when a backend starts to wait for a lock: the server's
            // lock table is read until the apply waits there.
            let deadline = ContinuousClock.now + .seconds(60)
            while try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "watching locks", { connection in
                let rows = try await connection.query("SELECT count(*) FROM pg_locks WHERE NOT granted", logger: connection.logger)
                for try await count in rows.decode(Int64.self) { return count == 0 }
                return true
            }) {
                guard ContinuousClock.now < deadline else { Issue.record("the apply never waited for the row's lock"); break }
                try await Task.sleep(for: .milliseconds(20))
            }
            try await editor.query("COMMIT", logger: editor.logger)
            try await applying.value
        }
        #expect(try await titles() == ["three, local", "four, from the cloud"])
        let pending = try await adapter.pendingChanges(limit: 100)
        #expect(pending.saves.map(\.record.id) == [three])
        #expect(pending.saves.first?.record.fields["title"] == .string("three, local"))
        await adapter.close()
    }

    @Test("triggers of the previous version are replaced on open: pending changes stay, synced rows are not queued again")
    func triggerUpgrade() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("trigger_upgrade", table: "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (1, 'a'), (2, 'b')"], on: endpoint, doing: "writing")
        #expect(try await adapter.markPendingSavesUploaded().count == 2)
        await adapter.close()
        // What the previous version left: its triggers wrote `changes` directly (row 3 here),
        // and its version number is on the table.
        try await PostgresConnectionPool.execute(
            [
                "BEGIN", "SET LOCAL gateway.applying = 'on'", "INSERT INTO public.note VALUES (3, 'c')",
                "INSERT INTO gateway.changes (scope, record_name, table_name, version) VALUES ('public', '3', 'note', nextval('gateway.change_version'))",
                "UPDATE gateway.tables SET trigger_version = 3", "COMMIT",
            ], on: endpoint, doing: "writing as the previous version")

        let reopened = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "notes", endpoint: endpoint, zoneID: Self.zone, tables: [PostgresTableMapping(table: "note")]))
        try await PostgresConnectionPool.execute(["UPDATE public.note SET title = 'b2' WHERE id = 2"], on: endpoint, doing: "editing")
        let pending = try await reopened.pendingChanges(limit: 10)
        #expect(Set(pending.saves.map(\.record.id.recordName)) == ["2", "3"], "the old pending change and the new capture, nothing re-queued")
        let version = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query("SELECT trigger_version FROM gateway.tables", logger: connection.logger)
            var found: [Int] = []
            for try await value in rows.decode(Int.self) { found.append(value) }
            return found
        }
        #expect(version == [6], "the current trigger version")
        await reopened.close()
    }

    @Test("a synced table dropped and created again is captured again and joins the zone: its rows queued without metadata, the download position forgotten")
    func recreatedTable() async throws {
        let create = "CREATE TABLE public.note (id integer PRIMARY KEY, title text)"
        let (endpoint, adapter) = try await Self.noteAdapter("recreated", table: create)
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (1, 'A'), (2, 'B')"], on: endpoint, doing: "writing")
        #expect(try await adapter.markPendingSavesUploaded().count == 2)
        #expect(try await adapter.pendingChangeCount() == 0)

        // Written while no trigger exists: only the comparison can find these changes.
        try await PostgresConnectionPool.execute(
            ["DROP TABLE public.note", create, "INSERT INTO public.note VALUES (1, 'A2'), (3, 'C')"], on: endpoint, doing: "recreating")
        let compared = try await adapter.pendingChanges(limit: 10)
        #expect(Set(compared.saves.map(\.record.id.recordName)) == ["1", "3"])
        #expect(compared.saves.allSatisfy { $0.metadata == nil }, "the restored rows share no history with what was synced")
        #expect(compared.deletes.isEmpty, "a synced row missing from the restored table is not deleted: the cloud brings it back")
        #expect(try await adapter.loadZoneState() == nil, "the zone is downloaded again")
        try await PostgresConnectionPool.execute(["INSERT INTO public.note VALUES (4, 'D')"], on: endpoint, doing: "writing")
        #expect(try await adapter.pendingChanges(limit: 10).saves.map(\.record.id.recordName).contains("4"), "the trigger is back")
        await adapter.close()
    }

    @Test("a missing table, a table without a primary key and a missing column are errors naming them")
    func mappingErrors() async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("mapping_errors")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE public.keyless (title text)", "CREATE TABLE public.note (id integer PRIMARY KEY, title text)"], on: endpoint,
            doing: "setting up")
        func failure(_ mapping: PostgresTableMapping) async -> PostgresAdapterError? {
            let configuration = PostgresAdapterConfiguration(name: "app", endpoint: endpoint, zoneID: Self.zone, tables: [mapping])
            do {
                try await PostgresAdapter.check(configuration)
                return nil
            } catch {
                return error as? PostgresAdapterError
            }
        }
        let missing = await failure(PostgresTableMapping(table: "nope"))
        #expect(missing?.code == .missingTable)
        #expect(missing?.message.contains("table public.nope does not exist") == true, "\(String(describing: missing))")
        let keyless = await failure(PostgresTableMapping(table: "keyless"))
        #expect(keyless?.code == .noPrimaryKey)
        let column = await failure(PostgresTableMapping(table: "note", exclude: ["body"]))
        #expect(column?.code == .missingColumn)
        #expect(column?.message.contains("column body") == true)
        let encryptedText = await failure(PostgresTableMapping(table: "note", encryptedColumns: ["title"]))
        #expect(encryptedText?.code == .invalidMapping, "an encrypted column must be bytea")
        #expect(await failure(PostgresTableMapping(table: "note")) == nil)
    }

    @Test("text with quotes, backslashes, control characters and non-ASCII is written exactly, by COPY and by statements", arguments: [
        "plain", "quote \" inside", "back\\slash", "line\nbreak\ttab\r", "bell \u{7} and \u{1f}", "snow ☃ and 𝄞", "", "{\"json\": [1]}",
        "\\N", "tab\tand \\x00",
    ], [false, true])
    func textRoundTrip(_ text: String, absent: Bool) async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("text", table: "CREATE TABLE public.note (id text PRIMARY KEY, title text)")
        let id = RecordID(recordName: "id \"\(text)\"", zoneID: Self.zone)
        let record = Record(id: id, recordType: "note", fields: ["title": .string(text)])
        try await adapter.apply(
            DownloadedChanges(
                writes: [record], state: SyncStateUpdate(metadata: [id: Data("m".utf8)], zoneState: Data("z".utf8)),
                absentLocally: absent ? [id] : []))
        let stored = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query("SELECT id, title FROM public.note", logger: connection.logger)
            var found: [String] = []
            for try await (key, title) in rows.decode((String, String).self) { found += [key, title] }
            return found
        }
        #expect(stored == [id.recordName, text])
        await adapter.close()
    }

    @Test("one page mixes absent fields (NULL), empty texts and the text NULL, row by row, by COPY and by statements", arguments: [false, true])
    func nullsAndEmptyTexts(absent: Bool) async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("nulls", table: "CREATE TABLE public.note (id bigint PRIMARY KEY, title text, rank bigint)")
        let fields: [[String: FieldValue]] = [
            [:], ["title": .string("")], ["title": .string("NULL"), "rank": .int64(0)], ["rank": .int64(-5)], ["title": .string("{a,\"b\"}")],
        ]
        var update = SyncStateUpdate(zoneState: Data("z".utf8))
        var records: [Record] = []
        for (index, values) in fields.enumerated() {
            let id = RecordID(recordName: String(index + 1), zoneID: Self.zone)
            records.append(Record(id: id, recordType: "note", fields: values))
            update.metadata[id] = Data("m".utf8)
        }
        try await adapter.apply(DownloadedChanges(writes: records, state: update, absentLocally: absent ? Set(records.map(\.id)) : []))
        let stored = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
            let rows = try await connection.query(
                "SELECT coalesce(title, '<null>') || '|' || coalesce(rank::text, '<null>') FROM public.note ORDER BY id", logger: connection.logger)
            var found: [String] = []
            for try await (text) in rows.decode(String.self) { found.append(text) }
            return found
        }
        #expect(stored == ["<null>|<null>", "|<null>", "NULL|0", "<null>|-5", "{a,\"b\"}|<null>"])
        await adapter.close()
    }

    @Test("records the merge saw as new are inserted; a row that exists after all is updated, in the same apply")
    func insertsNewRecordsAndFallsBackToUpdates() async throws {
        let (endpoint, adapter) = try await Self.noteAdapter("inserts", table: "CREATE TABLE public.note (id bigint PRIMARY KEY, title text)")
        func page(_ titles: [Int: String], absent: Set<Int>) -> DownloadedChanges {
            var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: Data("z".utf8)))
            for (key, title) in titles.sorted(by: { $0.key < $1.key }) {
                let id = RecordID(recordName: String(key), zoneID: Self.zone)
                changes.writes.append(Record(id: id, recordType: "note", fields: ["title": .string(title)]))
                changes.state.metadata[id] = Data("tag \(title)".utf8)
                changes.expectedPendingVersions[id] = 0
                if absent.contains(key) { changes.absentLocally.insert(id) }
            }
            return changes
        }
        func titles() async throws -> [String] {
            try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading") { connection in
                let rows = try await connection.query("SELECT id::text || '=' || title FROM public.note ORDER BY id", logger: connection.logger)
                var found: [String] = []
                for try await (text) in rows.decode(String.self) { found.append(text) }
                return found
            }
        }
        func metadata(_ keys: [Int]) async throws -> [String] {
            let states = try await adapter.localState(for: keys.map { RecordID(recordName: String($0), zoneID: Self.zone) })
            return keys.map { key in states[RecordID(recordName: String(key), zoneID: Self.zone)]?.metadata.map { String(decoding: $0, as: UTF8.self) } ?? "-" }
        }

        try await adapter.apply(page([1: "one", 2: "two"], absent: [1, 2]))
        #expect(try await titles() == ["1=one", "2=two"])
        #expect(try await metadata([1, 2]) == ["tag one", "tag two"])

        // A new record beside a known one: one insert and one upsert in the page.
        try await adapter.apply(page([2: "two again", 3: "three"], absent: [3]))
        #expect(try await titles() == ["1=one", "2=two again", "3=three"])
        #expect(try await metadata([2, 3]) == ["tag two again", "tag three"])

        // The hint is stale: rows 1 and 2 and the metadata of 2 exist. Nothing is lost or doubled.
        try await adapter.apply(page([1: "one later", 2: "two later", 4: "four"], absent: [1, 2, 4]))
        #expect(try await titles() == ["1=one later", "2=two later", "3=three", "4=four"])
        #expect(try await metadata([1, 2, 4]) == ["tag one later", "tag two later", "tag four"])

        #expect(try await adapter.pendingChangeCount() == 0, "the gateway's own writes are not captured as changes")
        await adapter.close()
    }
}
