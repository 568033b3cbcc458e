/* SPDX-License-Identifier: MIT */
/* sql_history_bind as history.c has it, for the rollups' unit test (rollup.c binds its group
 * keys with it; history.c itself needs the store and the task thread). */
#include <sqlite3.h>

#include "sql/store.h"

void sql_history_bind(sqlite3_stmt *st, int i, const struct probe_value *v)
{
    switch (v->type) {
    case PROBE_V_INT: sqlite3_bind_int64(st, i, v->i); break;
    case PROBE_V_REAL: sqlite3_bind_double(st, i, v->d); break;
    case PROBE_V_TEXT: sqlite3_bind_text(st, i, v->s, -1, SQLITE_TRANSIENT); break;
    default: sqlite3_bind_null(st, i); break;
    }
}
