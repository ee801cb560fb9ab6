import CSQLiteProcess
import Synchronization

/// SQLite's process-wide settings:
///
/// - Memory statistics off. With them on, every allocation SQLite makes takes one process-wide
///   mutex, which the connections of the cloud and of each adapter, working side by side on other
///   threads, then wait for. (The statistics only feed `sqlite3_memory_used` and the soft heap
///   limit, which the gateway does not use. Connections need no other setting: GRDB already opens
///   them without a mutex of their own.) `gateway sync` of 100,000 rows SQLite → embedded cloud →
///   SQLite took 14% less wall time and 13% less CPU.
/// - Statement journals in memory up to ``statementJournalInMemory`` (SQLite's default: 64 KiB).
///   A statement that writes many rows inside a larger transaction, such as the embedded cloud's
///   50-row inserts, journals every page it changes so it can be undone alone; scattered record
///   names change a page per row, and past 64 KiB the journal went to a temporary file: saving
///   UUID-named records got 15–20% slower than one row per statement, and is now as fast.
///
/// Measured in `BENCHMARKS.md`. A setting of the whole process that must come before
/// SQLite's first use, so the executables apply it first thing; a program embedding the gateway's
/// libraries may call it at its start.
public enum SQLiteProcessSettings {
    private static let outcome = Mutex<Bool?>(nil)

    /// How large a statement journal grows in memory before it spills to a temporary file.
    public static let statementJournalInMemory = 4 << 20

    /// Applies the settings once per process. Returns whether they are in effect: `false` when
    /// SQLite was already in use (a connection had been opened), which leaves SQLite's defaults.
    @discardableResult
    public static func apply() -> Bool {
        outcome.withLock { outcome in
            if let outcome { return outcome }
            let applied =
                gateway_sqlite_disable_memory_statistics() == 1
                && gateway_sqlite_set_statement_journal_spill(Int32(statementJournalInMemory)) == 1
            outcome = applied
            return applied
        }
    }
}
