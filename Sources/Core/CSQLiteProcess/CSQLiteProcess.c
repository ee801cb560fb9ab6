#include "CSQLiteProcess.h"
#include <sqlite3.h>

int gateway_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK ? 1 : 0;
}

int gateway_sqlite_set_statement_journal_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes) == SQLITE_OK ? 1 : 0;
}
