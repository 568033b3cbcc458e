/* SPDX-License-Identifier: MIT */
/* The SQL engine behind probing/query: opens the in-memory database on first use (task
 * thread), ATTACHes the schemas, registers helper functions and the live tables, and runs
 * client statements read-only under the limits from settings (rows, bytes, time, memory). The
 * authorizer allows reads only; sqlite3_stmt_readonly double-checks. SQLite is linked into the
 * probe statically (Makefile), so its heap limit bounds our instance only, never a libsqlite3
 * the target uses itself. docs/tables.md lists the tables, helpers and limits. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/settings.h"
#include "store.h"

static sqlite3 *db;
static atomic_int interrupted;
static pthread_mutex_t db_mu = PTHREAD_MUTEX_INITIALIZER; /* guards db for interrupt */

static const char *const schemas[] = {"python", "system", "probing",
                                      "perf",   "torch",  "information_schema"};

double sql_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The same clock at its tick (a few ms): cheap enough for the progress handler's every call. */
static double coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Smallest SQLITE_LIMIT_LENGTH whatever query.max_bytes says: live tables hold texts (stacks,
 * locals) that must not fail for being a few KiB long. */
#define MIN_VALUE_BYTES (1 << 20)

/* The limits from settings, applied before each client statement (they change live). Client
 * statements and history share the connection. The heap limit is SQLite's process-wide one, of
 * the probe's own SQLite instance. */
static void apply_limits(sqlite3 *d, long long max_bytes)
{
    long long len = max_bytes < MIN_VALUE_BYTES ? MIN_VALUE_BYTES : max_bytes;
    sqlite3_limit(d, SQLITE_LIMIT_LENGTH, (int)len);
    sqlite3_hard_heap_limit64(core_setting_int("store.max_memory_bytes"));
}

/* ---- SQL helpers (documented in docs/tables.md) ---- */

/* now(): the current time in epoch seconds (REAL). */
static void fn_now(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    (void)argv;
    sqlite3_result_double(cx, sql_now());
}

/* human_bytes(n): 1536 -> '1.5 KiB'. NULL stays NULL. */
static void fn_human_bytes(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    double v = sqlite3_value_double(argv[0]);
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while ((v >= 1024 || v <= -1024) && u < 5) {
        v /= 1024;
        u++;
    }
    char buf[48];
    if (u == 0)
        snprintf(buf, sizeof buf, "%.0f B", v);
    else
        snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    sqlite3_result_text(cx, buf, -1, SQLITE_TRANSIENT);
}

/* iso_time(ts): epoch seconds -> '2024-05-01T12:00:00.123Z' (UTC, milliseconds). */
static void fn_iso_time(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    double t = sqlite3_value_double(argv[0]);
    time_t s = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&s, &tm))
        return;
    char buf[48];
    int ms = (int)((t - (double)s) * 1000);
    if (ms < 0)
        ms = 0;
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    sqlite3_result_text(cx, buf, -1, SQLITE_TRANSIENT);
}

/* percentile(x, p): aggregate, the p-th percentile (0-100) of x by linear interpolation. */
struct pct {
    double *v;
    size_t n, cap;
    double p;
    int oom;
};

static void pct_step(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    struct pct *a = sqlite3_aggregate_context(cx, sizeof *a);
    if (!a || a->oom)
        return;
    a->p = sqlite3_value_double(argv[1]);
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        double *v = sqlite3_realloc64(a->v, cap * sizeof *v);
        if (!v) {
            a->oom = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = sqlite3_value_double(argv[0]);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void pct_final(sqlite3_context *cx)
{
    struct pct *a = sqlite3_aggregate_context(cx, 0);
    if (!a || a->n == 0) {
        if (a)
            sqlite3_free(a->v);
        return;
    }
    if (a->oom) {
        sqlite3_free(a->v);
        sqlite3_result_error_nomem(cx);
        return;
    }
    if (a->p < 0 || a->p > 100) {
        sqlite3_free(a->v);
        sqlite3_result_error(cx, "percentile(x, p): p must be between 0 and 100", -1);
        return;
    }
    qsort(a->v, a->n, sizeof *a->v, cmp_double);
    double pos = a->p / 100.0 * (double)(a->n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    double r = lo + 1 < a->n ? a->v[lo] + frac * (a->v[lo + 1] - a->v[lo]) : a->v[lo];
    sqlite3_free(a->v);
    sqlite3_result_double(cx, r);
}

static int register_functions(sqlite3 *d)
{
    int f = SQLITE_UTF8 | SQLITE_INNOCUOUS;
    int rc = sqlite3_create_function(d, "now", 0, SQLITE_UTF8, NULL, fn_now, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(d, "human_bytes", 1, f | SQLITE_DETERMINISTIC, NULL,
                                     fn_human_bytes, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(d, "iso_time", 1, f | SQLITE_DETERMINISTIC, NULL, fn_iso_time,
                                     NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(d, "percentile", 2, f, NULL, NULL, pct_step, pct_final);
    return rc;
}

/* ---- opening ---- */

int sql_schema_declare(struct sqlite3 *d, const char *schema, const char *values)
{
    int on = 0, rc = sqlite3_db_config(d, SQLITE_DBCONFIG_WRITABLE_SCHEMA, 1, &on);
    if (rc == SQLITE_OK && on) {
        char *sql = sqlite3_mprintf("INSERT INTO \"%w\".sqlite_master VALUES %s", schema, values);
        rc = sql ? sqlite3_exec(d, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    } else if (rc == SQLITE_OK) {
        rc = SQLITE_ERROR;
    }
    sqlite3_db_config(d, SQLITE_DBCONFIG_WRITABLE_SCHEMA, 0, NULL);
    /* A new cookie: SQLite reads the catalogue again before the next statement (on SQLite
     * 3.34, the release's, as on later ones; writable_schema=RESET is 3.38+). */
    sqlite3_stmt *st = NULL;
    char *sql = rc == SQLITE_OK ? sqlite3_mprintf("PRAGMA \"%w\".schema_version", schema) : NULL;
    if (rc == SQLITE_OK)
        rc = sql ? sqlite3_prepare_v2(d, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK && sqlite3_step(st) != SQLITE_ROW)
        rc = SQLITE_ERROR;
    long long cookie = rc == SQLITE_OK ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc == SQLITE_OK) {
        sql = sqlite3_mprintf("PRAGMA \"%w\".schema_version = %lld", schema, cookie + 1);
        rc = sql ? sqlite3_exec(d, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
    }
    return rc;
}

struct sqlite3 *sql_store_db(struct pb_err *err)
{
    if (db)
        return db;
    sqlite3 *d = NULL;
    int rc = sqlite3_open_v2(":memory:", &d, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        pb_err_set(err, PB_EUNKNOWN, "sqlite3_open: %s", d ? sqlite3_errmsg(d) : "out of memory");
        sqlite3_close(d);
        return NULL;
    }
    char sql[128];
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0] && rc == SQLITE_OK; i++) {
        snprintf(sql, sizeof sql, "ATTACH ':memory:' AS %s", schemas[i]);
        rc = sqlite3_exec(d, sql, NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = register_functions(d);
    /* Sorts and temporary tables stay in memory (under the heap limit), never in temporary
     * files on the target's disk. */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(d, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        pb_err_set(err, PB_EUNKNOWN, "opening the store: %s", sqlite3_errmsg(d));
        sqlite3_close(d);
        return NULL;
    }
    if (sql_vtab_register(d, err) < 0 || sql_compat_register(d, err) < 0) {
        sqlite3_close(d);
        return NULL;
    }
    /* Client statements cannot reach the file system or load code. */
    sqlite3_db_config(d, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    sqlite3_db_config(d, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_limit(d, SQLITE_LIMIT_ATTACHED, (int)(sizeof schemas / sizeof schemas[0]));
    apply_limits(d, core_setting_int("query.max_bytes"));
    pthread_mutex_lock(&db_mu);
    db = d;
    pthread_mutex_unlock(&db_mu);
    return db;
}

/* ---- read-only client statements ---- */

struct auth {
    int denied;    /* first denied action code, 0 if none */
    char what[64]; /* its object, for the message */
};

static const char *const readonly_pragmas[] = {
    "collation_list", "compile_options", "database_list", "foreign_key_list", "function_list",
    "index_info",     "index_list",      "index_xinfo",   "module_list",      "pragma_list",
    "table_info",     "table_list",      "table_xinfo",
};

static int authorize(void *arg, int action, const char *a, const char *b, const char *dbname,
                     const char *trigger)
{
    (void)dbname;
    (void)trigger;
    struct auth *au = arg;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE: return SQLITE_OK;
    case SQLITE_PRAGMA:
        /* Only the listed pragmas, and only to read (no "PRAGMA x = v"; table_info(t) passes
         * t as b, which is fine for these). */
        for (size_t i = 0; i < sizeof readonly_pragmas / sizeof readonly_pragmas[0]; i++)
            if (a && strcmp(a, readonly_pragmas[i]) == 0)
                return SQLITE_OK;
        break;
    default: break;
    }
    /* DDL writes sqlite_master before SQLite asks about the DDL itself: let that pass so
     * the DDL is what gets denied and named. Safe: every DDL code is denied, direct writes to
     * sqlite_master fail under SQLITE_DBCONFIG_DEFENSIVE, and sqlite3_stmt_readonly is
     * checked after preparing. */
    if ((action == SQLITE_INSERT || action == SQLITE_UPDATE || action == SQLITE_DELETE) && a &&
        (strcmp(a, "sqlite_master") == 0 || strcmp(a, "sqlite_temp_master") == 0))
        return SQLITE_OK;
    if (!au->denied) {
        au->denied = action;
        pb_strlcpy(au->what,
                   action == SQLITE_PRAGMA ? (a ? a : "")
                                           : (a   ? a
                                              : b ? b
                                                  : ""),
                   sizeof au->what);
    }
    return SQLITE_DENY;
}

static const char *action_name(int action)
{
    switch (action) {
    case SQLITE_INSERT: return "INSERT";
    case SQLITE_UPDATE: return "UPDATE";
    case SQLITE_DELETE: return "DELETE";
    case SQLITE_ATTACH: return "ATTACH";
    case SQLITE_DETACH: return "DETACH";
    case SQLITE_PRAGMA: return "PRAGMA";
    case SQLITE_TRANSACTION: return "TRANSACTION";
    case SQLITE_SAVEPOINT: return "SAVEPOINT";
    case SQLITE_ANALYZE: return "ANALYZE";
    case SQLITE_REINDEX: return "REINDEX";
    case SQLITE_ALTER_TABLE: return "ALTER TABLE";
    case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
    default: break;
    }
    static const char *const ddl[] = {
        [SQLITE_CREATE_INDEX] = "CREATE INDEX",
        [SQLITE_CREATE_TABLE] = "CREATE TABLE",
        [SQLITE_CREATE_TEMP_INDEX] = "CREATE INDEX",
        [SQLITE_CREATE_TEMP_TABLE] = "CREATE TABLE",
        [SQLITE_CREATE_TEMP_TRIGGER] = "CREATE TRIGGER",
        [SQLITE_CREATE_TEMP_VIEW] = "CREATE VIEW",
        [SQLITE_CREATE_TRIGGER] = "CREATE TRIGGER",
        [SQLITE_CREATE_VIEW] = "CREATE VIEW",
        [SQLITE_DROP_INDEX] = "DROP INDEX",
        [SQLITE_DROP_TABLE] = "DROP TABLE",
        [SQLITE_DROP_TEMP_INDEX] = "DROP INDEX",
        [SQLITE_DROP_TEMP_TABLE] = "DROP TABLE",
        [SQLITE_DROP_TEMP_TRIGGER] = "DROP TRIGGER",
        [SQLITE_DROP_TEMP_VIEW] = "DROP VIEW",
        [SQLITE_DROP_TRIGGER] = "DROP TRIGGER",
        [SQLITE_DROP_VIEW] = "DROP VIEW",
    };
    if (action > 0 && action <= SQLITE_DROP_VIEW && ddl[action])
        return ddl[action];
    return "this statement";
}

#define PROGRESS_OPS 100
#define READONLY_HINT "the database is read-only; change settings with 'probing config KEY=VALUE'"

struct progress {
    double deadline;
    int timed_out;
};

static int on_progress(void *arg)
{
    struct progress *p = arg;
    if (atomic_load(&interrupted))
        return 1;
    if (coarse_ms() > p->deadline) {
        p->timed_out = 1;
        return 1;
    }
    return 0;
}

void sql_store_interrupt(void)
{
    atomic_store(&interrupted, 1);
    pthread_mutex_lock(&db_mu);
    if (db)
        sqlite3_interrupt(db);
    pthread_mutex_unlock(&db_mu);
}

/* err for a failed prepare: SQLite's message, with the column of the error when it knows it. */
static int prepare_error(sqlite3 *d, const char *sql, int rc, const struct auth *au,
                         struct pb_err *err)
{
    if (rc == SQLITE_AUTH && au->denied)
        return pb_err_set(err, PB_EBADARG, "%s%s%s is not allowed: " READONLY_HINT,
                          action_name(au->denied), au->what[0] ? " " : "", au->what);
    const char *msg = sqlite3_errmsg(d);
    if (strstr(msg, "may not be modified") || strstr(msg, "readonly"))
        return pb_err_set(err, PB_EBADARG, "SQL error: %s: " READONLY_HINT, msg);
    int hint = sql_compat_hint(sql, err);
    if (hint)
        return hint;
#if SQLITE_VERSION_NUMBER >= 3038000
    int off = sqlite3_error_offset(d);
#else
    /* Older SQLite (3.34: Debian 11, the release's build root) cannot say where the error is. */
    int off = -1;
#endif
    if (off >= 0 && (size_t)off <= strlen(sql)) {
        int col = 1, line = 1;
        for (int i = 0; i < off; i++) {
            if (sql[i] == '\n') {
                line++;
                col = 1;
            } else if (((unsigned char)sql[i] & 0xC0) != 0x80) {
                col++;
            }
        }
        if (line > 1)
            return pb_err_set(err, PB_EBADARG, "SQL error: %s (line %d, column %d)",
                              sqlite3_errmsg(d), line, col);
        return pb_err_set(err, PB_EBADARG, "SQL error: %s (at column %d)", sqlite3_errmsg(d), col);
    }
    return pb_err_set(err, PB_EBADARG, "SQL error: %s", sqlite3_errmsg(d));
}

static int only_space_or_comments(const char *s)
{
    while (*s) {
        if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == ';')
            s++;
        else if (s[0] == '-' && s[1] == '-')
            s += strcspn(s, "\n");
        else if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            if (!e)
                return 1;
            s = e + 2;
        } else
            return 0;
    }
    return 1;
}

/* Copy column c of the current row into a cell; adds its text size to *bytes. Returns 0, the
 * rows' error (-ENOMEM), or 1, adding nothing, when the cell would take *bytes past max (a blob
 * is not even converted). */
static int take_cell(struct probe_rows *r, sqlite3_stmt *st, int c, size_t *bytes, size_t max)
{
    int type = sqlite3_column_type(st, c);
    size_t size = type == SQLITE_INTEGER || type == SQLITE_FLOAT ? 8
                  : type == SQLITE_NULL                          ? 4
                  : type == SQLITE_BLOB ? (size_t)sqlite3_column_bytes(st, c) * 2
                                        : (size_t)sqlite3_column_bytes(st, c);
    if (*bytes + size > max)
        return 1;
    *bytes += size;
    switch (type) {
    case SQLITE_INTEGER: core_rows_add_int(r, sqlite3_column_int64(st, c)); break;
    case SQLITE_FLOAT: core_rows_add_real(r, sqlite3_column_double(st, c)); break;
    case SQLITE_NULL: core_rows_add_null(r); break;
    case SQLITE_BLOB: {
        const unsigned char *b = sqlite3_column_blob(st, c);
        size_t n = size / 2;
        char *hex = malloc(size + 1);
        if (!hex)
            return -ENOMEM;
        for (size_t i = 0; i < n; i++)
            snprintf(hex + 2 * i, 3, "%02x", b[i]);
        hex[2 * n] = '\0';
        core_rows_add_text(r, hex);
        free(hex);
        break;
    }
    default: {
        const char *t = (const char *)sqlite3_column_text(st, c);
        core_rows_add_text(r, t ? t : "");
    }
    }
    return core_rows_error(r);
}

int sql_store_query(const char *sql, struct probe_rows *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3 *d = sql_store_db(err);
    if (!d)
        return err && err->code ? err->code : PB_EUNKNOWN;
    sql_history_flush();
    long long max_rows = core_setting_int("query.max_rows");
    long long max_bytes = core_setting_int("query.max_bytes");
    long long timeout_ms = core_setting_int("query.timeout_ms");
    double t0 = mono_ms();
    struct auth au = {0};
    struct progress pg = {t0 + (double)timeout_ms, 0};
    sqlite3_stmt *st = NULL;
    const char *tail = NULL;
    int rc;

    atomic_store(&interrupted, 0);
    probe_vtab_failed = 0;
    probe_vtab_note[0] = '\0';
    apply_limits(d, max_bytes);
    sqlite3_set_authorizer(d, authorize, &au);
    int src = sqlite3_prepare_v2(d, sql, -1, &st, &tail);
    sqlite3_set_authorizer(d, NULL, NULL);
    if (src != SQLITE_OK) {
        rc = prepare_error(d, sql, src, &au, err);
        goto out;
    }
    if (!st) {
        rc = pb_err_set(err, PB_EBADARG, "SQL error: empty query");
        goto out;
    }
    if (tail && !only_space_or_comments(tail)) {
        rc = pb_err_set(err, PB_EBADARG,
                        "SQL error: one statement per query (more text at "
                        "column %d)",
                        (int)(tail - sql) + 1);
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        rc = pb_err_set(err, PB_EBADARG, "this statement is not allowed: " READONLY_HINT);
        goto out;
    }
    out->ncols = sqlite3_column_count(st);
    out->cols = calloc((size_t)(out->ncols ? out->ncols : 1), sizeof *out->cols);
    if (!out->cols) {
        rc = pb_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int c = 0; c < out->ncols; c++) {
        const char *name = sqlite3_column_name(st, c);
        out->cols[c] = strdup(name ? name : "?");
        if (!out->cols[c]) {
            rc = pb_err_set(err, -ENOMEM, "out of memory");
            goto out;
        }
    }
    /* Every PROGRESS_OPS virtual machine steps: one step may be a whole randomblob() of up to
     * SQLITE_LIMIT_LENGTH bytes, so a query overruns its time by at most that many of them. */
    sqlite3_progress_handler(d, PROGRESS_OPS, on_progress, &pg);
    size_t bytes = 0;
    rc = 0;
    for (;;) {
        src = sqlite3_step(st);
        if (src == SQLITE_DONE)
            break;
        if (src != SQLITE_ROW) {
            if (src == SQLITE_INTERRUPT && pg.timed_out)
                rc = pb_err_set(err, PB_ETIMEDOUT,
                                "query interrupted after %lld ms "
                                "(query.timeout_ms)",
                                timeout_ms);
            else if (src == SQLITE_INTERRUPT)
                rc = pb_err_set(err, PB_ETIMEDOUT, "query interrupted");
            else if (src == SQLITE_NOMEM)
                rc =
                    pb_err_set(err, PB_EBADARG,
                               "SQL error: the query needs more memory than "
                               "the probe's SQLite may hold (store.max_memory_bytes = %lld bytes): "
                               "narrow it",
                               core_setting_int("store.max_memory_bytes"));
            else if (src == SQLITE_TOOBIG)
                rc = pb_err_set(err, PB_EBADARG,
                                "SQL error: a string or blob over %d bytes "
                                "(query.max_bytes, at least %d)",
                                sqlite3_limit(d, SQLITE_LIMIT_LENGTH, -1), MIN_VALUE_BYTES);
            else if (probe_vtab_failed)
                rc = pb_err_set(err, PB_EUNKNOWN, "%s", sqlite3_errmsg(d));
            else
                rc = pb_err_set(err, PB_EBADARG, "SQL error: %s", sqlite3_errmsg(d));
            break;
        }
        if ((long long)out->nrows >= max_rows) {
            out->truncated = 1;
            snprintf(out->note, sizeof out->note, "result truncated to %lld rows (query.max_rows)",
                     max_rows);
            break;
        }
        int taken = 0;
        while (taken < out->ncols && rc == 0)
            if ((rc = take_cell(out, st, taken, &bytes, (size_t)max_bytes)) == 0)
                taken++;
        if (rc < 0) {
            pb_err_set(err, rc, "out of memory");
            break;
        }
        if (rc == 1) {
            /* Drop the row that would cross the line. */
            rc = 0;
            while (taken-- > 0)
                free(out->cells[--out->ncells].s);
            out->nrows = out->ncells / (size_t)out->ncols;
            out->truncated = 1;
            snprintf(out->note, sizeof out->note,
                     "result truncated to %zu rows: over %lld bytes (query.max_bytes)", out->nrows,
                     max_bytes);
            break;
        }
    }
    sqlite3_progress_handler(d, 0, NULL, NULL);
    if (rc == 0 && !out->note[0] && probe_vtab_note[0])
        pb_strlcpy(out->note, probe_vtab_note, sizeof out->note);
out:
    sqlite3_finalize(st);
    out->elapsed_ms = mono_ms() - t0;
    if (rc < 0) {
        core_rows_free(out);
        PB_LOG(PB_LOG_DEBUG, "query failed: %s", err ? err->msg : "");
    }
    return rc;
}

/* ---- probe_rows ---- */
