#ifndef CSQLITE_PROCESS_H
#define CSQLITE_PROCESS_H

/// Sets SQLite's process-wide options the gateway runs with (sqlite3_config is variadic, so Swift
/// cannot call it): connections opened without a threading flag use the multi-thread mode (no
/// mutex per connection: GRDB already uses each connection from one queue at a time), and memory
/// statistics are off (they take one process-wide mutex on every allocation SQLite makes).
///
/// Returns SQLITE_OK when both took effect, otherwise the first failure's code: SQLITE_MISUSE when
/// SQLite was already initialized in this process (a connection was opened), which changes
/// nothing.
int gateway_sqlite_configure_process(void);

#endif
