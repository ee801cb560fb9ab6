import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// Sync state an adapter kept before it moved onto the kit, to be carried into a new sidecar
/// database: what was seen of each record, the change log, metadata, failures and the zone
/// state. ``KitAdapter/importState(_:to:)`` writes it.
public struct KitStateImport: Sendable {
    /// A record as the adapter last saw it in the store.
    public struct SeenRecord: Sendable {
        /// The record's name.
        public var recordName: String
        /// The record's type.
        public var recordType: String
        /// The store's version of the record (see ``KitEntry/version``).
        public var version: String

        /// A record the earlier state had seen, at the store's `version`.
        public init(recordName: String, recordType: String, version: String) {
            self.recordName = recordName
            self.recordType = recordType
            self.version = version
        }
    }

    /// A pending change: a save (`recordType` given) or a delete.
    public struct Change: Sendable {
        /// The record's name.
        public var recordName: String
        /// The change's position in the earlier change log; later changes have larger versions.
        public var version: Int64
        /// The record's type, when the earlier state recorded it.
        public var recordType: String?

        /// A pending change of the earlier state.
        public init(recordName: String, version: Int64, recordType: String?) {
            self.recordName = recordName
            self.version = version
            self.recordType = recordType
        }
    }

    /// The records the earlier state had seen in the store.
    public var seen: [SeenRecord] = []
    /// The changes the earlier state had not uploaded yet.
    public var changes: [Change] = []
    /// Sync metadata by record name.
    public var metadata: [String: Data] = [:]
    /// Upload failures by record name.
    public var failures: [String: RecordFailure] = [:]
    /// The zone state blob (token, batch size) of the earlier state, carried over as it was.
    public var zoneState: Data?
    /// The change-log counter; versions given later continue from it.
    public var changeCounter: Int64 = 0

    /// An empty import: nothing seen, nothing pending.
    public init() {}
}

extension KitAdapter {
    /// Writes `imported` as the sidecar state at `path`, which must not exist yet. The database
    /// is built under a temporary name and moved into place whole, so a crash leaves either no
    /// state (and the import runs again) or all of it.
    public static func importState(_ imported: KitStateImport, to path: String) throws {
        let target = URL(fileURLWithPath: path)
        guard !FileManager.default.fileExists(atPath: path) else {
            throw KitAdapterError(.stateFailed, "cannot import sync state: \(path) exists already")
        }
        let temporary = target.deletingLastPathComponent().appendingPathComponent(target.lastPathComponent + ".importing")
        do {
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: temporary)
            let queue = try DatabaseQueue(path: temporary.path)
            try queue.write { db in
                try KitStateDatabase.createTables(db)
                for record in imported.seen {
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed) VALUES (?, ?, ?)")
                        .execute(arguments: [record.recordName, record.recordType, KitRecordObservation.observed(version: record.version)])
                }
                for change in imported.changes {
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO changes (record_name, version, record_type) VALUES (?, ?, ?)")
                        .execute(arguments: [change.recordName, change.version, change.recordType])
                }
                for (name, data) in imported.metadata {
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO metadata (record_name, data) VALUES (?, ?)").execute(arguments: [name, data])
                }
                for (name, failure) in imported.failures {
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO failures (record_name, version, code, message) VALUES (?, ?, ?, ?)")
                        .execute(arguments: [name, failure.version, failure.code, failure.message])
                }
                if let zoneState = imported.zoneState {
                    try db.execute(sql: "INSERT OR REPLACE INTO zone (id, state) VALUES (1, ?)", arguments: [zoneState])
                }
                let counter = max(imported.changeCounter, imported.changes.map(\.version).max() ?? 0)
                try db.execute(sql: "UPDATE counter SET version = ? WHERE id = 1", arguments: [counter])
            }
            try queue.close()
            try FileManager.default.moveItem(at: temporary, to: target)
        } catch let error as KitAdapterError {
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw KitAdapterError(.stateFailed, "cannot import sync state: \(SQLiteFailureReason.describe(error, path: path))", underlying: error)
        }
    }
}
