import Foundation
import GRDB

/// Opens a SQLite database for reading only, for an account that may not write it or its folder.
public enum ReadOnlyDatabase {
    /// Opens `path` read-only and reads from it once, so a file that cannot be read fails here.
    ///
    /// A database in WAL mode needs its `-shm` file even to read; when neither it nor the `-wal`
    /// file exists (the last connection closed cleanly) and the folder is not writable, SQLite
    /// cannot create it and refuses the read. The file is then opened `immutable`, which reads it
    /// without the shared memory: exact, since with no `-wal` file the database file holds every
    /// commit. A write that starts meanwhile is not seen by this connection.
    public static func open(path: String, busyTimeout: TimeInterval = 30) throws -> DatabaseQueue {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(busyTimeout)
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN || error.resultCode == .SQLITE_READONLY {
            guard !FileManager.default.fileExists(atPath: path + "-wal") else { throw error }
            let queue = try DatabaseQueue(path: immutableURI(path), configuration: configuration)
            try queue.read { db in _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            return queue
        }
    }

    /// What keeps a read-only connection from reading `path`, naming the file and what to do;
    /// other failures as ``SQLiteFailureReason/describe(_:path:)`` says them.
    public static func describe(_ error: any Error, path: String) -> String {
        if FileManager.default.fileExists(atPath: path), access(path, R_OK) != 0 {
            return "\(path) cannot be read: permission denied to this user"
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let journal = path + "-wal"
        if let size = (try? FileManager.default.attributesOfItem(atPath: journal))?[.size] as? Int, size > 0,
            !FileManager.default.fileExists(atPath: path + "-shm"), access(folder, W_OK) != 0
        {
            return
                "\(path) cannot be read without write access to \(folder): SQLite must create \(path)-shm to read the commits still in \(journal) (a program is writing the database, or one stopped without closing it); read it as a user that may write the folder, or once the writer has closed it"
        }
        return SQLiteFailureReason.describe(error, path: path)
    }

    /// A `file:` URI for `path` with `immutable=1` (SQLite reads URIs when built with
    /// `SQLITE_USE_URI`, as Debian's and Apple's libraries are).
    static func immutableURI(_ path: String) -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (absolute.addingPercentEncoding(withAllowedCharacters: allowed) ?? absolute) + "?immutable=1"
    }
}
