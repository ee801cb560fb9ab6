import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting

/// The table every harness store has, the rows it generates, and how each side is read back
/// into comparable lines.
enum HarnessData {
    static let zone = ZoneID(zoneName: "HarnessZone")
    static let schema = """
        CREATE TABLE items (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT, n INTEGER, r REAL, created TEXT);
        """

    /// A row: its id and its canonical line (`id|title|body|n|r|created`, `~` for null).
    struct Row: Hashable {
        var id: String
        var title: String
        var body: String?
        var n: Int64?
        var r: Double?
        var created: String?

        var line: String {
            [id, title, body ?? "~", n.map { "\($0)" } ?? "~", r.map { "\($0)" } ?? "~", created ?? "~"].joined(separator: "|")
        }

        static func generated(id: String, using random: inout SeededGenerator) -> Row {
            let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
            let title = (0..<3).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
            let body = Bool.random(using: &random) ? String(repeating: words.randomElement(using: &random)! + " ", count: 8) : nil
            let n = Int64.random(in: -1_000_000...1_000_000, using: &random)
            // Quarters are exact in binary, so the value survives every round trip unchanged.
            let r = Bool.random(using: &random) ? Double(Int.random(in: 0...4_000, using: &random)) / 4 : nil
            let created = "2026-\(String(format: "%02d", Int.random(in: 1...12, using: &random)))-15T10:00:00Z"
            return Row(id: id, title: title, body: body, n: n, r: r, created: created)
        }
    }

    /// Opens a store as another program would: waiting for the gateway's write lock.
    static func open(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// Creates a database with `rows`.
    static func createDatabase(at path: String, rows: [Row]) throws {
        let database = try open(path)
        try database.write { db in
            try db.execute(sql: schema)
            for row in rows { try upsert(row, db: db) }
        }
        try database.close()
    }

    static func upsert(_ row: Row, db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO items (id, title, body, n, r, created) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET title = excluded.title, body = excluded.body, n = excluded.n, r = excluded.r,
                created = excluded.created
                """,
            arguments: [row.id, row.title, row.body, row.n, row.r, row.created])
    }

    /// Every row of a store, by id.
    static func read(database path: String) throws -> [String: String] {
        let database = try open(path)
        defer { try? database.close() }
        return try database.read { db in
            var lines: [String: String] = [:]
            for row in try GRDB.Row.fetchAll(db, sql: "SELECT id, title, body, n, r, created FROM items") {
                let value = Row(id: row[0], title: row[1], body: row[2], n: row[3], r: row[4], created: row[5])
                lines[value.id] = value.line
            }
            return lines
        }
    }

    /// How many changes a store still has to upload: a SQLite adapter's database, or a kit
    /// adapter's state database (`kit`).
    static func pendingChanges(database path: String, kit: Bool = false) throws -> Int {
        let database = try open(path)
        defer { try? database.close() }
        return try database.read { db in try Int.fetchOne(db, sql: kit ? "SELECT COUNT(*) FROM changes" : #"SELECT COUNT(*) FROM "_gateway_changes""#) ?? 0 }
    }

    /// The CSV header the example plugin reads: record name, then typed columns.
    static let csvHeader = "recordName,title,body,n:int64,r:double,created"

    /// A folder of the example CSV plugin holding `rows` as records of type `Item`.
    static func createCSVFolder(at folder: String, rows: [Row]) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var text = csvHeader + "\n"
        for row in rows {
            text += [row.id, csvField(row.title), csvField(row.body ?? ""), row.n.map { "\($0)" } ?? "", row.r.map { "\($0)" } ?? "", row.created ?? ""]
                .joined(separator: ",") + "\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("Item.csv"))
    }

    private static func csvField(_ text: String) -> String {
        text.contains(",") || text.contains("\"") ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }

    /// Every row of the plugin's CSV file, by id (a simple reader: the harness's values hold no
    /// quotes, commas or newlines).
    static func read(csv path: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard !lines.isEmpty else { return [:] }
        let header = lines.removeFirst().split(separator: ",", omittingEmptySubsequences: false).map { String($0.split(separator: ":")[0]) }
        var result: [String: String] = [:]
        for line in lines {
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            var values: [String: String] = [:]
            for (name, cell) in zip(header, cells) where !cell.isEmpty { values[name] = cell }
            guard let id = values["recordName"] else { continue }
            let row = Row(
                id: id, title: values["title"] ?? "", body: values["body"], n: values["n"].flatMap { Int64($0) },
                r: values["r"].flatMap { Double($0) }, created: values["created"])
            result[id] = row.line
        }
        return result
    }

    /// A `kind: plugin` adapter entry running the example CSV plugin over `folder`.
    static func pluginAdapter(name: String, script: String, folder: String) -> String {
        [
            "  - name: \(name)", "    kind: plugin", "    command: python3", "    args: [\"\(script)\"]", "    zone: \(zone.zoneName)",
            "    settings: { directory: \(folder), record_types: [Item] }",
        ].joined(separator: "\n") + "\n"
    }

    /// The processes whose parent is `pid`.
    static func children(of pid: Int32) -> [Int32] {
        // Each thread lists the children it started; the gateway starts plugins from any thread.
        let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return threads.flatMap { thread in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int32($0) }
        }
    }

    /// Every record of the zone in the cloud, by name.
    static func read(cloud path: String) async throws -> [String: String] {
        let cloud = try EmbeddedCloud(path: path)
        var lines: [String: String] = [:]
        var token: ChangeToken?
        while true {
            let page = try await cloud.fetchChanges(in: zone, since: token, limit: 2_000)
            for record in page.modified {
                func text(_ name: String) -> String? {
                    if case .string(let value)? = record.fields[name] { return value }
                    return nil
                }
                var n: Int64?
                if case .int64(let value)? = record.fields["n"] { n = value }
                var r: Double?
                if case .double(let value)? = record.fields["r"] { r = value }
                let row = Row(id: record.id.recordName, title: text("title") ?? "", body: text("body"), n: n, r: r, created: text("created"))
                lines[row.id] = row.line
            }
            for id in page.deleted { lines[id.recordName] = nil }
            token = page.token
            if !page.moreComing { break }
        }
        return lines
    }

    /// SHA-256 of the sorted lines, to show sides are identical at a glance.
    static func checksum(_ lines: [String: String]) -> String {
        AssetChecksum.of(Data(lines.values.sorted().joined(separator: "\n").utf8))
    }

    /// A config with one SQLite adapter per store on the harness zone; `fetchLimit` and
    /// `parallelism` `nil` leave the gateway's defaults.
    static func config(
        stateDirectory: String, cloud: String, adapters: [(name: String, path: String)], batchSize: Int = 200, fetchLimit: Int? = nil,
        parallelism: Int? = nil
    ) -> String {
        var text = """
            gateway:
              state_dir: \(stateDirectory)
              batch_size: \(batchSize)\(fetchLimit.map { "\n  fetch_limit: \($0)" } ?? "")\(parallelism.map { "\n  parallelism: \($0)" } ?? "")
              retry: { max_attempts: 4, base_delay: 5ms, max_delay: 50ms }
            cloud:
            \(cloud)
            adapters:

            """
        for adapter in adapters {
            text += """
                  - name: \(adapter.name)
                    kind: sqlite
                    path: \(adapter.path)
                    zone: \(zone.zoneName)
                    tables: [{ table: items, record_type: Item }]

                """
        }
        return text
    }
}

/// Problems found by a harness run; any makes the harness exit 1.
struct HarnessFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
