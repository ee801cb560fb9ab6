import Foundation
import GRDB
import GatewayCore
import JSONFilesAdapter
import SQLiteAdapter

/// A store of the history checker, edited as an application would and synced by a fresh
/// adapter each time (as a restarted gateway opens it), so a store replaced behind the
/// gateway's back is opened as it is now.
protocol HistoryStore: AnyObject {
    var name: String { get }
    /// The fields this store has a place for now.
    var fields: [String] { get }
    /// Whether a record it creates names every field it has a place for (a SQL row, a CSV line
    /// under its header), or only those given a value (a JSON document's keys).
    var namesEveryField: Bool { get }
    /// What the store holds: record → field → value (only fields with a value).
    func contents() async throws -> [String: [String: String]]
    /// Sets one field of a record, creating the record when missing.
    func write(record: String, field: String, value: String) async throws
    /// Deletes a record; deleting a missing one does nothing.
    func delete(record: String) async throws
    /// An adapter over the store as it is now.
    func adapter(zone: ZoneID) async throws -> any ModelAdapter
    /// Copies the store aside (a backup, as an operator takes one).
    func backup(to path: String) async throws
    /// Puts a backup back in place of the store.
    func restore(from path: String) async throws
    /// The store as an item of `adapters` in a `gateway` configuration (YAML), on `zone`.
    func configuration(zone: String) -> String
}

/// A store whose application can gain, give up and rename the columns `color` and `hue`.
protocol HistorySchemaStore: HistoryStore {
    /// Adds `column` (an upgraded application).
    func addColumn(_ column: String) async throws
    /// Drops `column` (an application that gave it up).
    func dropColumn(_ column: String) async throws
    /// Renames `column` to `newName`, values and all (no trigger fires for that).
    func renameColumn(_ column: String, to newName: String) async throws
}

/// The columns a schema change adds, drops or renames; the others are always there.
let historyOptionalColumns = ["color", "hue"]

/// The values a record's fields hold, as text: the history writes strings only, unique per write.
private func text(_ value: DatabaseValue) -> String? {
    String.fromDatabaseValue(value)
}

/// A SQLite database with table `Note(name, title, rank)`; `color` and `hue` come and go with
/// schema changes.
final class HistorySQLiteStore: HistorySchemaStore {
    let namesEveryField = true
    let name: String
    let path: String
    private(set) var fields = ["title", "rank"]

    init(name: String, path: String) throws {
        self.name = name
        self.path = path
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE Note (name TEXT PRIMARY KEY, title TEXT, rank TEXT)")
        }
    }

    private func database() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    func addColumn(_ column: String) async throws {
        try await database().write { db in try db.execute(sql: "ALTER TABLE Note ADD COLUMN \(column) TEXT") }
        fields.append(column)
    }

    func dropColumn(_ column: String) async throws {
        try await database().write { db in try db.execute(sql: "ALTER TABLE Note DROP COLUMN \(column)") }
        fields.removeAll { $0 == column }
    }

    func renameColumn(_ column: String, to newName: String) async throws {
        try await database().write { db in try db.execute(sql: "ALTER TABLE Note RENAME COLUMN \(column) TO \(newName)") }
        fields = fields.map { $0 == column ? newName : $0 }
    }

    func contents() async throws -> [String: [String: String]] {
        let fields = fields
        return try await database().read { db in
            var result: [String: [String: String]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT * FROM Note") {
                var values: [String: String] = [:]
                for field in fields where row.hasColumn(field) { if let value = text(row[field]) { values[field] = value } }
                result[row["name"]] = values
            }
            return result
        }
    }

    func write(record: String, field: String, value: String) async throws {
        try await database().write { db in
            try db.execute(
                sql: "INSERT INTO Note (name, \(field)) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET \(field) = excluded.\(field)",
                arguments: [record, value])
        }
    }

    func delete(record: String) async throws {
        try await database().write { db in try db.execute(sql: "DELETE FROM Note WHERE name = ?", arguments: [record]) }
    }

    func configuration(zone: String) -> String {
        """
          - name: \(name)
            kind: sqlite
            path: \(HistoryGatewayProcess.quoted(path))
            zone: \(zone)
            tables:
              - table: Note
        """
    }

    func adapter(zone: ZoneID) async throws -> any ModelAdapter {
        try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(name: name, path: path, zoneID: zone, tables: [TableMapping(table: "Note")]))
    }

    func backup(to path: String) async throws {
        let target = try DatabaseQueue(path: path)
        try database().backup(to: target)
        try target.close()
    }

    /// Restores as `sqlite3 .restore` does, through SQLite's backup API into the live file: an
    /// adapter still closing over the old one (its checkpointer) cannot mix its WAL in.
    func restore(from backup: String) async throws {
        try DatabaseQueue(path: backup).backup(to: database())
        let columns = try await database().read { db in try db.columns(in: "Note").map(\.name) }
        fields = (["title", "rank"] + historyOptionalColumns).filter(columns.contains)
    }
}

/// A folder of JSON documents, one per record (`Note/<name>.json`), synced by the JSON adapter on
/// the adapter kit, whose state lives outside the folder (as under `state_dir`).
final class HistoryJSONStore: HistoryStore {
    let namesEveryField = false
    let name: String
    let folder: URL
    let statePath: String
    /// A document holds any field: the optional columns of the databases too.
    let fields = ["title", "rank"] + historyOptionalColumns

    init(name: String, folder: URL, statePath: String) throws {
        self.name = name
        self.folder = folder
        self.statePath = statePath
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Note"), withIntermediateDirectories: true)
    }

    private func url(_ record: String) -> URL { folder.appendingPathComponent("Note/\(record).json") }

    private func object(_ record: String) throws -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: url(record).path) else { return nil }
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object.compactMapValues { $0 as? String }
    }

    func contents() async throws -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for file in (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("Note").path)) ?? []
        where file.hasSuffix(".json") && !file.hasPrefix(".") {
            let record = String(file.dropLast(5))
            result[record] = try object(record) ?? [:]
        }
        return result
    }

    func write(record: String, field: String, value: String) async throws {
        var object = try self.object(record) ?? [:]
        object[field] = value
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        try data.write(to: url(record), options: .atomic)
    }

    func delete(record: String) async throws {
        try? FileManager.default.removeItem(at: url(record))
    }

    /// (Its state must be at `<state_dir>/adapters/<name>.sqlite` for the gateway process.)
    func configuration(zone: String) -> String {
        """
          - name: \(name)
            kind: json
            directory: \(HistoryGatewayProcess.quoted(folder.path))
            zone: \(zone)
        """
    }

    func adapter(zone: ZoneID) async throws -> any ModelAdapter {
        try JSONFilesAdapter.open(
            configuration: JSONFilesAdapterConfiguration(name: name, directory: folder.path, zoneID: zone, statePath: statePath))
    }

    func backup(to path: String) async throws {
        try HistoryFiles.copy(folder.path, to: path)
    }

    func restore(from backup: String) async throws {
        try FileManager.default.removeItem(at: folder)
        try HistoryFiles.copy(backup, to: folder.path)
    }
}
