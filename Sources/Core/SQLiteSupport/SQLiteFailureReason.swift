import Foundation
import GRDB

#if canImport(Glibc)
import Glibc
#endif

/// What went wrong with a SQLite file, said so that an operator knows what to do: a full disk,
/// a read-only filesystem, a damaged file. Messages name the file and never contain row values
/// (SQL arguments are left out).
public enum SQLiteFailureReason {
    /// Describes `error`, raised while using the SQLite file at `path`.
    public static func describe(_ error: any Error, path: String) -> String {
        guard let error = error as? DatabaseError else { return "\(path): \(error)" }
        let detail = error.message.map { " (\($0))" } ?? ""
        // A full disk often surfaces as an I/O error (growing the WAL or its shared-memory file).
        if error.resultCode == .SQLITE_FULL || (error.resultCode == .SQLITE_IOERR && isFull(path)) {
            return "the disk holding \(path) is full; free space, then sync again (the failed transaction was rolled back)"
        }
        switch error.resultCode {
        case .SQLITE_FULL:
            return "the disk holding \(path) is full; free space, then sync again (the failed transaction was rolled back)"
        case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_IOERR, .SQLITE_PERM, .SQLITE_AUTH:
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                return "\(path) is a folder, not a SQLite database; point the path at the database file"
            }
            if let unwritable = unwritableReason(path) { return "\(path) cannot be written: \(unwritable)" }
            if error.resultCode == .SQLITE_CANTOPEN { return "\(path) cannot be opened\(detail); check that it exists and its folder is accessible" }
            if error.resultCode == .SQLITE_IOERR { return "an I/O error on \(path)\(detail); check the disk" }
            return "\(path) cannot be written\(detail)"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return "\(path) is damaged or not a SQLite database\(detail); check that the path names the database (a typo can name another file), else restore it from a backup"
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return "\(path) stayed locked by another program\(detail); retry, or raise busy_timeout"
        default:
            return "\(path) failed: \(error.resultCode)\(detail)"
        }
    }

    /// A statement's error as SQLite gives it, code and message, for errors that are about SQL
    /// rather than a file (a seed script).
    public static func detail(_ error: any Error) -> String {
        guard let error = error as? DatabaseError else { return "\(error)" }
        return error.message ?? "\(error.resultCode)"
    }

    /// Whether the filesystem holding `path` has (almost) no space left.
    public static func isFull(_ path: String) -> Bool {
        var place = path
        if !FileManager.default.fileExists(atPath: place) { place = (path as NSString).deletingLastPathComponent }
        var info = statvfs()
        guard statvfs(place, &info) == 0 else { return false }
        return Int(info.f_bavail) * Int(info.f_frsize) < 64 * 1024
    }

    /// Why the file at `path` (or its folder, for a file not yet created) cannot be written, when
    /// the filesystem says so: read-only, or no write permission.
    public static func unwritableReason(_ path: String) -> String? {
        var place = path
        if !FileManager.default.fileExists(atPath: place) { place = (path as NSString).deletingLastPathComponent }
        var info = statvfs()
        if statvfs(place, &info) == 0, info.f_flag & UInt(ST_RDONLY) != 0 {
            return "its filesystem is mounted read-only"
        }
        if access(place, W_OK) != 0, errno == EACCES || errno == EROFS {
            return errno == EROFS ? "its filesystem is mounted read-only" : "permission denied to this user"
        }
        return nil
    }
}
