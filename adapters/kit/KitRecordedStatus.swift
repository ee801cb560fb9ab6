import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// What `gateway status` shows of a kit store when the reader may not write the kit's state.
///
/// A kit adapter counts changes by listing its store and recording what it finds in its state
/// file, which needs write access to that file (and, for stores that keep one, to the store's
/// identity marker). An account that may only read gets the counts the state file holds: those
/// of the gateway's last look at the store, said so in the snapshot's note.
public enum KitRecordedStatus {
    /// Whether the running account can record a listing: write the state file, its folder (for
    /// SQLite's journal files) and the `alsoWritten` paths. A path that does not exist yet counts
    /// through the nearest folder that does.
    public static func canRecord(statePath: String, alsoWritten: [String] = []) -> Bool {
        let folder = URL(fileURLWithPath: statePath).deletingLastPathComponent().path
        return ([statePath, folder] + alsoWritten).allSatisfy(isWritable)
    }

    private static func isWritable(_ path: String) -> Bool {
        var candidate = URL(fileURLWithPath: path)
        while !FileManager.default.fileExists(atPath: candidate.path) {
            let parent = candidate.deletingLastPathComponent()
            if parent.path == candidate.path { return false }
            candidate = parent
        }
        return access(candidate.path, W_OK) == 0
    }

    /// The snapshot of a kit store for `gateway status`: read through the adapter `open` makes
    /// when this account can record a listing (``canRecord(statePath:alsoWritten:)``), exact;
    /// otherwise from the state file alone (``read(statePath:zoneID:earlierState:readOnlyBecause:)``),
    /// writing nothing, with a note naming what looking again needs (`lookingAgain`).
    public static func snapshot(
        statePath: String, zoneID: ZoneID, alsoWritten: [String] = [], earlierState: String? = nil, lookingAgain: String,
        open: () async throws -> any ModelAdapter
    ) async throws -> StoreStatusSnapshot {
        if canRecord(statePath: statePath, alsoWritten: alsoWritten) { return try await StoreStatusSnapshot.reading(try await open()) }
        let folders = [URL(fileURLWithPath: statePath).deletingLastPathComponent().path] + alsoWritten
        return try read(
            statePath: statePath, zoneID: zoneID, earlierState: earlierState,
            readOnlyBecause: "\(lookingAgain) needs write access to \(folders.joined(separator: " and ")), which this account lacks")
    }

    /// Reads the snapshot from the state file alone, opened read-only.
    /// - Throws: ``KitAdapterError`` with ``KitAdapterErrorCode/stateFailed`` when the file
    ///   cannot be read.
    /// - Parameters:
    ///   - statePath: the kit's state file.
    ///   - zone: the zone of the store's records.
    ///   - earlierState: where an earlier release kept this store's state, if it did; the next
    ///     sync moves it to `statePath`.
    ///   - reason: why the counts are not read live, for the snapshot's note.
    public static func read(statePath: String, zoneID zone: ZoneID, earlierState: String? = nil, readOnlyBecause reason: String) throws
        -> StoreStatusSnapshot
    {
        guard FileManager.default.fileExists(atPath: statePath) else {
            if let earlierState, FileManager.default.fileExists(atPath: earlierState) {
                return .notSetUp("synced by an earlier release of the gateway, whose state \(earlierState) the next sync moves into \(statePath); \(reason)")
            }
            return .notSetUp("the gateway has not synced this store yet (its state \(statePath) does not exist)")
        }
        do {
            let queue = try ReadOnlyDatabase.open(path: statePath)
            return try queue.read { db in
                guard try db.tableExists("changes") else {
                    return .notSetUp("the gateway has not synced this store yet (its state \(statePath) is empty)")
                }
                let pending = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM changes") ?? 0
                // A failure mark counts only while the change it failed is the current one.
                let failed =
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT (SELECT COUNT(*) FROM failures f JOIN changes c ON c.record_name = f.record_name AND c.version = f.version)
                                 + (SELECT COUNT(*) FROM problems)
                            """) ?? 0
                let listed = try KitStateDatabase.failedRecords(zone: zone, limit: StoreStatusSnapshot.failuresListed, db: db)
                let hasProblems = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM problems)") ?? false
                return StoreStatusSnapshot(
                    zoneState: try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1"), hasChanges: pending > 0 || hasProblems,
                    pendingChanges: pending, failedRecords: failed,
                    note: "counted at the gateway's last look at the store: \(reason)", failures: listed)
            }
        } catch {
            throw KitAdapterError(.stateFailed, "cannot read the adapter state: \(ReadOnlyDatabase.describe(error, path: statePath))", underlying: error)
        }
    }
}
