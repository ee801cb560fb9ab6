import Foundation
import GRDB
import GatewayTesting
import TestScheduling
import Testing

/// Process plugins as a user meets them: the Python CSV example synced with SQLite, proved with
/// `gateway check-adapter` (as the JSON files adapter on the kit is), and a broken plugin that
/// fails alone.
@Suite("Plugins through the CLI", .heavy)
struct PluginCLITests {
    static let config = "examples/plugins/csv-folder/config.yaml"

    @Test("gateway check-adapter passes every conformance case against the Python CSV plugin")
    func checkAdapter() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let result = try await clone.gateway("check-adapter", "notes-csv", "--config", Self.config)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Checking adapter notes-csv (kind plugin)"), "\(result)")
        #expect(!result.stdout.contains("FAIL"), "\(result)")
        #expect(result.stdout.hasSuffix("22 of 22 case(s) passed\n"), "\(result)")
        #expect(result.stdout.contains("pass  store contract: deleting a record the store does not hold succeeds"), "\(result)")
        let unknown = try await clone.gateway("check-adapter", "nope", "--config", Self.config)
        #expect(unknown.status == 2, "\(unknown)")
        let compiled = try await clone.gateway("check-adapter", "notes", "--config", Self.config)
        #expect(compiled.status == 2, "\(compiled)")
        #expect(compiled.stderr.contains("kind sqlite, which cannot open a scratch store"), "\(compiled)")
    }

    @Test("gateway check-adapter passes every conformance case against the JSON files adapter on the kit, in both layouts")
    func checkJSONAdapter() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let result = try await clone.gateway("check-adapter", "docs")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Checking adapter docs (kind json)"), "\(result)")
        #expect(result.stdout.hasSuffix("22 of 22 case(s) passed\n"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: clone.url.appendingPathComponent(".gateway/examples/docs").path), "the real folder is not touched")

        let config = try String(contentsOf: clone.url.appendingPathComponent("config.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "layout: file-per-record ", with: "layout: collection      ")
        try config.write(to: clone.url.appendingPathComponent("collection.yaml"), atomically: true, encoding: .utf8)
        let collection = try await clone.gateway("check-adapter", "docs", "--config", "collection.yaml")
        #expect(collection.status == 0, "\(collection)")
        #expect(collection.stdout.hasSuffix("22 of 22 case(s) passed\n"), "\(collection)")
    }

    /// Copies of the CSV plugin, each breaking one documented rule, as a plugin author might.
    static let brokenPlugins: [(name: String, original: String, broken: String, rule: String)] = [
        (
            "delete-missing",
            "                    for name in type_deletes:\n                        rows.pop(name, None)",
            "                    for name in type_deletes:\n                        if name not in rows:\n                            raise PluginFailure(\"notFound\", \"no record \" + name)\n                        rows.pop(name, None)",
            "deleting a record the store does not hold succeeds"
        ),
        (
            "plain-doubles",
            "        return {\"value\": float(cell), \"type\": \"DOUBLE\"}",
            "        return {\"value\": int(float(cell)) if float(cell).is_integer() else float(cell)}",
            "every field type comes back as written, whole doubles included"
        ),
        (
            "merging-saves",
            "                    cells = [\"\"] * width",
            "                    cells = list(rows.get(row[0], [])) + [\"\"] * (width - len(rows.get(row[0], [])))",
            "a save replaces the whole record"
        ),
        (
            "tables-without-saves",
            "        for record in saves:\n            touched.setdefault(",
            "        for record in (saves if not tables else []):\n            touched.setdefault(",
            "records with missing fields, mixed types and look-alike values in one write come back as written"
        ),
        (
            "empty-cells",
            "    return text != \"\" and not (text[0] == \"{\" and text.startswith(('{\"type\"', '{\"value\"')))",
            "    return True",
            "records with missing fields, mixed types and look-alike values in one write come back as written"
        ),
    ]

    @Test("gateway check-adapter fails plugins that break the store contract, naming the broken rule", arguments: brokenPlugins.map(\.name))
    func brokenContract(name: String) async throws {
        let broken = try #require(Self.brokenPlugins.first { $0.name == name })
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let config = try Self.pluginVariant(in: clone, named: "broken_\(name)") { source in
            #expect(source.contains(broken.original), "the plugin still has the code this case breaks")
            return source.replacingOccurrences(of: broken.original, with: broken.broken)
        }
        let result = try await clone.gateway("check-adapter", "notes-csv", "--config", config)
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("FAIL  store contract: \(broken.rule)"), "\(result)")
        #expect(result.stdout.hasSuffix("21 of 22 case(s) passed\n"), "only the broken rule fails: \(result)")
    }

    @Test("gateway check-adapter stops a plugin that does not confirm its scratch folder before it can write into its configured store")
    func scratchUnconfirmed() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let config = try Self.pluginVariant(in: clone, named: "ignores_scratch") { source in
            let keepsItsStore = source
                .replacingOccurrences(of: "directory = params.get(\"scratch\") or settings.get(\"directory\") or \".\"", with: "directory = settings.get(\"directory\") or \".\"")
                .replacingOccurrences(of: "                    result[\"scratch\"] = True", with: "                    pass")
            #expect(keepsItsStore != source && !keepsItsStore.contains("result[\"scratch\"]"), "the copy ignores scratch")
            return keepsItsStore
        }
        let result = try await clone.gateway("check-adapter", "notes-csv", "--config", config)
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("does not confirm it keeps its data there"), "\(result)")
        #expect(result.stdout.hasSuffix("0 of 22 case(s) passed\n"), "\(result)")
        let store = clone.url.appendingPathComponent(".gateway/examples/csv-folder/csv")
        // Its start creates the file, header only (so a file moved away later is noticed).
        let written = (try? String(contentsOf: store.appendingPathComponent("Note.csv"), encoding: .utf8)) ?? ""
        #expect(written.isEmpty || written == "recordName\n", "no made-up record reached the configured store: \(written)")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent(".gateway-store.json").path), "its identity marker was not written")
    }

    /// Writes `<name>.py`, the CSV example's source as `change` returns it, and `<name>.yaml`, the
    /// example's config running it instead; returns the config's path in the clone.
    static func pluginVariant(in clone: CLITests.FreshClone, named name: String, _ change: (String) throws -> String) throws -> String {
        let folder = clone.url.appendingPathComponent("examples/plugins/csv-folder")
        let source = try String(contentsOf: folder.appendingPathComponent("csv_folder.py"), encoding: .utf8)
        try change(source).write(to: folder.appendingPathComponent("\(name).py"), atomically: true, encoding: .utf8)
        let config = try String(contentsOf: folder.appendingPathComponent("config.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "args: [csv_folder.py]", with: "args: [\(name).py]")
        try config.write(to: folder.appendingPathComponent("\(name).yaml"), atomically: true, encoding: .utf8)
        return "examples/plugins/csv-folder/\(name).yaml"
    }

    /// Whether a row of the CSV text holds `cell` as a whole cell, in any column (for cells without
    /// commas or quotes).
    static func holdsCell(_ text: String, _ cell: String) -> Bool {
        text.split(separator: "\n").contains { $0.split(separator: ",", omittingEmptySubsequences: false).contains(Substring(cell)) }
    }

    @Test("the CSV plugin and a SQLite table sync both ways through the embedded cloud")
    func csvAndSQLite() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let first = try await clone.gateway("sync", "--config", Self.config)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("notes-csv  NotesZone          50         0"), "\(first)")
        let csv = clone.url.appendingPathComponent(".gateway/examples/csv-folder/csv/Note.csv")
        var text = try String(contentsOf: csv, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 51, "a header and 50 rows")

        text = text.replacingOccurrences(of: "Kilo echo mike", with: "Edited in the CSV file")
        try text.write(to: csv, atomically: true, encoding: .utf8)
        let second = try await clone.gateway("sync", "--config", Self.config)
        #expect(second.status == 0, "\(second)")
        let database = try DatabaseQueue(path: clone.url.appendingPathComponent(".gateway/examples/csv-folder/notes.sqlite").path)
        #expect(try await database.read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = 1") } == "Edited in the CSV file")

        try await database.write { db in
            try db.execute(sql: "UPDATE notes SET title = 'Edited in SQLite' WHERE id = 2; DELETE FROM notes WHERE id = 3")
        }
        let third = try await clone.gateway("sync", "--config", Self.config)
        #expect(third.status == 0, "\(third)")
        text = try String(contentsOf: csv, encoding: .utf8)
        #expect(Self.holdsCell(text, "Edited in SQLite"), "\(text)")
        #expect(!text.contains("\nNote.3,"), "the row deleted in SQLite is gone from the CSV file")
        let fourth = try await clone.gateway("sync", "--config", Self.config)
        #expect(fourth.stdout == "Nothing to do: all 2 adapters are in sync.\n", "\(fourth)")
    }

    @Test("hand edits of the CSV example lose nothing: a file saved without its last newline, a malformed row, a file moved away, emptied or without its header")
    func csvHandEdits() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        let folder = clone.url.appendingPathComponent(".gateway/examples/csv-folder/csv")
        let csv = folder.appendingPathComponent("Note.csv")
        let database = try DatabaseQueue(path: clone.url.appendingPathComponent(".gateway/examples/csv-folder/notes.sqlite").path)
        func count() async throws -> Int { try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") ?? 0 } }
        func title(_ id: Int) async throws -> String? {
            try await database.read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = ?", arguments: [id]) }
        }
        #expect(try await count() == 50)

        // Saved by an editor without the last line's newline; then a row is added in SQLite.
        var text = try String(contentsOf: csv, encoding: .utf8)
        try String(text.dropLast()).write(to: csv, atomically: true, encoding: .utf8)
        try await database.write { db in try db.execute(sql: "INSERT INTO notes (id, title, body, created_at) VALUES (51, 'Added in SQLite', 'b', '2026-01-01T00:00:00Z')") }
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        let afterAppend = try await clone.gateway("sync", "--config", Self.config)
        #expect(afterAppend.stdout == "Nothing to do: all 2 adapters are in sync.\n", "the appended row was read back as written: \(afterAppend)")
        #expect(try await count() == 51)
        text = try String(contentsOf: csv, encoding: .utf8)
        #expect(text.split(separator: "\n").count == 52, "a header and 51 rows, each on its line")
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("Note.51,") })

        // A row that lost a cell: a failed record naming the line, uploaded as nothing.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let rowIndex = try #require(lines.firstIndex { $0.hasPrefix("Note.7,") })
        let originalRow = lines[rowIndex]
        let titleBefore = try await title(7)
        lines[rowIndex] = "Note.7,short"
        try lines.joined(separator: "\n").write(to: csv, atomically: true, encoding: .utf8)
        let broken = try await clone.gateway("sync", "--config", Self.config)
        #expect(broken.stdout.contains("Note.7: Note.csv line \(rowIndex + 1) has 2 cells where its header has"), "\(broken)")
        #expect(broken.stdout.contains("(invalidRow)"), "\(broken)")
        #expect(try await title(7) == titleBefore, "nothing of the malformed row reached SQLite")
        #expect(try await count() == 51)
        let listed = try await clone.gateway("status", "--config", Self.config, "--failed", "--adapter", "notes-csv")
        #expect(listed.stdout.contains("Note.7"), "\(listed)")
        // A change from SQLite meanwhile is not written into the file around the bad row.
        try await database.write { db in try db.execute(sql: "UPDATE notes SET title = 'Edited in SQLite' WHERE id = 8") }
        let refused = try await clone.gateway("sync", "--config", Self.config)
        #expect(refused.status != 0, "\(refused)")
        #expect(refused.stdout.contains("invalidRows") || refused.stderr.contains("invalidRows"), "\(refused)")
        #expect(try String(contentsOf: csv, encoding: .utf8).contains("Note.7,short\n"), "the row is left for its owner to fix")
        lines[rowIndex] = originalRow
        try lines.joined(separator: "\n").write(to: csv, atomically: true, encoding: .utf8)
        let fixed = try await clone.gateway("sync", "--config", Self.config)
        #expect(fixed.status == 0, "\(fixed)")
        #expect(Self.holdsCell(try String(contentsOf: csv, encoding: .utf8), "Edited in SQLite"))
        #expect(try await title(7) == titleBefore)

        // The file moved away (to edit it elsewhere): an error, not every record deleted.
        let moved = clone.url.appendingPathComponent(".gateway/examples/csv-folder/Note-away.csv")
        try FileManager.default.moveItem(at: csv, to: moved)
        let missing = try await clone.gateway("sync", "--config", Self.config)
        #expect(missing.status != 0, "\(missing)")
        #expect((missing.stdout + missing.stderr).contains("Note.csv is missing: put it back"), "\(missing)")
        #expect(try await count() == 51)
        // Emptied by a save that failed, or with its header line gone: an error too.
        for broken in ["", String(try String(contentsOf: moved, encoding: .utf8).drop { $0 != "\n" }.dropFirst())] {
            try broken.write(to: csv, atomically: true, encoding: .utf8)
            let refusedFile = try await clone.gateway("sync", "--config", Self.config)
            #expect(refusedFile.status != 0, "\(refusedFile)")
            #expect((refusedFile.stdout + refusedFile.stderr).contains("Note.csv has no header line starting with recordName"), "\(refusedFile)")
            #expect(try await count() == 51)
            try FileManager.default.removeItem(at: csv)
        }
        try FileManager.default.moveItem(at: moved, to: csv)
        let back = try await clone.gateway("sync", "--config", Self.config)
        #expect(back.status == 0, "\(back)")
        #expect(try await count() == 51)

        // A quote opened in one row and closed three rows later: valid CSV that would swallow the
        // rows between. They are failed records, not deletions.
        let intact = try String(contentsOf: csv, encoding: .utf8)
        var quoted = intact.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let opened = try #require(quoted.firstIndex { $0.hasPrefix("Note.10,") })
        let closed = try #require(quoted.firstIndex { $0.hasPrefix("Note.13,") })
        quoted[opened] = quoted[opened].replacingOccurrences(of: "Note.10,", with: "Note.10,\"")
        quoted[closed] += "\""
        try quoted.joined(separator: "\n").write(to: csv, atomically: true, encoding: .utf8)
        let swallowed = try await clone.gateway("sync", "--config", Self.config)
        #expect(swallowed.stdout.contains("a quote was probably left open there"), "\(swallowed)")
        #expect(try await count() == 51, "no row deleted: \(swallowed)")
        try intact.write(to: csv, atomically: true, encoding: .utf8)
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        #expect(try await count() == 51)
    }

    @Test("a CSV plugin folder restored from an older copy joins the zone: the newer edit made in SQLite survives")
    func restoredPluginStore() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        let csvFolder = clone.url.appendingPathComponent(".gateway/examples/csv-folder/csv")
        let backup = clone.url.appendingPathComponent(".gateway/examples/csv-folder/csv-backup")
        func copy(_ from: URL, _ to: URL) throws { try TemporaryDirectory.copyPreservingTimes(from: from, to: to) }
        try copy(csvFolder, backup)
        #expect(FileManager.default.fileExists(atPath: csvFolder.appendingPathComponent(".gateway-store.json").path), "the plugin keeps the marker")

        let database = try DatabaseQueue(path: clone.url.appendingPathComponent(".gateway/examples/csv-folder/notes.sqlite").path)
        try await database.write { db in try db.execute(sql: "UPDATE notes SET title = 'Edited in SQLite' WHERE id = 1") }
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        let csv = csvFolder.appendingPathComponent("Note.csv")
        #expect(Self.holdsCell(try String(contentsOf: csv, encoding: .utf8), "Edited in SQLite"))

        try FileManager.default.removeItem(at: csvFolder)
        try copy(backup, csvFolder)
        let restored = try await clone.gateway("sync", "--config", Self.config)
        #expect(restored.status == 0, "\(restored)")
        #expect(restored.stdout.contains("server won"), "the restored row met the newer version and was reported: \(restored)")
        #expect(try await database.read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = 1") } == "Edited in SQLite")
        #expect(Self.holdsCell(try String(contentsOf: csv, encoding: .utf8), "Edited in SQLite"), "the restored folder took the newer edit")
    }

    @Test("gateway sync starts each plugin once, checked and then synced by the same process; gateway validate stops what it started")
    func pluginStartsOnce() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        // The example itself, run by a wrapper that logs when the process starts and exits.
        let config = try Self.pluginVariant(in: clone, named: "counting") { _ in
            """
            import atexit, csv_folder
            def note(line):
                with open("starts.log", "a") as log:
                    log.write(line + "\\n")
            note("start")
            atexit.register(note, "exit")
            csv_folder.main()

            """
        }
        func log() throws -> [String] {
            let file = clone.url.appendingPathComponent("examples/plugins/csv-folder/starts.log")
            return try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map(String.init)
        }
        let sync = try await clone.gateway("sync", "--config", config)
        #expect(sync.status == 0, "\(sync)")
        #expect(sync.stdout.contains("notes-csv  NotesZone          50         0"), "\(sync)")
        #expect(try log() == ["start", "exit"], "one plugin process checked, synced and stopped")
        let validate = try await clone.gateway("validate", "--config", config)
        #expect(validate.status == 0, "\(validate)")
        #expect(try log() == ["start", "exit", "start", "exit"], "validate stops the plugin it checked")
    }

    @Test("a plugin that cannot start fails its adapter with a message naming both, while the other adapter syncs")
    func brokenPluginFailsAlone() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let config = try String(contentsOf: clone.url.appendingPathComponent(Self.config), encoding: .utf8)
            .replacingOccurrences(of: "command: python3", with: "command: no-such-python")
        try config.write(to: clone.url.appendingPathComponent("examples/plugins/csv-folder/broken.yaml"), atomically: true, encoding: .utf8)
        let result = try await clone.gateway("sync", "--config", "examples/plugins/csv-folder/broken.yaml")
        #expect(result.status != 0, "\(result)")
        let output = result.stdout + result.stderr
        #expect(
            output.contains("adapter notes-csv: cannot open its store: plugin no-such-python csv_folder.py: cannot start no-such-python"), "\(result)")
    }
}
