/* SPDX-License-Identifier: MIT */
/* The SQL store (probe-internal): one in-memory SQLite database, opened lazily on the task
 * thread, with the schemas python, system, probing, perf and torch ATTACHed so that names like
 * python.backtrace work. Live tables are virtual tables computed when queried (vtab.c, vtab_*.c);
 * history tables are real tables that collectors append to (history.c). Clients only read:
 * an authorizer and sqlite3_stmt_readonly refuse anything else. See docs/tables.md.
 * Results are probe_rows (core/rows.h). */
#ifndef PROBE_STORE_H
#define PROBE_STORE_H

#include <stddef.h>

#include "core/rows.h"
#include "pb.h"

/* Run one read-only SQL statement. Task thread only (it may block: GIL waits inside virtual
 * tables, a long query up to query.timeout_ms). Applies query.max_rows, query.max_bytes and
 * query.timeout_ms. Returns 0 with out filled (free it with core_rows_free), or a negative code
 * with err->msg carrying SQLite's message (and for syntax errors the column and near token). */
int sql_store_query(const char *sql, struct probe_rows *out, struct pb_err *err);
/* Interrupt the running query, if any (any thread). */
void sql_store_interrupt(void);

/* ---- history tables (history.c) ---- */
#define PROBE_HISTORY_MAX_COLS 32

/* A column of a table, as listed by probing.tables. */
struct probe_column {
    const char *name;
    const char *type; /* INTEGER, REAL, TEXT */
    const char *description;
};

/* Declare a history table "schema.name" (schema one of python, system, probing, perf, torch)
 * with these columns; a first column `ts` (REAL, epoch seconds) is added in front. cols and
 * the strings must stay valid for the process's life (static tables). Any thread; idempotent
 * for the same name. The table exists in SQL once the first row is flushed, or at the first
 * query. Returns 0, PB_EBADARG (bad name, too many tables) with err filled. */
int sql_history_define(const char *table, const char *description, const struct probe_column *cols,
                       int ncols, struct pb_err *err);
/* Declare an index on a history table ("col1,col2": its columns, ts included), created with
 * the table (or at the next flush), so GROUP BY / WHERE on those columns need no sort or full
 * scan. Any thread. Returns 0 or PB_EBADARG. */
int sql_history_index(const char *table, const char *columns, struct pb_err *err);
/* Append one row (ncols values, without ts; ts is now). Any thread, never blocks on SQLite:
 * rows wait in a bounded queue (history.max_rows) until the task thread writes them. Text is
 * copied. Returns 0, PB_EBADARG (unknown table, wrong count) or -ENOMEM. */
int sql_history_append(const char *table, const struct probe_value *vals, int ncols);
/* Task thread: write queued rows and apply retention (history.max_rows, history.max_age_s). */
void sql_history_flush(void);
/* Declare a rollup of a history table: "<table>_by_<group cols joined by _>" (kind "rollup"),
 * one row per distinct value of group_cols ("col1,col2", at most 4) with `ts` (the group's
 * latest row), `rows` (count(*)) and, for each of value_cols (at most 6), <col>_count, _sum,
 * _min, _max, _mean: count(col), sum(col), min, max and avg(col) over the group's rows. Kept by
 * the flush as rows are written and evicted, so it always equals the GROUP BY over the rows the
 * table holds (sums up to floating-point rounding). Declares an index on group_cols. Any
 * thread; idempotent. Returns 0 or PB_EBADARG. */
int sql_history_rollup(const char *table, const char *group_cols, const char *value_cols,
                       struct pb_err *err);
/* Start the built-in collector (system.process_history) on the loop. Loop thread. */
int sql_collector_start(void);

/* ---- the tables perf --torch fills (torch_tables.c) ---- */
#define PROBE_TORCH_TRACE_TABLE "python.torch_trace"
#define PROBE_TORCH_STEPS_TABLE "python.torch_steps"
extern const int probe_torch_trace_ncols, probe_torch_steps_ncols;
/* Declare the history tables python.torch_trace and python.torch_steps (empty until tracing
 * runs; the original Probing's views training_logs and profiling_data read them). Any thread,
 * idempotent, no GIL. Returns 0 or a negative code with err filled. */
int sql_torch_tables_define(struct pb_err *err);

/* ---- the GPU tables (vtab_gpu.c, NVML by common/nvml.c) ---- */
/* Declare system.gpu_history and system.gpu_process_history (gpu_metrics reads the first).
 * Any thread, idempotent. */
int sql_gpu_tables_define(struct pb_err *err);
/* Task thread: one sample of every GPU and GPU process into them; after NVML first fails
 * (no GPU or driver), nothing. */
void sql_gpu_sample(void);

/* ---- internals shared by store.c, vtab.c, vtab_*.c and history.c ---- */
struct sqlite3;
/* The table catalogue for probing.tables: live tables, then history tables. */
struct probe_table_info {
    const char *name; /* "schema.table" */
    const char *kind; /* "live" or "history" */
    const char *description;
    const struct probe_column *cols;
    int ncols;
};
int sql_vtab_count(void);
const struct probe_table_info *sql_vtab_info(int i);
int sql_history_count(void);
const struct probe_table_info *sql_history_info(int i);
/* Task thread, at open: register the module and declare every live table (sql_schema_declare:
 * each is connected when a statement first names it). */
int sql_vtab_register(struct sqlite3 *db, struct pb_err *err);
/* At open, before any client statement: writes rows (type, name, sql) into schema's catalogue
 * as CREATE writes them, for virtual tables and views only (no storage of their own), and makes
 * SQLite read the catalogue again at the next statement. What CREATE would do at once
 * (parse, declare, connect: 30 us a live table) is then done for the tables a statement names,
 * when it names them. values: the VALUES list, each row ('table'|'view', name, name, 0, sql).
 * Returns an SQLite code. */
int sql_schema_declare(struct sqlite3 *db, const char *schema, const char *values);
/* Task thread: create declared history tables not created yet (store.c calls it). */
int sql_history_create_tables(struct sqlite3 *db);
/* sql_compat.c: the original Probing's names (docs/migrating.md). At open (task thread):
 * hour(), date_trunc() and the views memory_usage, training_logs, ... (TEMP views, so they may
 * read every schema). The views' catalogue for probing.tables; a hint for SQL the original
 * accepted and SQLite does not (interval '5 min'): fills err and returns its negative code, else 0. */
int sql_compat_register(struct sqlite3 *db, struct pb_err *err);
int sql_compat_count(void);
const struct probe_table_info *sql_compat_info(int i);
int sql_compat_hint(const char *sql, struct pb_err *err);
/* rollup.c, for history.c (task thread but for sql_rollup_new). sql_rollup_new parses
 * the lists against base and makes the rollup's columns (*cols, the caller's); _add adds a row
 * being written (base's columns without ts); _scan adds (sign 1) or removes (-1) base's rows
 * up to rowid upto, to each of rs; _sync writes the changed groups into the rollup's table
 * (self), after the evicted rows were deleted from base. */
struct sqlite3_stmt;
/* Bind v (copied) as parameter i of st (history.c). */
void sql_history_bind(struct sqlite3_stmt *st, int i, const struct probe_value *v);
#define PROBE_ROLLUP_MAX_GROUP 4
#define PROBE_ROLLUP_MAX_VALUES 6
struct probe_rollup;
struct probe_rollup *sql_rollup_new(const struct probe_table_info *base, const char *group_cols,
                                    const char *value_cols, struct probe_column **cols, int *ncols,
                                    struct pb_err *err);
void sql_rollup_add(struct probe_rollup *r, double ts, const struct probe_value *row);
void sql_rollup_scan(struct sqlite3 *db, const char *base, int ncols, long long upto, int sign,
                     struct probe_rollup *const *rs, int nr);
void sql_rollup_sync(struct sqlite3 *db, struct probe_rollup *r,
                     const struct probe_table_info *base, const struct probe_table_info *self);
/* The open database (task thread), opening it if needed; NULL with err on failure. */
struct sqlite3 *sql_store_db(struct pb_err *err);
double sql_now(void);
/* Set by a live table's fill function failing (task thread; store.c resets it per query), so
 * its message, which names the table, is passed on without the "SQL error: " prefix. */
extern int probe_vtab_failed;
/* A fill function's one-line note for the query's answer ("no NVIDIA GPU or driver..."), when
 * its table is empty for a reason the user should see; cleared before each query. */
extern char probe_vtab_note[200];

#endif
