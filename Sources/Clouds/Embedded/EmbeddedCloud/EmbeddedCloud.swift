import Foundation
import GRDB
import SQLiteSupport
import GatewayCore

/// The default cloud: CloudKit semantics in one SQLite file.
///
/// Each zone has a generation (new on every creation) and a commit sequence; every saved or
/// deleted record takes the next sequence number, and a change token is (generation, sequence).
/// Tombstones of deleted records are kept for ``Configuration/tombstoneRetention``. Assets are
/// stored in the same file, content-addressed by SHA-256.
///
/// Several processes may use one file at once: writes serialize through SQLite's write lock
/// (WAL mode), sequence numbers are allocated inside the write transaction, and change signals
/// poll the file, so every process sees every other's commits.
public final class EmbeddedCloud: CloudDatabase {
    /// The SQLite file.
    public let path: String
    /// The behaviour settings.
    public let configuration: Configuration
    let pool: DatabasePool
    /// Checkpoints the file's WAL beside the pool's writer.
    private let checkpointer: WALCheckpointer
    private let purgeSchedule: PurgeSchedule

    public var limits: CloudLimits { configuration.limits }

    /// Opens (creating when missing, with its folder) the cloud file at `path`.
    /// - Throws: ``CloudError`` with code ``CloudError/Code/internalError`` when the file cannot be
    ///   opened or was written by a newer gateway.
    public init(path: String, configuration: Configuration = Configuration()) throws {
        self.path = path
        self.configuration = configuration
        purgeSchedule = PurgeSchedule(retention: configuration.tombstoneRetention)
        var grdb = GRDB.Configuration()
        grdb.busyMode = .timeout(Double(configuration.busyTimeout.components.seconds))
        grdb.prepareDatabase { db in
            // WAL with NORMAL sync survives a killed process; only power loss may drop the newest commits.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try WALCheckpointer.prepareWriter(db)
        }
        checkpointer = WALCheckpointer(path: path, configuration: grdb)
        do {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            pool = try DatabasePool(path: path, configuration: grdb)
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    try EmbeddedCloudSchema.migrate(db)
                    return .commit
                }
            }
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(
                .internalError, SQLiteFailureReason.describe(error, path: path), underlying: error)
        }
    }

    // MARK: Zones

    /// Closes the file, its WAL checkpointed and removed when no other process has it open.
    public func close() async {
        checkpointer.close()
        let path = path
        await pool.closeRemovingWAL(path: path) { FileManager.default.fileExists(atPath: path) }
    }

    public func zones() async throws -> [ZoneID] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT zone_name, owner_name FROM zones ORDER BY zone_key").map {
                ZoneID(zoneName: $0[0], ownerName: $0[1])
            }
        }
    }

    public func createZone(_ zone: ZoneID) async throws {
        if let problem = ModifyRules.nameProblem(zone.zoneName, what: "zone name") {
            throw CloudError(.invalidArguments, problem)
        }
        let now = nowMilliseconds()
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO zones (owner_name, zone_name, generation, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (owner_name, zone_name) DO NOTHING
                    """,
                arguments: [zone.ownerName, zone.zoneName, SequenceChangeToken.newGeneration(), now])
        }
    }

    public func deleteZone(_ zone: ZoneID) async throws {
        try await write { db in
            let key = try Self.zoneRow(db, zone).key
            try db.execute(sql: "DELETE FROM records WHERE zone_key = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM zones WHERE zone_key = ?", arguments: [key])
        }
    }

    // MARK: Change signals

    public func changeSignals(in zone: ZoneID) -> ChangeSignals {
        let pool = pool
        return .polling(every: configuration.signalPollInterval) {
            try await pool.read { db -> String in
                let row = try Row.fetchOne(
                    db, sql: "SELECT generation, last_seq FROM zones WHERE owner_name = ? AND zone_name = ?",
                    arguments: [zone.ownerName, zone.zoneName])
                guard let row else { return "absent" }
                let generation: Data = row[0]
                let sequence: Int64 = row[1]
                return "\(generation.base64EncodedString()):\(sequence)"
            }
        }
    }

    // MARK: Tombstones

    /// Removes tombstones older than ``Configuration/tombstoneRetention`` and returns how many
    /// were removed. Tokens that needed them expire. Runs on its own about once an hour while the
    /// cloud is written to; call it to run it now.
    @discardableResult
    public func purgeExpiredTombstones() async throws -> Int {
        let horizon = nowMilliseconds() - configuration.tombstoneRetention.milliseconds
        return try await write { db in
            var removed = 0
            let zones = try Int64.fetchAll(db, sql: "SELECT zone_key FROM zones")
            for key in zones {
                let newest = try Int64.fetchOne(
                    db, sql: "SELECT MAX(seq) FROM records WHERE zone_key = ? AND deleted = 1 AND modified_at < ?",
                    arguments: [key, horizon])
                guard let newest else { continue }
                try db.execute(
                    sql: "DELETE FROM records WHERE zone_key = ? AND deleted = 1 AND modified_at < ?",
                    arguments: [key, horizon])
                removed += db.changesCount
                try db.execute(
                    sql: "UPDATE zones SET purged_seq = MAX(purged_seq, ?) WHERE zone_key = ?",
                    arguments: [newest, key])
            }
            return removed
        }
    }

    func purgeIfDue() async {
        // A failed purge is retried at the next interval; it never fails the write that triggered it.
        if purgeSchedule.takeIfDue() { _ = try? await purgeExpiredTombstones() }
    }

    // MARK: Plumbing

    struct ZoneRow {
        var key: Int64
        var generation: Data
        var lastSequence: Int64
        var purgedSequence: Int64
    }

    static func zoneRow(_ db: Database, _ zone: ZoneID) throws -> ZoneRow {
        let statement = try db.cachedStatement(
            sql: "SELECT zone_key, generation, last_seq, purged_seq FROM zones WHERE owner_name = ? AND zone_name = ?")
        guard let row = try Row.fetchOne(statement, arguments: [zone.ownerName, zone.zoneName]) else {
            throw CloudError(.zoneNotFound, "zone \(zone) does not exist; create it first")
        }
        return ZoneRow(key: row[0], generation: row[1], lastSequence: row[2], purgedSequence: row[3])
    }

    func nowMilliseconds() -> Int64 {
        Timestamp(configuration.now()).millisecondsSince1970
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw Self.cloudError(error, path: path)
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            let result = try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
            checkpointer.noteWrite()
            return result
        } catch {
            throw Self.cloudError(error, path: path)
        }
    }

    /// Like ``write(_:)``, but rolls the transaction back when `body` returns `nil`.
    func writeUnlessNil<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T?) async throws -> T? {
        do {
            let result = try await pool.writeWithoutTransaction { db in
                var result: T?
                try db.inTransaction(.immediate) {
                    result = try body(db)
                    return result == nil ? .rollback : .commit
                }
                return result
            }
            if result != nil { checkpointer.noteWrite() }
            return result
        } catch {
            throw Self.cloudError(error, path: path)
        }
    }

    /// Maps database failures to cloud errors; cloud errors thrown inside transactions pass through.
    static func cloudError(_ error: any Error, path: String) -> CloudError {
        if let error = error as? CloudError { return error }
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                return CloudError(
                    .zoneBusy, "the cloud file \(path) is locked by another writer; retry", retryAfter: .seconds(1),
                    underlying: error)
            }
            if error.resultCode == .SQLITE_FULL {
                return CloudError(.quotaExceeded, SQLiteFailureReason.describe(error, path: path), underlying: error)
            }
            return CloudError(.internalError, "the embedded cloud failed: \(SQLiteFailureReason.describe(error, path: path))", underlying: error)
        }
        return CloudError(.internalError, "the embedded cloud \(path) failed: \(error)", underlying: error)
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

/// GRDB also has a `Record`; in this module the word always means the gateway's record.
typealias Record = GatewayCore.Record
