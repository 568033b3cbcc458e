/* SPDX-License-Identifier: MIT */
/* The original Probing's SQL names over our own data (docs/migrating.md): the SQL functions
 * its examples use (hour(), date_trunc(); now() is store.c's), information_schema.tables,
 * .columns and .df_settings over our catalogue and settings, and views named as its tables
 * (memory_usage, training_logs, memory_allocations, profiling_data, gpu_metrics, comm_metrics)
 * over the tables we fill. The views are TEMP views: only those may read several schemas.
 * SQLite has no INTERVAL; a query using one gets a hint with the SQLite way to write it, never a
 * rewrite. Task thread only, no GIL. */
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/settings.h"
#include "vtab.h"

/* ---- hour(), date_trunc() ---- */

/* Seconds since the epoch from a ts value (a number) or an ISO text ('2024-05-01 12:00:00',
 * 'T' or ' ' between date and time, UTC). Returns 0 and *out, or -1 (NULL result). */
static int epoch_of(sqlite3_value *v, double *out)
{
    int t = sqlite3_value_numeric_type(v);
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
        *out = sqlite3_value_double(v);
        return 0;
    }
    const char *s = (const char *)sqlite3_value_text(v);
    struct tm tm = {0};
    int Y, M, D, h = 0, m = 0;
    double sec = 0;
    if (!s || sscanf(s, "%4d-%2d-%2d%*1[ T]%2d:%2d:%lf", &Y, &M, &D, &h, &m, &sec) < 3)
        return -1;
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    *out = (double)timegm(&tm) + sec;
    return 0;
}

/* hour(ts): the hour of the day, 0-23 (UTC), of epoch seconds or an ISO time. */
static void fn_hour(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    double t;
    if (epoch_of(argv[0], &t) < 0)
        return;
    time_t s = (time_t)t;
    struct tm tm;
    if (gmtime_r(&s, &tm))
        sqlite3_result_int(cx, tm.tm_hour);
}

/* date_trunc(unit, ts): ts (epoch seconds or ISO time) cut down to the start of its second,
 * minute, hour, day, week (Monday), month or year, UTC, as epoch seconds (the unit of ts). */
static void fn_date_trunc(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *u = (const char *)sqlite3_value_text(argv[0]);
    double t;
    if (!u || epoch_of(argv[1], &t) < 0)
        return;
    time_t s = (time_t)t;
    if ((double)s > t)
        s--; /* floor for times before 1970 */
    struct tm tm;
    if (!gmtime_r(&s, &tm))
        return;
    size_t n = strlen(u);
    if (n > 1 && (u[n - 1] == 's' || u[n - 1] == 'S'))
        n--; /* 'minutes' as 'minute' */
    static const char *const units[] = {"second", "minute", "hour", "day", "week", "month", "year"};
    int k = -1;
    for (int i = 0; i < 7; i++)
        if (strlen(units[i]) == n && strncasecmp(u, units[i], n) == 0)
            k = i;
    if (k < 0) {
        sqlite3_result_error(cx,
                             "date_trunc(unit, ts): unit must be second, minute, hour, day, "
                             "week, month or year",
                             -1);
        return;
    }
    if (k >= 1)
        tm.tm_sec = 0;
    if (k >= 2)
        tm.tm_min = 0;
    if (k >= 3)
        tm.tm_hour = 0;
    if (k == 4)
        tm.tm_mday -= (tm.tm_wday + 6) % 7;
    if (k >= 5)
        tm.tm_mday = 1;
    if (k == 6)
        tm.tm_mon = 0;
    sqlite3_result_int64(cx, (sqlite3_int64)timegm(&tm));
}

/* ---- the original's table names, as views ---- */

static const struct probe_column memory_usage_cols[] = {
    {"timestamp", "REAL", "sample time, epoch seconds (system.process_history.ts)"},
    {"memory_mb", "REAL", "resident set size, MiB"},
    {"rss", "INTEGER", "resident set size, bytes"},
    {"vms", "INTEGER", "virtual memory size, bytes"},
};
static const struct probe_column training_logs_cols[] = {
    {"timestamp", "REAL", "the step's end, epoch seconds"},
    {"epoch", "INTEGER", "NULL: probing does not know the job's epochs (group by step ranges)"},
    {"step", "INTEGER", "step number"},
    {"loss", "REAL", "the loss of a traced step, NULL otherwise"},
    {"duration_ms", "REAL", "the step's duration, ms"},
    {"rank", "INTEGER", "torch.distributed rank, NULL when not set"},
};
static const struct probe_column memory_allocations_cols[] = {
    {"timestamp", "REAL", "the query's time (tracemalloc's figures are live)"},
    {"function_name", "TEXT", "allocation site, file:line (tracemalloc groups by line)"},
    {"allocated_bytes", "INTEGER", "bytes allocated there and still alive"},
    {"count", "INTEGER", "live blocks allocated there"},
};
static const struct probe_column profiling_data_cols[] = {
    {"timestamp", "REAL", "when the step's rows were written, epoch seconds"},
    {"operation_name", "TEXT", "torch module (qualified name)"},
    {"phase", "TEXT", "forward or backward"},
    {"duration_ms", "REAL", "the module call's duration, ms"},
    {"step", "INTEGER", "step number"},
    {"rank", "INTEGER", "torch.distributed rank, NULL when not set"},
};
static const struct probe_column gpu_metrics_cols[] = {
    {"timestamp", "REAL", "sample time, epoch seconds"},
    {"gpu_id", "INTEGER", "device index"},
    {"gpu_util", "REAL", "utilisation, percent"},
    {"memory_used_mb", "REAL", "device memory used, MiB"},
    {"memory_total_mb", "REAL", "device memory, MiB"},
};
static const struct probe_column comm_metrics_cols[] = {
    {"timestamp", "REAL", "when the call ended, epoch seconds (torch.collectives.end_time)"},
    {"src_rank", "INTEGER",
     "sending rank: the peer for recv/irecv, the root for broadcast "
     "and scatter, else this rank"},
    {"dst_rank", "INTEGER",
     "receiving rank: the peer for send/isend, this rank for recv/irecv, "
     "the root for reduce and gather, NULL for the others (all the group)"},
    {"op", "TEXT", "collective or send/recv (torch.collectives.op)"},
    {"bytes", "INTEGER", "bytes of the input tensors"},
    {"latency_ms", "REAL", "duration, ms"},
};

struct view {
    struct probe_table_info info;
    const char *select;
};

#define COLS(a) a, (int)(sizeof a / sizeof a[0])
static const struct view views[] = {
    {{"memory_usage", "view",
      "the original Probing's name: this process's memory over time, "
      "from system.process_history (every history.interval_s seconds)",
      COLS(memory_usage_cols)},
     "SELECT ts AS timestamp, rss / 1048576.0 AS memory_mb, rss, vms FROM system.process_history"},
    {{"training_logs", "view",
      "the original Probing's name: one row per training step, from "
      "python.torch_steps (rows while 'probing -p PID perf --torch' runs)",
      COLS(training_logs_cols)},
     "SELECT ts AS timestamp, CAST(NULL AS INTEGER) AS epoch, step, loss, duration * 1000.0 AS "
     "duration_ms, rank FROM python.torch_steps"},
    {{"memory_allocations", "view",
      "the original Probing's name: live Python allocations by "
      "site, from python.tracemalloc (empty until 'probing -p PID memory --trace start')",
      COLS(memory_allocations_cols)},
     "SELECT now() AS timestamp, file || ':' || lineno AS function_name, size AS allocated_bytes, "
     "count FROM python.tracemalloc"},
    {{"profiling_data", "view",
      "the original Probing's name: torch module calls of traced "
      "steps, from python.torch_trace (rows while 'probing -p PID perf --torch' runs)",
      COLS(profiling_data_cols)},
     "SELECT ts AS timestamp, module AS operation_name, CASE stage WHEN 'forward_post' THEN "
     "'forward' ELSE 'backward' END AS phase, duration * 1000.0 AS duration_ms, step, rank FROM "
     "python.torch_trace WHERE stage IN ('forward_post', 'backward_post')"},
    {{"gpu_metrics", "view",
      "the original Probing's name: every GPU every history.interval_s "
      "seconds, from system.gpu_history (NVML; empty without an NVIDIA GPU and driver); CUDA "
      "memory per module is in python.torch_trace and 'probing -p PID memory'",
      COLS(gpu_metrics_cols)},
     "SELECT ts AS timestamp, gpu AS gpu_id, CAST(util_gpu AS REAL) AS gpu_util, mem_used / "
     "1048576.0 AS memory_used_mb, mem_total / 1048576.0 AS memory_total_mb FROM "
     "system.gpu_history"},
    {{"comm_metrics", "view",
      "the original Probing's name: one row per completed "
      "torch.distributed call, from torch.collectives (rows while 'probing -p PID perf --comm' "
      "or 'perf --torch' runs)",
      COLS(comm_metrics_cols)},
     "SELECT end_time AS timestamp, CASE WHEN op IN ('recv', 'irecv', 'broadcast', 'scatter') "
     "THEN peer ELSE rank END AS src_rank, CASE WHEN op IN ('send', 'isend', 'reduce', 'gather') "
     "THEN peer WHEN op IN ('recv', 'irecv') THEN rank END AS dst_rank, op, bytes, duration_ms "
     "AS latency_ms FROM torch.collectives WHERE end_time IS NOT NULL"},
};
#define NVIEWS ((int)(sizeof views / sizeof views[0]))

int sql_compat_count(void)
{
    return NVIEWS;
}

const struct probe_table_info *sql_compat_info(int i)
{
    return i >= 0 && i < NVIEWS ? &views[i].info : NULL;
}

int sql_compat_register(struct sqlite3 *db, struct pb_err *err)
{
    int f = SQLITE_UTF8 | SQLITE_INNOCUOUS | SQLITE_DETERMINISTIC;
    int rc = sqlite3_create_function(db, "hour", 1, f, NULL, fn_hour, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "date_trunc", 2, f, NULL, fn_date_trunc, NULL, NULL);
    /* The views read python.torch_steps/torch_trace: declare them now so that the views
     * answer with no rows, not "no such table", before perf --torch first runs. */
    struct pb_err terr = {0};
    if (rc == SQLITE_OK && sql_torch_tables_define(&terr) < 0)
        PB_LOG(PB_LOG_WARN, "training_logs and profiling_data will fail: %s", terr.msg);
    if (rc == SQLITE_OK && sql_gpu_tables_define(&terr) < 0)
        PB_LOG(PB_LOG_WARN, "gpu_metrics will fail: %s", terr.msg);
    /* TEMP views live in the temp schema: keep it in memory, never in a file. */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
    /* Declared as CREATE TEMP VIEW writes them (sql_schema_declare): parsed when first used. */
    sqlite3_str *v = sqlite3_str_new(db);
    for (int i = 0; rc == SQLITE_OK && i < NVIEWS; i++) {
        char *sql =
            sqlite3_mprintf("CREATE VIEW \"%w\" AS %s", views[i].info.name, views[i].select);
        if (!sql)
            rc = SQLITE_NOMEM;
        sqlite3_str_appendf(v, "%s('view', %Q, %Q, 0, %Q)", i ? ", " : "", views[i].info.name,
                            views[i].info.name, sql);
        sqlite3_free(sql);
    }
    char *values = sqlite3_str_finish(v);
    if (rc == SQLITE_OK)
        rc = values ? sql_schema_declare(db, "temp", values) : SQLITE_NOMEM;
    sqlite3_free(values);
    if (rc != SQLITE_OK)
        return pb_err_set(err, PB_EUNKNOWN, "creating the compatibility views: %s",
                          sqlite3_errmsg(db));
    return 0;
}

/* ---- information_schema ---- */

const struct probe_column vtab_is_tables_cols[6] = {
    {"table_catalog", "TEXT", "'probing'"},
    {"table_schema", "TEXT",
     "python, system, probing, perf, torch, information_schema; temp for "
     "the original Probing's names (memory_usage...)"},
    {"table_name", "TEXT", "table name within its schema"},
    {"table_type", "TEXT", "'BASE TABLE' or 'VIEW'"},
    {"kind", "TEXT", "'live', 'history' or 'view' (as in probing.tables)"},
    {"description", "TEXT", "what the table holds"},
};
const struct probe_column vtab_is_columns_cols[8] = {
    {"table_catalog", "TEXT", "'probing'"},
    {"table_schema", "TEXT", "schema of the table"},
    {"table_name", "TEXT", "table name within its schema"},
    {"column_name", "TEXT", "column"},
    {"ordinal_position", "INTEGER", "1 for the first column"},
    {"data_type", "TEXT", "INTEGER, REAL or TEXT"},
    {"is_nullable", "TEXT", "'YES'"},
    {"description", "TEXT", "what the column holds"},
};
const struct probe_column vtab_is_settings_cols[3] = {
    {"name", "TEXT", "'probing.' and the setting key (probing config accepts both)"},
    {"value", "TEXT", "current value"},
    {"description", "TEXT", "what it does"},
};

/* Every table in catalogue order: live, history (with ts), views. NULL past the end. */
static const struct probe_table_info *table_at(int i, int *with_ts)
{
    *with_ts = 0;
    if (i < sql_vtab_count())
        return sql_vtab_info(i);
    i -= sql_vtab_count();
    if (i < sql_history_count()) {
        *with_ts = 1;
        return sql_history_info(i);
    }
    return sql_compat_info(i - sql_history_count());
}

/* Split "schema.table" (no dot: a TEMP view). */
static void split(const char *name, char *schema, size_t n, const char **table)
{
    const char *dot = strchr(name, '.');
    if (!dot) {
        pb_strlcpy(schema, "temp", n);
        *table = name;
        return;
    }
    size_t k = (size_t)(dot - name) < n ? (size_t)(dot - name) : n - 1;
    memcpy(schema, name, k);
    schema[k] = '\0';
    *table = dot + 1;
}

int sql_vtab_is_tables_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    const struct probe_table_info *t;
    int ts;
    for (int i = 0; !core_rows_error(r) && (t = table_at(i, &ts)); i++) {
        char schema[64];
        const char *name;
        split(t->name, schema, sizeof schema, &name);
        core_rows_add_text(r, "probing");
        core_rows_add_text(r, schema);
        core_rows_add_text(r, name);
        core_rows_add_text(r, strcmp(t->kind, "view") ? "BASE TABLE" : "VIEW");
        core_rows_add_text(r, t->kind);
        core_rows_add_text(r, t->description);
    }
    return core_rows_error(r);
}

int sql_vtab_is_columns_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    static const struct probe_column tscol = {"ts", "REAL", "sample time, epoch seconds"};
    const struct probe_table_info *t;
    int ts;
    for (int i = 0; !core_rows_error(r) && (t = table_at(i, &ts)); i++) {
        char schema[64];
        const char *name;
        split(t->name, schema, sizeof schema, &name);
        for (int c = -ts; !core_rows_error(r) && c < t->ncols; c++) {
            const struct probe_column *col = c < 0 ? &tscol : &t->cols[c];
            core_rows_add_text(r, "probing");
            core_rows_add_text(r, schema);
            core_rows_add_text(r, name);
            core_rows_add_text(r, col->name);
            core_rows_add_int(r, c + ts + 1);
            core_rows_add_text(r, col->type);
            core_rows_add_text(r, "YES");
            core_rows_add_text(r, col->description);
        }
    }
    return core_rows_error(r);
}

int sql_vtab_is_settings_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    struct probe_setting_view v;
    for (int i = 0; !core_rows_error(r) && core_setting_view_get(i, &v) == 0; i++) {
        char name[64];
        snprintf(name, sizeof name, "probing.%s", v.name);
        core_rows_add_text(r, name);
        core_rows_add_text(r, v.value);
        core_rows_add_text(r, v.description);
    }
    return core_rows_error(r);
}

/* ---- hints for SQL the original accepted ---- */

/* Seconds in "5 min", "1 hour", "30 seconds", "2 days"; -1 when not understood. */
static double interval_seconds(const char *s, size_t n)
{
    char buf[64];
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    double v;
    char unit[32];
    if (sscanf(buf, " %lf %31[a-zA-Z] ", &v, unit) != 2)
        return -1;
    static const struct {
        const char *name;
        double s;
    } units[] = {{"s", 1},        {"sec", 1},       {"secs", 1},      {"second", 1},
                 {"seconds", 1},  {"m", 60},        {"min", 60},      {"mins", 60},
                 {"minute", 60},  {"minutes", 60},  {"h", 3600},      {"hour", 3600},
                 {"hours", 3600}, {"d", 86400},     {"day", 86400},   {"days", 86400},
                 {"w", 604800},   {"week", 604800}, {"weeks", 604800}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(unit, units[i].name) == 0)
            return v * units[i].s;
    return -1;
}

int sql_compat_hint(const char *sql, struct pb_err *err)
{
    if (strcasestr(sql, "within group"))
        return pb_err_set(err, PB_EBADARG,
                          "SQL error: SQLite has no WITHIN GROUP: write "
                          "percentile(x, 50) for percentile_cont(0.5) WITHIN GROUP (ORDER BY x)");
    for (const char *p = sql; (p = strcasestr(p, "interval")); p += 8) {
        if (p > sql && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        const char *q = p + 8;
        while (*q == ' ' || *q == '\t' || *q == '\n')
            q++;
        if (*q != '\'')
            continue;
        const char *e = strchr(q + 1, '\'');
        if (!e)
            continue;
        double secs = interval_seconds(q + 1, (size_t)(e - q - 1));
        int len = (int)(e + 1 - p);
        if (secs < 0)
            return pb_err_set(err, PB_EBADARG,
                              "SQL error: SQLite has no INTERVAL: write %.*s as "
                              "a number of seconds (ts columns and now() are epoch seconds: "
                              "now() - 300 is five minutes ago)",
                              len, p);
        return pb_err_set(err, PB_EBADARG,
                          "SQL error: SQLite has no INTERVAL: write %g for "
                          "%.*s (ts columns and now() are epoch seconds: now() - %g)",
                          secs, len, p, secs);
    }
    return 0;
}
