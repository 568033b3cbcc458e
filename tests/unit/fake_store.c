/* SPDX-License-Identifier: MIT */
/* The fake probe's SQL store and task thread for dap/ unit tests: tasks run inline; the store
 * answers "SELECT 1" with one row, "SLOW" with a truncated result, and anything else with a
 * SQL error, so handlers can be tested without SQLite or Python. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_probe.h"
#include "sql/store.h"
#include "sql/vtab.h"
#include "core/core.h"

int core_task_submit(probe_task_fn fn, probe_task_done done, void *arg)
{
    fn(arg);
    done(arg);
    return 0;
}

int sql_store_query(const char *sql, struct probe_rows *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(sql, "SELECT 1") != 0 && strcmp(sql, "SLOW") != 0)
        return pb_err_set(err, PB_EBADARG, "SQL error: near \"%s\": syntax error (at column 1)",
                          sql);
    out->ncols = 2;
    out->cols = fake_zalloc(2, sizeof *out->cols);
    out->cols[0] = strdup("a");
    out->cols[1] = strdup("b");
    out->cells = fake_zalloc(2, sizeof *out->cells);
    out->ncells = out->cap = 2;
    out->nrows = 1;
    out->cells[0] = (struct probe_value){PROBE_V_INT, 1, 1.0, NULL};
    out->cells[1] = (struct probe_value){PROBE_V_TEXT, 0, 0, strdup("x")};
    if (sql[0] == 'S' && sql[1] == 'L') {
        out->truncated = 1;
        strcpy(out->note, "result truncated to 1 rows (query.max_rows)");
    }
    return 0;
}

/* system.threads' state of a thread (sql/vtab_system.c): the fake probe has no threads of its
 * own to read, so none is runnable (stackTrace's retries pause 1 ms). */
const char *sql_vtab_thread_state(long tid)
{
    (void)tid;
    return "unknown";
}
