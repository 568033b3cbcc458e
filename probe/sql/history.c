/* SPDX-License-Identifier: MIT */
/* History tables: real tables that collectors append rows to, each with a leading `ts` column
 * (epoch seconds), bounded by history.max_rows and history.max_age_s. Appends come from any
 * thread and never touch SQLite: rows wait in a bounded queue and the task thread writes them
 * (sql_history_flush, before every query, and in batches: a row asks for a flush only when
 * the last one began FLUSH_GAP_MS ago or FLUSH_BATCH rows wait, the loop's one-second timer
 * takes what is left; a flush per row, a transaction each, cost a per-request job of 5 ms
 * about 6% of its CPU). Also the built-in collector:
 * system.process_history, sampled from /proc by a timer on the loop (no GIL). Rollups
 * (rollup.c) are entries of the same list, kind "rollup", kept by the flush. */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/settings.h"
#include "vtab.h"

#define MAX_TABLES 32
#define MAX_COLS PROBE_HISTORY_MAX_COLS

#define MAX_INDEXES 4
#define FLUSH_GAP_MS 1000 /* at most one flush a second for a steady stream of rows */
#define FLUSH_BATCH 1024  /* rows waiting that ask for a flush at once */

struct hist_table {
    struct probe_table_info info;
    int created; /* task thread only */
    long long appended;
    /* Declared indexes ("col1,col2"), created with the table or at the next flush. */
    char *indexes[MAX_INDEXES];
    int nindexes;
    int indexes_created;         /* task thread only */
    struct probe_rollup *rollup; /* a rollup of tables[base] (else NULL) */
    int base, seeded;            /* seeded: task thread only */
};

struct pending {
    int table;
    double ts;
    int n;
    struct probe_value *vals;
    struct pending *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct hist_table tables[MAX_TABLES];
static atomic_int ntables;
static struct pending *head, *tail;
static long long npending;
static atomic_int flush_scheduled;
static _Atomic long long last_flush_ms; /* when the last flush task began (monotonic) */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *const schemas[] = {"python.", "system.", "probing.", "perf.", "torch."};

static int valid_name(const char *name)
{
    const char *dot = NULL;
    for (size_t i = 0; i < sizeof schemas / sizeof schemas[0]; i++)
        if (strncmp(name, schemas[i], strlen(schemas[i])) == 0)
            dot = name + strlen(schemas[i]) - 1;
    if (!dot || !dot[1] || strlen(name) > 60)
        return 0;
    for (const char *p = dot + 1; *p; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

static int find(const char *name)
{
    int n = atomic_load(&ntables);
    for (int i = 0; i < n; i++)
        if (strcmp(tables[i].info.name, name) == 0)
            return i;
    return -1;
}

int sql_history_define(const char *table, const char *description, const struct probe_column *cols,
                       int ncols, struct pb_err *err)
{
    if (!valid_name(table))
        return pb_err_set(err, PB_EBADARG,
                          "history table '%s': expected schema.name with "
                          "schema python, system, probing, perf or torch and a name of "
                          "[a-z0-9_]",
                          table);
    if (ncols < 1 || ncols > MAX_COLS)
        return pb_err_set(err, PB_EBADARG, "history table '%s': 1 to %d columns", table, MAX_COLS);
    for (int v = 0; v < sql_vtab_count(); v++)
        if (strcmp(sql_vtab_info(v)->name, table) == 0)
            return pb_err_set(err, PB_EBADARG,
                              "history table '%s': a built-in live table has "
                              "that name: choose another",
                              table);
    pthread_mutex_lock(&mu);
    int i = find(table), rc = 0;
    if (i < 0) {
        int n = atomic_load(&ntables);
        if (n == MAX_TABLES) {
            rc = pb_err_set(err, PB_EBADARG, "too many history tables (%d)", MAX_TABLES);
        } else {
            tables[n].info = (struct probe_table_info){table, "history", description, cols, ncols};
            atomic_store(&ntables, n + 1);
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Column names: [A-Za-z0-9_] separated by commas, each a column of the table. */
static int index_columns_ok(const struct hist_table *h, const char *cols)
{
    char buf[256];
    if (!cols || !*cols || strlen(cols) >= sizeof buf)
        return 0;
    strcpy(buf, cols);
    char *save = NULL;
    for (char *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        int known = strcmp(c, "ts") == 0;
        for (int i = 0; i < h->info.ncols && !known; i++)
            known = strcmp(c, h->info.cols[i].name) == 0;
        if (!known)
            return 0;
    }
    return 1;
}

int sql_history_index(const char *table, const char *columns, struct pb_err *err)
{
    pthread_mutex_lock(&mu);
    int i = find(table), rc = 0;
    if (i < 0)
        rc = pb_err_set(err, PB_EBADARG, "history table '%s' is not defined", table);
    else if (!index_columns_ok(&tables[i], columns))
        rc = pb_err_set(err, PB_EBADARG, "index on %s: '%s' is not a list of its columns", table,
                        columns ? columns : "");
    else if (tables[i].nindexes == MAX_INDEXES)
        rc = pb_err_set(err, PB_EBADARG, "index on %s: at most %d indexes", table, MAX_INDEXES);
    else if (!(tables[i].indexes[tables[i].nindexes] = strdup(columns)))
        rc = pb_err_set(err, -ENOMEM, "out of memory");
    else
        tables[i].nindexes++;
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Whether the declared index list of h starts with cols (so it serves WHERE on them). */
static int has_index_on(const struct hist_table *h, const char *cols)
{
    size_t n = strlen(cols);
    for (int i = 0; i < h->nindexes; i++)
        if (strncmp(h->indexes[i], cols, n) == 0 && (!h->indexes[i][n] || h->indexes[i][n] == ','))
            return 1;
    return 0;
}

int sql_history_rollup(const char *table, const char *group_cols, const char *value_cols,
                       struct pb_err *err)
{
    char name[128];
    int b = find(table);
    if (b < 0 || tables[b].rollup)
        return pb_err_set(err, PB_EBADARG, "rollup: '%s' is not a history table", table);
    snprintf(name, sizeof name, "%s_by_%s", table, group_cols ? group_cols : "");
    for (char *c = name + strlen(table); *c; c++)
        if (*c == ',' || *c == ' ')
            *c = '_';
    if (find(name) >= 0)
        return 0;
    struct probe_column *cols = NULL;
    int ncols = 0;
    struct probe_rollup *r =
        sql_rollup_new(&tables[b].info, group_cols, value_cols, &cols, &ncols, err);
    if (!r)
        return err->code;
    char *dup = strdup(name);
    int rc = dup ? sql_history_define(dup, tables[b].info.description, cols, ncols, err)
                 : pb_err_set(err, -ENOMEM, "out of memory");
    pthread_mutex_lock(&mu);
    int i = rc == 0 ? find(dup) : -1;
    if (i >= 0 && !tables[i].rollup) {
        char *desc = malloc(strlen(table) + strlen(group_cols) + 64);
        if (desc)
            sprintf(desc, "%s rolled up by %s (kept as rows arrive and leave)", table, group_cols);
        tables[i].info.kind = "rollup";
        tables[i].info.description = desc ? desc : tables[b].info.description;
        tables[i].base = b;
        tables[i].rollup = r; /* lives for the process, like the table */
        r = NULL;
    }
    pthread_mutex_unlock(&mu);
    if (rc < 0) {
        free(dup);
        free(cols);
    }
    free(r);
    /* A min or max that leaves with an evicted row is read again through this index. */
    pthread_mutex_lock(&mu);
    int need = rc == 0 && !has_index_on(&tables[b], group_cols);
    pthread_mutex_unlock(&mu);
    if (need)
        rc = sql_history_index(table, group_cols, err);
    return rc;
}

int sql_history_count(void)
{
    return atomic_load(&ntables);
}

const struct probe_table_info *sql_history_info(int i)
{
    return i >= 0 && i < atomic_load(&ntables) ? &tables[i].info : NULL;
}

static void pending_free(struct pending *p)
{
    for (int i = 0; p && i < p->n; i++)
        free(p->vals[i].s);
    if (p)
        free(p->vals);
    free(p);
}

static void flush_task(void *arg)
{
    (void)arg;
    atomic_store(&last_flush_ms, now_ms());
    atomic_store(&flush_scheduled, 0);
    sql_history_flush();
}

static void flush_done(void *arg)
{
    (void)arg;
}

/* A flush task, unless one is waiting to run. */
static void flush_soon(void)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&flush_scheduled, &expect, 1) &&
        core_task_submit(flush_task, flush_done, NULL) < 0)
        atomic_store(&flush_scheduled, 0);
}

int sql_history_append(const char *table, const struct probe_value *vals, int ncols)
{
    int t = find(table);
    if (t < 0 || ncols != tables[t].info.ncols || tables[t].rollup)
        return PB_EBADARG;
    struct pending *p = calloc(1, sizeof *p);
    if (!p || !(p->vals = calloc((size_t)ncols, sizeof *p->vals))) {
        free(p);
        return -ENOMEM;
    }
    p->table = t;
    p->ts = sql_now();
    p->n = ncols;
    for (int i = 0; i < ncols; i++) {
        p->vals[i] = vals[i];
        p->vals[i].s = NULL;
        if (vals[i].type == PROBE_V_TEXT && vals[i].s && !(p->vals[i].s = strdup(vals[i].s))) {
            pending_free(p);
            return -ENOMEM;
        }
    }
    long long max = core_setting_int("history.max_rows");
    struct pending *dropped = NULL;
    pthread_mutex_lock(&mu);
    if (tail)
        tail->next = p;
    else
        head = p;
    tail = p;
    npending++;
    if (npending > max) { /* the task thread is busy: drop the oldest rather than grow */
        dropped = head;
        head = head->next;
        npending--;
    }
    long long waiting = npending;
    pthread_mutex_unlock(&mu);
    pending_free(dropped);
    if (waiting >= FLUSH_BATCH || now_ms() - atomic_load(&last_flush_ms) >= FLUSH_GAP_MS)
        flush_soon();
    return 0;
}

static int create_table(sqlite3 *db, struct hist_table *h)
{
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "CREATE TABLE IF NOT EXISTS %s(ts REAL NOT NULL", h->info.name);
    for (int c = 0; c < h->info.ncols; c++)
        sqlite3_str_appendf(s, ", \"%w\" %s", h->info.cols[c].name, h->info.cols[c].type);
    sqlite3_str_appendf(s, ")");
    char *sql = sqlite3_str_finish(s);
    if (!sql)
        return -ENOMEM;
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
        PB_LOG(PB_LOG_ERROR, "history table %s: %s", h->info.name, sqlite3_errmsg(db));
        return PB_EUNKNOWN;
    }
    h->created = 1;
    return 0;
}

/* CREATE INDEX for declared indexes not created yet. "perf.samples" gets perf.samples_i0... */
static int create_indexes(sqlite3 *db, struct hist_table *h)
{
    pthread_mutex_lock(&mu);
    int n = h->nindexes;
    pthread_mutex_unlock(&mu);
    const char *dot = strchr(h->info.name, '.');
    for (; h->indexes_created < n; h->indexes_created++) {
        char *sql = sqlite3_mprintf("CREATE INDEX IF NOT EXISTS %s_i%d ON %s(%s)", h->info.name,
                                    h->indexes_created, dot + 1, h->indexes[h->indexes_created]);
        int rc = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc != SQLITE_OK) {
            PB_LOG(PB_LOG_ERROR, "index on %s: %s", h->info.name, sqlite3_errmsg(db));
            return PB_EUNKNOWN;
        }
    }
    return 0;
}

int sql_history_create_tables(sqlite3 *db)
{
    int n = atomic_load(&ntables), rc = 0;
    for (int i = 0; i < n; i++) {
        struct hist_table *h = &tables[i];
        if (!h->created && create_table(db, h) < 0)
            rc = PB_EUNKNOWN;
        else if (h->created && create_indexes(db, h) < 0)
            rc = PB_EUNKNOWN;
        /* A rollup declared after rows arrived starts from the rows the table holds. */
        if (h->rollup && h->created && !h->seeded && tables[h->base].created) {
            const struct hist_table *b = &tables[h->base];
            sql_rollup_scan(db, b->info.name, b->info.ncols, INT64_MAX, 1, &h->rollup, 1);
            sql_rollup_sync(db, h->rollup, &b->info, &h->info);
            h->seeded = 1;
        }
    }
    return rc;
}

/* The rollups of table t (at most MAX_TABLES). */
static int rollups_of(int t, struct probe_rollup **rs, int *idx)
{
    int n = atomic_load(&ntables), k = 0;
    for (int i = 0; i < n; i++)
        if (tables[i].rollup && tables[i].base == t && tables[i].seeded) {
            rs[k] = tables[i].rollup;
            idx[k++] = i;
        }
    return k;
}

void sql_history_bind(sqlite3_stmt *st, int i, const struct probe_value *v)
{
    switch (v->type) {
    case PROBE_V_INT: sqlite3_bind_int64(st, i, v->i); break;
    case PROBE_V_REAL: sqlite3_bind_double(st, i, v->d); break;
    case PROBE_V_TEXT: sqlite3_bind_text(st, i, v->s, -1, SQLITE_TRANSIENT); break;
    default: sqlite3_bind_null(st, i); break;
    }
}

/* Retention: rows past history.max_rows (oldest first, by rowid) and older than
 * history.max_age_s. Rows are appended in time order, so both are prefixes by rowid and each
 * DELETE walks only what it removes (no scan of the whole table). */
static void retain(sqlite3 *db, int t)
{
    const struct hist_table *h = &tables[t];
    char sql[512];
    const char *n = h->info.name;
    /* The last rowid to evict: both rules cut a prefix. */
    snprintf(sql, sizeof sql,
             "SELECT max((SELECT max(rowid) FROM %s) - %lld, coalesce((SELECT rowid FROM %s "
             "WHERE ts >= %.3f ORDER BY rowid LIMIT 1), (SELECT max(rowid) + 1 FROM %s)) - 1)",
             n, core_setting_int("history.max_rows"), n,
             sql_now() - (double)core_setting_int("history.max_age_s"), n);
    sqlite3_stmt *st = NULL;
    long long cut = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        cut = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    struct probe_rollup *rs[MAX_TABLES];
    int idx[MAX_TABLES], nr = rollups_of(t, rs, idx);
    if (cut > 0 && nr > 0) /* the rollups lose what the table loses */
        sql_rollup_scan(db, n, h->info.ncols, cut, -1, rs, nr);
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE rowid <= %lld", n, cut);
    if (cut > 0 && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        PB_LOG(PB_LOG_WARN, "retention of %s: %s", n, sqlite3_errmsg(db));
    for (int i = 0; i < nr; i++)
        sql_rollup_sync(db, rs[i], &h->info, &tables[idx[i]].info);
}

void sql_history_flush(void)
{
    sqlite3 *db = sql_store_db(NULL);
    if (!db)
        return;
    sql_history_create_tables(db);
    pthread_mutex_lock(&mu);
    struct pending *list = head;
    head = tail = NULL;
    npending = 0;
    pthread_mutex_unlock(&mu);
    if (!list)
        return;
    int touched[MAX_TABLES] = {0};
    sqlite3_stmt *st[MAX_TABLES] = {0};
    struct probe_rollup *rs[MAX_TABLES][MAX_TABLES];
    int nrs[MAX_TABLES], idx[MAX_TABLES];
    for (int i = 0; i < MAX_TABLES; i++)
        nrs[i] = rollups_of(i, rs[i], idx);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    while (list) {
        struct pending *p = list;
        list = p->next;
        struct hist_table *h = &tables[p->table];
        if (!st[p->table] && h->created) {
            sqlite3_str *s = sqlite3_str_new(db);
            sqlite3_str_appendf(s, "INSERT INTO %s VALUES(?", h->info.name);
            for (int c = 0; c < h->info.ncols; c++)
                sqlite3_str_appendf(s, ", ?");
            sqlite3_str_appendf(s, ")");
            char *sql = sqlite3_str_finish(s);
            if (sql)
                sqlite3_prepare_v2(db, sql, -1, &st[p->table], NULL);
            sqlite3_free(sql);
        }
        sqlite3_stmt *ins = st[p->table];
        if (ins) {
            sqlite3_bind_double(ins, 1, p->ts);
            for (int c = 0; c < p->n; c++)
                sql_history_bind(ins, c + 2, &p->vals[c]);
            if (sqlite3_step(ins) != SQLITE_DONE)
                PB_LOG(PB_LOG_WARN, "history insert into %s: %s", h->info.name, sqlite3_errmsg(db));
            else
                for (int r = 0; r < nrs[p->table]; r++)
                    sql_rollup_add(rs[p->table][r], p->ts, p->vals);
            sqlite3_reset(ins);
            touched[p->table] = 1;
            h->appended++;
        }
        pending_free(p);
    }
    for (int i = 0; i < MAX_TABLES; i++) {
        sqlite3_finalize(st[i]);
        if (touched[i])
            retain(db, i);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
}

/* ---- the built-in collector: system.process_history ---- */

static const struct probe_column process_history_cols[] = {
    {"rss", "INTEGER", "resident set size, bytes"},
    {"vms", "INTEGER", "virtual memory size, bytes"},
    {"cpu_user", "REAL", "user CPU time so far, seconds"},
    {"cpu_system", "REAL", "system CPU time so far, seconds"},
    {"threads", "INTEGER", "number of threads"},
    {"fds", "INTEGER", "open file descriptors"},
};

static uv_timer_t collector;
static atomic_int gpu_sample_queued;

static void gpu_sample_task(void *arg)
{
    (void)arg;
    sql_gpu_sample();
    atomic_store(&gpu_sample_queued, 0);
}

static void gpu_sample_done(void *arg)
{
    (void)arg;
}
static double last_sample;

/* Loop thread, once a second: sample when history.interval_s has passed (0: off). */
static void on_collect(uv_timer_t *t)
{
    (void)t;
    pthread_mutex_lock(&mu);
    int waiting = head != NULL;
    pthread_mutex_unlock(&mu);
    if (waiting)
        flush_soon(); /* rows a batch left behind */
    long long every = core_setting_int("history.interval_s");
    double now = sql_now();
    if (every <= 0 || now - last_sample < (double)every - 0.05)
        return;
    double s[6];
    if (sql_vtab_process_sample(s) < 0)
        return;
    last_sample = now;
    struct probe_value v[6] = {
        {PROBE_V_INT, (long long)s[0], s[0], NULL},
        {PROBE_V_INT, (long long)s[1], s[1], NULL},
        {PROBE_V_REAL, 0, s[2], NULL},
        {PROBE_V_REAL, 0, s[3], NULL},
        {PROBE_V_INT, (long long)s[4], s[4], NULL},
        {PROBE_V_INT, (long long)s[5], s[5], NULL},
    };
    sql_history_append("system.process_history", v, 6);
    /* The GPUs on the task thread: NVML's first call (dlopen, nvmlInit) may take a while. */
    int expect = 0;
    if (atomic_compare_exchange_strong(&gpu_sample_queued, &expect, 1) &&
        core_task_submit(gpu_sample_task, gpu_sample_done, NULL) < 0)
        atomic_store(&gpu_sample_queued, 0);
}

int sql_collector_start(void)
{
    struct pb_err err = {0};
    int rc = sql_history_define("system.process_history",
                                "this process sampled from /proc every history.interval_s "
                                "seconds (built-in collector)",
                                process_history_cols, 6, &err);
    if (rc < 0)
        return rc;
    uv_timer_init(core_agent_loop(), &collector);
    uv_unref((uv_handle_t *)&collector);
    return uv_timer_start(&collector, on_collect, 1000, 1000);
}
