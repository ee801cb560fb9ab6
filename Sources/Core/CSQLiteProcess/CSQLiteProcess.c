#include "CSQLiteProcess.h"
#include <sqlite3.h>

int gateway_sqlite_configure_process(void) {
    int threading = sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
    int statistics = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return threading != SQLITE_OK ? threading : statistics;
}
