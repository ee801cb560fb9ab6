import AdapterKit
import Foundation
import GatewayCore
import Logging
import PluginAdapter

/// A folder of CSV files served by the example process plugin (`csv_folder.py`), started through a
/// wrapper that makes the plugin die at random in its writes: before writing, or after writing
/// everything but before answering (the write the gateway must recognise as its own). The
/// application edits `Note.csv` directly, as a spreadsheet would.
final class HistoryPluginStore: HistoryStore {
    let namesEveryField = true
    let name: String
    let folder: URL
    let statePath: String
    let wrapper: String
    let fields = ["title", "rank", "color"]
    /// The chance that the plugin dies in one write, and the seed of those deaths for the next
    /// adapter (set before each sync, so a history replays the same deaths).
    var crashChance = 0.0
    var crashSeed: UInt64 = 0

    init(name: String, folder: URL, statePath: String, wrapper: String) throws {
        self.name = name
        self.folder = folder
        self.statePath = statePath
        self.wrapper = wrapper
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private var file: URL { folder.appendingPathComponent("Note.csv") }

    /// The header cells and the rows of `Note.csv` (record name → cells).
    private func table() throws -> (header: [String], rows: [(String, [String])]) {
        guard let data = FileManager.default.contents(atPath: file.path) else { return (["recordName", "title", "rank", "color"], []) }
        var lines = HistoryCSV.parse(String(decoding: data, as: UTF8.self))
        guard !lines.isEmpty else { return (["recordName", "title", "rank", "color"], []) }
        let header = lines.removeFirst()
        return (header, lines.filter { !($0.first ?? "").isEmpty }.map { ($0[0], Array($0.dropFirst())) })
    }

    private func save(header: [String], rows: [(String, [String])]) throws {
        var text = HistoryCSV.line(header)
        for (name, cells) in rows { text += HistoryCSV.line([name] + cells) }
        try Data(text.utf8).write(to: file, options: .atomic)
    }

    func contents() async throws -> [String: [String: String]] {
        let (header, rows) = try table()
        var result: [String: [String: String]] = [:]
        for (name, cells) in rows {
            var values: [String: String] = [:]
            for (index, column) in header.dropFirst().enumerated() where index < cells.count && !cells[index].isEmpty {
                let field = String(column.split(separator: ":", maxSplits: 1)[0])
                if fields.contains(field) { values[field] = cells[index] }
            }
            result[name] = values
        }
        return result
    }

    func write(record: String, field: String, value: String) async throws {
        var (header, rows) = try table()
        if !header.contains(where: { $0 == field || $0.hasPrefix(field + ":") }) {
            header.append(field)
            rows = rows.map { ($0.0, $0.1 + [""]) }
        }
        let column = header.firstIndex { $0 == field || $0.hasPrefix(field + ":") }! - 1
        if let index = rows.firstIndex(where: { $0.0 == record }) {
            var cells = rows[index].1
            while cells.count < header.count - 1 { cells.append("") }
            cells[column] = value
            rows[index].1 = cells
        } else {
            var cells = Array(repeating: "", count: header.count - 1)
            cells[column] = value
            rows.append((record, cells))
        }
        try save(header: header, rows: rows)
    }

    func delete(record: String) async throws {
        let (header, rows) = try table()
        guard rows.contains(where: { $0.0 == record }) else { return }
        try save(header: header, rows: rows.filter { $0.0 != record })
    }

    /// (Its state must be at `<state_dir>/adapters/<name>.sqlite` for the gateway process.)
    func configuration(zone: String) -> String {
        """
          - name: \(name)
            kind: plugin
            command: \(HistoryGatewayProcess.quoted(Self.python))
            args: ["-S", \(HistoryGatewayProcess.quoted(wrapper))]
            zone: \(zone)
            settings:
              directory: \(HistoryGatewayProcess.quoted(folder.path))
              record_types: [Note]
        """
    }

    func adapter(zone: ZoneID) async throws -> any ModelAdapter {
        let configuration = PluginConfiguration(
            adapterName: name, zoneID: zone, command: Self.python, arguments: ["-S", wrapper],
            environment: [
                "HISTORY_CRASH_CHANCE": "\(crashChance)", "HISTORY_CRASH_SEED": "\(crashSeed)",
                "HISTORY_CRASH_COUNTER": folder.deletingLastPathComponent().appendingPathComponent("\(name)-plugin-starts").path,
            ],
            settings: .object(["directory": .string(folder.path), "record_types": .array([.string("Note")])]),
            requestTimeout: .seconds(20))
        return try KitAdapter(
            configuration: KitAdapterConfiguration(name: name, zoneID: zone, statePath: statePath),
            store: PluginStore(configuration: configuration, logger: Logger(label: "history.plugin", factory: { _ in SwiftLogNoOpLogHandler() })))
    }

    func backup(to path: String) async throws {
        try HistoryFiles.copy(folder.path, to: path)
    }

    func restore(from backup: String) async throws {
        try FileManager.default.removeItem(at: folder)
        try HistoryFiles.copy(backup, to: folder.path)
    }

    /// The kit's view of the store and the store's marker, one line, for `HISTORY_TRACE`:
    /// the identity epochs, each record with the epoch it was recorded at, pending changes and
    /// whether a download's journal is open (read with the `sqlite3` tool, when there is one).
    func traceState() -> String {
        let query = """
            SELECT 'kit epoch ' || coalesce((SELECT epoch FROM identity), '-')
              || ' records ' || coalesce((SELECT group_concat(record_name || '@' || coalesce(seen_epoch, '?'), ',') FROM records), '')
              || ' changes ' || coalesce((SELECT group_concat(record_name, ',') FROM changes), '')
              || ' journal ' || (SELECT count(*) FROM journal);
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = ["-readonly", statePath, query]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard FileManager.default.fileExists(atPath: statePath), (try? process.run()) != nil else { return "kit: no state" }
        let kit = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let marker = FileManager.default.contents(atPath: folder.appendingPathComponent(".gateway-store.json").path)
            .map { String(decoding: $0, as: UTF8.self) } ?? "none"
        return kit.trimmingCharacters(in: .whitespacesAndNewlines) + "; marker " + marker
    }

    /// The system's Python, when there is one: a `python3` found first on `PATH` may be a shim
    /// (pyenv's) that costs a tenth of a second per start.
    static let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"

    /// The wrapper around `csv_folder.py` (at `plugin`) that dies at random in writes, written
    /// into `directory`.
    static func writeWrapper(plugin: String, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("crashing_csv_folder.py").path
        let script = """
            import os, random, sys
            sys.path.insert(0, \(String(reflecting: URL(fileURLWithPath: plugin).deletingLastPathComponent().path)))
            import csv_folder

            # Each start of the plugin draws anew (a restarted plugin must not die at the same
            # write forever), yet the same history replays the same deaths.
            counter = os.environ.get("HISTORY_CRASH_COUNTER")
            starts = 0
            if counter:
                try:
                    with open(counter) as handle:
                        starts = int(handle.read() or "0")
                except FileNotFoundError:
                    pass
                with open(counter, "w") as handle:
                    handle.write(str(starts + 1))
            chance = float(os.environ.get("HISTORY_CRASH_CHANCE", "0"))
            draws = random.Random(int(os.environ.get("HISTORY_CRASH_SEED", "0")) * 1000003 + starts)
            write = csv_folder.Folder.write

            def crashing_write(self, saves, deletes, *rest):
                roll = draws.random()
                if roll < chance / 2:
                    os._exit(70)  # dies before writing anything
                result = write(self, saves, deletes, *rest)
                if roll < chance:
                    os._exit(71)  # wrote everything, never answered
                return result

            csv_folder.Folder.write = crashing_write
            csv_folder.main()

            """
        try Data(script.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// The little CSV the history's application needs: fields quoted when they hold a comma, a
/// quote or a line break, as Python's `csv` module writes them.
enum HistoryCSV {
    static func line(_ cells: [String]) -> String {
        cells.map { cell in
            cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                ? "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : cell
        }.joined(separator: ",") + "\n"
    }

    static func parse(_ text: String) -> [[String]] {
        var lines: [[String]] = []
        var cells: [String] = []
        var cell = ""
        var quoted = false
        var characters = Array(text).makeIterator()
        var pending: Character? = nil
        while let character = pending ?? characters.next() {
            pending = nil
            if quoted {
                if character == "\"" {
                    let next = characters.next()
                    if next == "\"" { cell.append("\"") } else { quoted = false; pending = next }
                } else {
                    cell.append(character)
                }
            } else if character == "\"" {
                quoted = true
            } else if character == "," {
                cells.append(cell)
                cell = ""
            } else if character == "\n" || character == "\r\n" {
                cells.append(cell)
                lines.append(cells)
                cells = []
                cell = ""
            } else {
                cell.append(character)
            }
        }
        if !cell.isEmpty || !cells.isEmpty { cells.append(cell); lines.append(cells) }
        return lines
    }
}

/// File copies as an operator makes them.
enum HistoryFiles {
    /// `cp -a`: the copy keeps the files' times and the folder's dotfiles.
    static func copy(_ source: String, to target: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/cp")
        process.arguments = ["-a", source, target]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw HarnessFailure("cp -a \(source) \(target) failed") }
    }
}
