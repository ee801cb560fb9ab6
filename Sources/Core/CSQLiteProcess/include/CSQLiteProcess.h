#ifndef CSQLITE_PROCESS_H
#define CSQLITE_PROCESS_H

/// Turns SQLite's memory statistics off for the whole process (sqlite3_config is variadic, so
/// Swift cannot call it): with them on, every allocation SQLite makes takes one process-wide mutex.
///
/// Returns 1 when it took effect, 0 when SQLite was already initialized in this process (a
/// connection had been opened), which leaves the statistics on.
int gateway_sqlite_disable_memory_statistics(void);

/// Keeps statement journals (what SQLite saves to undo one statement of a larger transaction) in
/// memory up to `bytes` before they spill to a temporary file.
///
/// Returns 1 when it took effect, 0 when SQLite was already initialized in this process.
int gateway_sqlite_set_statement_journal_spill(int bytes);

#endif
