/* SPDX-License-Identifier: MIT */
/* Rollups of history tables: one row per distinct value of some columns of a history table
 * (a step, a module and stage, a loss), with count/sum/min/max/mean of others, kept as rows
 * arrive so that the common GROUP BY reads hundreds of rows instead of the raw 100,000. The
 * groups live here in memory; the flush (history.c, task thread) adds each row it writes,
 * subtracts each row retention evicts (so a rollup always equals the GROUP BY over the rows
 * the history table still holds), and mirrors the changed groups into the rollup's SQLite
 * table. A min or max that leaves with an evicted row is read again from the remaining rows
 * (through an index on the group columns). Task thread only, but for sql_rollup_new. */
#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "store.h"

#define MAX_GROUP PROBE_ROLLUP_MAX_GROUP
#define MAX_VALUES PROBE_ROLLUP_MAX_VALUES

static const char *const stat_names[] = {"count", "sum", "min", "max", "mean"};
#define NSTATS 5

struct agg {
    long long n;     /* non-NULL values */
    long double sum; /* extended precision: subtracting evicted rows stays exact enough */
    double min, max;
};

struct group {
    struct probe_value key[MAX_GROUP]; /* text owned */
    uint64_t hash;
    long long rid, rows;
    double ts;
    int dirty, refresh, next;
    struct agg a[MAX_VALUES];
};

struct probe_rollup {
    int ng, nv;
    int g[MAX_GROUP], v[MAX_VALUES]; /* column indexes in the base table (without ts) */
    char gtype[MAX_GROUP];           /* the group columns' declared type: I, R or T */
    struct group *groups;
    int n, cap;
    int *buckets, nbuckets;
    long long next_rid;
};

/* The column index of name in t (without ts), or -1. */
static int col_index(const struct probe_table_info *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* "a,b" -> indexes; returns the count or -1 (unknown column, too many, empty). */
static int parse_cols(const struct probe_table_info *t, const char *list, int *out, int max)
{
    char buf[256];
    int n = 0;
    if (!list || !*list || strlen(list) >= sizeof buf)
        return -1;
    strcpy(buf, list);
    char *save = NULL;
    for (char *c = strtok_r(buf, ", ", &save); c; c = strtok_r(NULL, ", ", &save)) {
        int i = col_index(t, c);
        if (i < 0 || n == max)
            return -1;
        out[n++] = i;
    }
    return n ? n : -1;
}

/* "<col>_<stat>" and its description (strings that live for the process, like the table). */
static void stat_column(struct probe_column *c, const char *col, int s)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s_%s", col, stat_names[s]);
    c->name = strdup(buf);
    snprintf(buf, sizeof buf, "%s(%s) over the group's rows", s == 4 ? "avg" : stat_names[s], col);
    c->description = strdup(buf);
    c->type = s == 0 ? "INTEGER" : "REAL";
}

struct probe_rollup *sql_rollup_new(const struct probe_table_info *base, const char *group_cols,
                                    const char *value_cols, struct probe_column **cols, int *ncols,
                                    struct pb_err *err)
{
    struct probe_rollup *r = calloc(1, sizeof *r);
    if (!r) {
        pb_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    r->ng = parse_cols(base, group_cols, r->g, MAX_GROUP);
    r->nv = parse_cols(base, value_cols, r->v, MAX_VALUES);
    if (r->ng < 0 || r->nv < 0) {
        pb_err_set(err, PB_EBADARG,
                   "rollup of %s: '%s' and '%s' must be lists of its columns "
                   "(at most %d and %d)",
                   base->name, group_cols ? group_cols : "", value_cols ? value_cols : "",
                   MAX_GROUP, MAX_VALUES);
        free(r);
        return NULL;
    }
    int n = r->ng + 1 + r->nv * NSTATS;
    struct probe_column *c = calloc((size_t)n, sizeof *c);
    if (!c) {
        free(r);
        pb_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    int k = 0;
    for (int i = 0; i < r->ng; i++) {
        c[k++] = base->cols[r->g[i]];
        r->gtype[i] = base->cols[r->g[i]].type[0];
    }
    c[k++] = (struct probe_column){"rows", "INTEGER", "rows of the group (count(*))"};
    for (int i = 0; i < r->nv; i++) {
        const char *v = base->cols[r->v[i]].name;
        for (int s = 0; s < NSTATS; s++)
            stat_column(&c[k++], v, s);
    }
    *cols = c;
    *ncols = n;
    return r;
}

/* ---- groups ---- */

static double num(const struct probe_value *v)
{
    return v->type == PROBE_V_INT ? (double)v->i : v->d;
}

static int is_num(const struct probe_value *v)
{
    return v->type == PROBE_V_INT || v->type == PROBE_V_REAL;
}

static uint64_t key_hash(const struct probe_value *k, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        if (is_num(&k[i])) {
            double d = num(&k[i]);
            uint64_t b;
            d = d == 0 ? 0 : d; /* -0.0 and 0.0 are one group */
            memcpy(&b, &d, sizeof b);
            h = (h ^ b) * 1099511628211ull;
        } else if (k[i].type == PROBE_V_TEXT && k[i].s) {
            for (const char *p = k[i].s; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ull;
        }
        h = (h ^ (uint64_t)(k[i].type == PROBE_V_TEXT ? 2 : is_num(&k[i]))) * 1099511628211ull;
    }
    return h;
}

/* SQLite's GROUP BY equality: NULLs together, 3 and 3.0 together, texts by bytes. */
static int key_eq(const struct probe_value *a, const struct probe_value *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (is_num(&a[i]) && is_num(&b[i])) {
            if (num(&a[i]) != num(&b[i]))
                return 0;
        } else if (a[i].type != b[i].type) {
            return 0;
        } else if (a[i].type == PROBE_V_TEXT &&
                   strcmp(a[i].s ? a[i].s : "", b[i].s ? b[i].s : "")) {
            return 0;
        }
    }
    return 1;
}

/* A value as the column stores it (the declared type's affinity). */
static struct probe_value as_stored(const struct probe_value *v, char type)
{
    struct probe_value o = *v;
    if (type == 'R' && v->type == PROBE_V_INT)
        o = (struct probe_value){PROBE_V_REAL, 0, (double)v->i, NULL};
    else if (type == 'I' && v->type == PROBE_V_REAL && v->d == (double)(long long)v->d)
        o = (struct probe_value){PROBE_V_INT, (long long)v->d, 0, NULL};
    return o;
}

static void rehash(struct probe_rollup *r)
{
    for (int b = 0; b < r->nbuckets; b++)
        r->buckets[b] = -1;
    for (int i = 0; i < r->n; i++) {
        int b = (int)(r->groups[i].hash % (uint64_t)r->nbuckets);
        r->groups[i].next = r->buckets[b];
        r->buckets[b] = i;
    }
}

static int find_group(struct probe_rollup *r, const struct probe_value *key, uint64_t h)
{
    if (!r->nbuckets)
        return -1;
    for (int i = r->buckets[h % (uint64_t)r->nbuckets]; i >= 0; i = r->groups[i].next)
        if (r->groups[i].hash == h && key_eq(r->groups[i].key, key, r->ng))
            return i;
    return -1;
}

static int new_group(struct probe_rollup *r, const struct probe_value *key, uint64_t h)
{
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 64;
        struct group *ng = realloc(r->groups, (size_t)nc * sizeof *ng);
        int *nb = ng ? realloc(r->buckets, (size_t)nc * sizeof *nb) : NULL;
        if (ng)
            r->groups = ng;
        if (!nb)
            return -1;
        r->buckets = nb;
        r->cap = r->nbuckets = nc;
        rehash(r);
    }
    struct group *g = &r->groups[r->n];
    memset(g, 0, sizeof *g);
    for (int i = 0; i < r->ng; i++) {
        g->key[i] = key[i];
        g->key[i].s = NULL;
        if (key[i].type == PROBE_V_TEXT && !(g->key[i].s = strdup(key[i].s ? key[i].s : "")))
            return -1;
    }
    g->hash = h;
    g->rid = ++r->next_rid;
    int b = (int)(h % (uint64_t)r->nbuckets);
    g->next = r->buckets[b];
    r->buckets[b] = r->n;
    return r->n++;
}

/* Add (sign 1) or remove (sign -1) one row of the base table (its columns without ts). */
static void apply(struct probe_rollup *r, double ts, const struct probe_value *row, int sign)
{
    struct probe_value key[MAX_GROUP];
    for (int i = 0; i < r->ng; i++)
        key[i] = as_stored(&row[r->g[i]], r->gtype[i]);
    uint64_t h = key_hash(key, r->ng);
    int gi = find_group(r, key, h);
    if (gi < 0 && (sign < 0 || (gi = new_group(r, key, h)) < 0))
        return;
    struct group *g = &r->groups[gi];
    g->rows += sign;
    g->dirty = 1;
    if (sign > 0 && ts > g->ts)
        g->ts = ts;
    for (int k = 0; k < r->nv; k++) {
        const struct probe_value *v = &row[r->v[k]];
        struct agg *a = &g->a[k];
        if (!is_num(v))
            continue;
        double x = num(v);
        if (sign > 0) {
            a->min = a->n == 0 || x < a->min ? x : a->min;
            a->max = a->n == 0 || x > a->max ? x : a->max;
            a->n++;
            a->sum += x;
        } else {
            a->n--;
            a->sum -= x;
            if (a->n <= 0)
                a->sum = 0, a->n = 0;
            else if (x <= a->min || x >= a->max)
                g->refresh = 1; /* an extreme left: read it again from the rows left */
        }
    }
}

void sql_rollup_add(struct probe_rollup *r, double ts, const struct probe_value *row)
{
    apply(r, ts, row, 1);
}

/* ---- SQLite side ---- */

static struct probe_value column_value(sqlite3_stmt *st, int c)
{
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_INTEGER:
        return (struct probe_value){PROBE_V_INT, sqlite3_column_int64(st, c), 0, NULL};
    case SQLITE_FLOAT:
        return (struct probe_value){PROBE_V_REAL, 0, sqlite3_column_double(st, c), NULL};
    case SQLITE_TEXT:
        return (struct probe_value){PROBE_V_TEXT, 0, 0, (char *)sqlite3_column_text(st, c)};
    default: return (struct probe_value){PROBE_V_NULL, 0, 0, NULL};
    }
}

void sql_rollup_scan(sqlite3 *db, const char *base, int ncols, long long upto, int sign,
                     struct probe_rollup *const *rs, int nr)
{
    char *sql = sqlite3_mprintf("SELECT * FROM %s WHERE rowid <= %lld", base, upto);
    sqlite3_stmt *st = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        PB_LOG(PB_LOG_WARN, "rollups of %s: %s", base, sqlite3_errmsg(db));
        sqlite3_free(sql);
        return;
    }
    sqlite3_free(sql);
    struct probe_value row[PROBE_HISTORY_MAX_COLS];
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < ncols; c++)
            row[c] = column_value(st, c + 1);
        for (int i = 0; i < nr; i++)
            apply(rs[i], sqlite3_column_double(st, 0), row, sign);
    }
    sqlite3_finalize(st);
}

/* Read a group's min and max again from the rows the base table still holds. */
static void refresh(sqlite3 *db, struct probe_rollup *r, struct group *g,
                    const struct probe_table_info *base)
{
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "SELECT max(ts)");
    for (int k = 0; k < r->nv; k++)
        sqlite3_str_appendf(s, ", min(\"%w\"), max(\"%w\")", base->cols[r->v[k]].name,
                            base->cols[r->v[k]].name);
    sqlite3_str_appendf(s, " FROM %s WHERE ", base->name);
    for (int i = 0; i < r->ng; i++)
        sqlite3_str_appendf(s, "%s\"%w\" IS ?", i ? " AND " : "", base->cols[r->g[i]].name);
    char *sql = sqlite3_str_finish(s);
    sqlite3_stmt *st = NULL;
    if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        for (int i = 0; i < r->ng; i++)
            sql_history_bind(st, i + 1, &g->key[i]);
        if (sqlite3_step(st) == SQLITE_ROW) {
            g->ts = sqlite3_column_double(st, 0);
            for (int k = 0; k < r->nv; k++) {
                g->a[k].min = sqlite3_column_double(st, 1 + 2 * k);
                g->a[k].max = sqlite3_column_double(st, 2 + 2 * k);
            }
        }
    }
    sqlite3_finalize(st);
    sqlite3_free(sql);
    g->refresh = 0;
}

static void remove_group(struct probe_rollup *r, int i)
{
    for (int k = 0; k < r->ng; k++)
        free(r->groups[i].key[k].s);
    r->groups[i] = r->groups[--r->n];
    rehash(r);
}

static void exec_rid(sqlite3 *db, const char *name, long long rid)
{
    char *sql = sqlite3_mprintf("DELETE FROM %s WHERE rowid = %lld", name, rid);
    if (!sql || sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        PB_LOG(PB_LOG_WARN, "rollup %s: %s", name, sqlite3_errmsg(db));
    sqlite3_free(sql);
}

void sql_rollup_sync(sqlite3 *db, struct probe_rollup *r, const struct probe_table_info *base,
                     const struct probe_table_info *self)
{
    const char *name = self->name;
    sqlite3_stmt *st = NULL;
    for (int i = 0; i < r->n; i++) {
        struct group *g = &r->groups[i];
        if (!g->dirty)
            continue;
        if (g->rows <= 0) {
            exec_rid(db, name, g->rid);
            remove_group(r, i--);
            continue;
        }
        if (g->refresh)
            refresh(db, r, g, base);
        if (!st) {
            sqlite3_str *s = sqlite3_str_new(db);
            sqlite3_str_appendf(s, "INSERT OR REPLACE INTO %s(rowid, ts", name);
            for (int c = 0; c < self->ncols; c++)
                sqlite3_str_appendf(s, ", \"%w\"", self->cols[c].name);
            sqlite3_str_appendf(s, ") VALUES(?, ?");
            for (int c = 0; c < self->ncols; c++)
                sqlite3_str_appendf(s, ", ?");
            sqlite3_str_appendf(s, ")");
            char *sql = sqlite3_str_finish(s);
            int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
            sqlite3_free(sql);
            if (rc != SQLITE_OK) {
                PB_LOG(PB_LOG_WARN, "rollup %s: %s", name, sqlite3_errmsg(db));
                return;
            }
        }
        /* The table's columns are ts, the group columns, rows, then the stats; rowid first. */
        int p = 1;
        sqlite3_bind_int64(st, p++, g->rid);
        sqlite3_bind_double(st, p++, g->ts);
        for (int k = 0; k < r->ng; k++)
            sql_history_bind(st, p++, &g->key[k]);
        sqlite3_bind_int64(st, p++, g->rows);
        for (int k = 0; k < r->nv; k++) {
            const struct agg *a = &g->a[k];
            sqlite3_bind_int64(st, p++, a->n);
            if (a->n == 0) {
                for (int s = 1; s < NSTATS; s++)
                    sqlite3_bind_null(st, p++);
                continue;
            }
            sqlite3_bind_double(st, p++, (double)a->sum);
            sqlite3_bind_double(st, p++, a->min);
            sqlite3_bind_double(st, p++, a->max);
            sqlite3_bind_double(st, p++, (double)(a->sum / a->n));
        }
        if (sqlite3_step(st) != SQLITE_DONE)
            PB_LOG(PB_LOG_WARN, "rollup %s: %s", name, sqlite3_errmsg(db));
        sqlite3_reset(st);
        g->dirty = 0;
    }
    sqlite3_finalize(st);
}
