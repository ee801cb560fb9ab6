import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

extension SQLiteAdapter {
    /// Checks that the database has every configured table, key and column, without changing
    /// the file (it is opened read-only; nothing is installed).
    /// - Throws: ``SQLiteAdapterError``; ``SQLiteAdapterError/isMappingMismatch`` tells a
    ///   mismatch from a database that cannot be opened.
    public static func check(_ configuration: SQLiteAdapterConfiguration) throws {
        guard FileManager.default.fileExists(atPath: configuration.path) else {
            throw SQLiteAdapterError(.databaseFailed, "the database \(configuration.path) of adapter \(configuration.name) does not exist")
        }
        do {
            // Another program may hold the write lock right now (a rollback-journal database
            // blocks readers while it commits): wait for it as the adapter itself would.
            let queue = try ReadOnlyDatabase.open(path: configuration.path, busyTimeout: Double(configuration.busyTimeout.components.seconds))
            try queue.read { db in _ = try resolve(configuration, db: db) }
        } catch let error as SQLiteAdapterError {
            throw error
        } catch {
            throw SQLiteAdapterError(.databaseFailed, ReadOnlyDatabase.describe(error, path: configuration.path), underlying: error)
        }
    }

    /// Reads what `gateway status` shows, from a read-only connection: nothing is installed or
    /// folded, so a database the gateway has not set up yet is reported as such.
    /// - Throws: ``SQLiteAdapterError`` naming the file.
    public static func readStatus(_ configuration: SQLiteAdapterConfiguration) throws -> StoreStatusSnapshot {
        guard FileManager.default.fileExists(atPath: configuration.path) else {
            throw SQLiteAdapterError(.databaseFailed, "the database \(configuration.path) of adapter \(configuration.name) does not exist")
        }
        let zone = configuration.zoneID
        do {
            let queue = try ReadOnlyDatabase.open(path: configuration.path, busyTimeout: Double(configuration.busyTimeout.components.seconds))
            return try queue.read { db in
                guard try db.tableExists("_gateway_zone") else {
                    return .notSetUp("the gateway has not set this database up yet; its first sync installs the change capture and syncs every row")
                }
                let state = try Data.fetchOne(
                    db, sql: #"SELECT state FROM "_gateway_zone" WHERE zone_name = ? AND owner_name = ?"#, arguments: [zone.zoneName, zone.ownerName])
                guard try db.tableExists("_gateway_log"), try db.tableExists("_gateway_failures") else {
                    // An earlier release's layout: its change table holds what it captured. The
                    // next open upgrades it.
                    let pending = try db.tableExists("_gateway_changes") ? try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "_gateway_changes""#) ?? 0 : 0
                    return StoreStatusSnapshot(
                        zoneState: state, hasChanges: pending > 0, pendingChanges: pending, failedRecords: 0,
                        note: "set up by an earlier release of the gateway; the next sync upgrades its tables")
                }
                let failures = try failedRecords(zone: zone, limit: StoreStatusSnapshot.failuresListed, db: db)
                // A synced table whose capture triggers are gone was dropped and created again
                // (a migration that rebuilt it): nothing captured what it changed.
                let triggers = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'"))
                let installed = try String.fetchAll(db, sql: #"SELECT table_name FROM "_gateway_tables" ORDER BY table_name"#)
                let recreated = installed.filter { table in
                    !["insert", "update", "delete"].allSatisfy { triggers.contains(GatewayTables.plainTriggerName($0, table)) }
                }
                // A table added to the configuration since the last sync: none of its rows is synced.
                let added = configuration.tables.map(\.table).filter { !installed.contains($0) }.sorted()
                let notes = StoreStatusSnapshot.uncapturedTableNotes(recreated: recreated, added: added, adapter: configuration.name)
                let note = notes.isEmpty ? nil : notes.joined(separator: "; ")
                return StoreStatusSnapshot(
                    zoneState: state, hasChanges: try !notes.isEmpty || (Bool.fetchOne(db, sql: GatewayTables.hasChangesSQL) ?? false),
                    pendingChanges: try Int.fetchOne(db, sql: GatewayTables.pendingCountSQL) ?? 0,
                    failedRecords: try Int.fetchOne(db, sql: "SELECT COUNT(*) \(GatewayTables.currentFailuresSQL)") ?? 0, note: note, failures: failures)
            }
        } catch {
            throw SQLiteAdapterError(.databaseFailed, ReadOnlyDatabase.describe(error, path: configuration.path), underlying: error)
        }
    }

    /// Checks the mapping against the database a seed script would create, in memory.
    public static func check(_ configuration: SQLiteAdapterConfiguration, seedScript: String, seedName: String) throws {
        do {
            let queue = try DatabaseQueue()
            try queue.writeWithoutTransaction { db in try db.execute(sql: seedScript) }
            try queue.read { db in _ = try resolve(configuration, db: db) }
        } catch let error as SQLiteAdapterError {
            throw error
        } catch {
            throw SQLiteAdapterError(
                .databaseFailed,
                "the seed script \(seedName) failed: \(SQLiteFailureReason.detail(error)); fix the script (\(configuration.path) was not created)",
                underlying: error)
        }
    }

    /// Creates a database by running a SQL script, for example data that ships as text. The
    /// file appears complete or not at all: the script runs on a temporary file that is then
    /// renamed.
    /// - Throws: ``SQLiteAdapterError`` when the file exists or the script fails.
    public static func createDatabase(at path: String, seedScript: String, seedName: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw SQLiteAdapterError(.databaseFailed, "\(path) already exists; it is not seeded again")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(UUID().uuidString).seeding")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                let queue = try DatabaseQueue(path: temporary.path)
                try queue.writeWithoutTransaction { db in try db.execute(sql: seedScript) }
                try queue.close()
            }
            try FileManager.default.moveItem(atPath: temporary.path, toPath: path)
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temporary.path + suffix) }
            throw SQLiteAdapterError(
                .databaseFailed, "cannot create \(path) from \(seedName): \(SQLiteFailureReason.describe(error, path: path))", underlying: error)
        }
    }
}
