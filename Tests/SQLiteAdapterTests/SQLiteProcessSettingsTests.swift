import GRDB
import GRDBSQLite
import SQLiteSupport
import Testing

/// SQLite's process-wide settings: they apply before SQLite's first use in a process and leave
/// SQLite's defaults otherwise. Which case a test process meets depends on which test opened a
/// connection first, so both are checked against what SQLite itself reports.
@Suite("SQLite process settings")
struct SQLiteProcessSettingsTests {
    @Test("connections run without a mutex and allocations are not counted when the settings apply, with SQLite's defaults otherwise")
    func settingsReachConnections() throws {
        let applied = SQLiteProcessSettings.apply()
        #expect(SQLiteProcessSettings.apply() == applied, "applying again reports the same outcome")
        let queue = try DatabaseQueue()
        let hasMutex = try queue.read { db in sqlite3_db_mutex(db.sqliteConnection) != nil }
        _ = try queue.read { db in try Int.fetchAll(db, sql: "WITH RECURSIVE n(i) AS (VALUES (1) UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT i FROM n") }
        if applied {
            #expect(!hasMutex, "multi-thread mode: a connection has no mutex of its own")
            #expect(sqlite3_memory_used() == 0, "memory statistics are off")
        } else {
            #expect(hasMutex, "SQLite's default (serialized) mode is left as it was")
            #expect(sqlite3_memory_used() > 0, "memory statistics are left on")
        }
    }
}
