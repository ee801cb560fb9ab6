import CSQLiteProcess
import Synchronization

/// SQLite's process-wide settings: memory statistics off. With them on, every allocation SQLite
/// makes takes one process-wide mutex, which the connections of the cloud and of each adapter,
/// working side by side on other threads, then wait for. (The statistics only feed
/// `sqlite3_memory_used` and the soft heap limit, which the gateway does not use. Connections need
/// no other setting: GRDB already opens them without a mutex of their own.)
///
/// Why: `gateway sync` of 100,000 rows SQLite → embedded cloud → SQLite took 14% less wall time
/// and 13% less CPU (`BENCHMARKS.md`). A setting of the whole process that must come before
/// SQLite's first use, so the executables apply it first thing; a program embedding the gateway's
/// libraries may call it at its start.
public enum SQLiteProcessSettings {
    private static let outcome = Mutex<Bool?>(nil)

    /// Applies the settings once per process. Returns whether they are in effect: `false` when
    /// SQLite was already in use (a connection had been opened), which leaves SQLite's defaults.
    @discardableResult
    public static func apply() -> Bool {
        outcome.withLock { outcome in
            if let outcome { return outcome }
            let applied = gateway_sqlite_disable_memory_statistics() == 1
            outcome = applied
            return applied
        }
    }
}
