import CSQLiteProcess
import Synchronization

/// SQLite's process-wide settings for a process that reaches SQLite only through GRDB, as the
/// gateway does: connections in SQLite's multi-thread mode (GRDB uses each connection from one
/// queue at a time, so SQLite's own mutex per connection only costs a lock around every call), and
/// memory statistics off (they take one process-wide mutex on every allocation, which connections
/// working side by side on other threads then wait for).
///
/// Why: `gateway sync` of 100,000 rows SQLite → embedded cloud → SQLite took about 10% less wall
/// time and 12% less CPU with both (`BENCHMARKS.md`). The setting must come before SQLite's first
/// use in the process, so the executables apply it first thing; a process that embeds the gateway's
/// libraries and shares a connection across threads outside GRDB must not call it.
public enum SQLiteProcessSettings {
    private static let outcome = Mutex<Bool?>(nil)

    /// Applies the settings once per process. Returns whether they are in effect: `false` when
    /// SQLite was already in use (a connection had been opened), which leaves SQLite's defaults.
    @discardableResult
    public static func apply() -> Bool {
        outcome.withLock { outcome in
            if let outcome { return outcome }
            let applied = gateway_sqlite_configure_process() == 0
            outcome = applied
            return applied
        }
    }
}
