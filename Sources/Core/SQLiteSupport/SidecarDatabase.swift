import Foundation
import GRDB

/// A SQLite database the gateway keeps beside a store (adapter state, a file index): its folder
/// created, WAL with `synchronous = NORMAL`, and a 30 s wait for another connection's lock.
///
/// NORMAL loses no commit when the process crashes; a power loss may lose the last commits,
/// which the users of such databases recover from (they repeat work, never lose it).
public enum SidecarDatabase {
    /// Opens (creating) the database at `path`.
    public static func open(path: String) throws -> DatabaseQueue {
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        var configuration = GRDB.Configuration()
        configuration.busyMode = .timeout(30)
        configuration.prepareDatabase { db in
            if try String.fetchOne(db, sql: "PRAGMA journal_mode") != "wal" { try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}
