import AdapterKit
import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// The state database of releases before the adapter kit, `<directory>/.gateway/state.sqlite`,
/// carried into the kit's sidecar state and the store's file index.
///
/// Its `records` table hashed each JSON object exactly as ``JSONFolderStore`` versions records,
/// so what it saw becomes what the kit saw, and pending changes, metadata, failures and the zone
/// state carry over as they are: nothing is uploaded or downloaded again.
enum JSONFilesLegacyState {
    static func migrate(folder: URL, configuration: JSONFilesAdapterConfiguration) throws {
        let legacy = folder.appendingPathComponent(".gateway/state.sqlite")
        guard FileManager.default.fileExists(atPath: legacy.path) else { return }
        do {
            if !FileManager.default.fileExists(atPath: configuration.statePath) {
                let queue = try DatabaseQueue(path: legacy.path)
                let (imported, files, records) = try queue.read { db in try read(db) }
                try queue.close()
                // The index first: it is a cache, true whatever happens to the import.
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: configuration.indexPath + suffix) }
                let index = try JSONFolderIndex(path: configuration.indexPath)
                try index.queue.write { db in
                    for row in files {
                        try db.execute(sql: "INSERT INTO files (path, size, mtime, problem) VALUES (?, ?, ?, ?)", arguments: StatementArguments(row))
                    }
                    for row in records {
                        try db.execute(
                            sql: "INSERT INTO records (record_name, record_type, path, hash) VALUES (?, ?, ?, ?)", arguments: StatementArguments(row))
                    }
                }
                try index.queue.close()
                try KitAdapter.importState(imported, to: configuration.statePath)
            }
            try FileManager.default.moveItem(at: legacy, to: legacy.appendingPathExtension("migrated"))
        } catch let error as KitAdapterError {
            throw error
        } catch {
            throw JSONFilesAdapterError(
                .migrationFailed,
                "cannot carry the state of \(legacy.path) over to \(configuration.statePath): \(SQLiteFailureReason.describe(error, path: legacy.path))",
                underlying: error)
        }
    }

    private static func read(_ db: Database) throws -> (KitStateImport, files: [[DatabaseValue]], records: [[DatabaseValue]]) {
        var imported = KitStateImport()
        var types: [String: String] = [:]
        let records = try Row.fetchAll(db, sql: "SELECT record_name, record_type, path, hash FROM records")
        for row in records {
            types[row[0]] = row[1]
            imported.seen.append(KitStateImport.SeenRecord(recordName: row[0], recordType: row[1], version: row[3]))
        }
        for row in try Row.fetchAll(db, sql: "SELECT record_name, version FROM changes") {
            let name: String = row[0]
            imported.changes.append(KitStateImport.Change(recordName: name, version: row[1], recordType: types[name]))
        }
        for row in try Row.fetchAll(db, sql: "SELECT record_name, data FROM metadata") { imported.metadata[row[0]] = row[1] }
        for row in try Row.fetchAll(db, sql: "SELECT record_name, version, code, message FROM failures") {
            imported.failures[row[0]] = RecordFailure(version: row[1], code: row[2], message: row[3])
        }
        imported.zoneState = try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1")
        imported.changeCounter = try Int64.fetchOne(db, sql: "SELECT version FROM counter WHERE id = 1") ?? 0
        let files = try Row.fetchAll(db, sql: "SELECT path, size, mtime, problem FROM files").map { Array($0.databaseValues) }
        return (imported, files, records.map { Array($0.databaseValues) })
    }
}
