/* SPDX-License-Identifier: MIT */
/* The rollups of history tables (probe/sql/rollup.c) against SQLite's own GROUP BY, on the rows
 * `perf --torch` wrote on this machine: samples/torch_train.py (Debian's python3, torch 1.13,
 * `probing -p PID perf --torch --every 1`), python.torch_trace's rows of steps 2-4 for
 * blocks.0.attn.qkv, head and CrossEntropyLoss (36 rows, every column, as `query -f csv` gave
 * them). The probe declares two rollups of that table (sql/torch_tables.c): by module,stage
 * and by step, over duration, allocated, max_allocated (and rss). A rollup must equal the
 * GROUP BY over the rows the base table still holds: after the rows are added, and after
 * retention evicts the oldest step (the extremes that left are read again from the rows left;
 * a group left with no rows is deleted). */
#include <sqlite3.h>

#include "sql/store.h"
#include "unit.h"

/* ts, then python.torch_trace's columns in order (NULL: empty). */
static const char trace_csv[] =
    "1795893379.6548688,2,10,blocks.0.attn.qkv,Linear,forward_pre,,0,0,0,0,265465856,0."
    "10581276199809508,,140563921334336\n"
    "1795893379.654869,2,11,blocks.0.attn.qkv,Linear,forward_post,0.001708593001239933,0,0,0,0,"
    "265465856,0.10752135499933502,,140563921334336\n"
    "1795893379.6548858,2,48,head,Linear,forward_pre,,0,0,0,0,265465856,0.180301710999629,,"
    "140563921334336\n"
    "1795893379.654886,2,49,head,Linear,forward_post,0.00229736899927957,0,0,0,0,265465856,0."
    "18259907999890856,,140563921334336\n"
    "1795893379.6548865,2,51,CrossEntropyLoss,CrossEntropyLoss,forward_pre,,0,0,0,0,265465856,0."
    "18270437699538888,,140563921334336\n"
    "1795893379.654887,2,52,CrossEntropyLoss,CrossEntropyLoss,forward_post,0.009321664001618046,0,"
    "0,0,0,265465856,0.19202604099700693,,140563921334336\n"
    "1795893379.6548874,2,53,CrossEntropyLoss,CrossEntropyLoss,backward_pre,,0,0,0,0,265465856,0."
    "19276785499823745,,140563921334336\n"
    "1795893379.654888,2,54,CrossEntropyLoss,CrossEntropyLoss,backward_post,0.00013606299762614071,"
    "0,0,0,0,265465856,0.1929039179958636,,140563921334336\n"
    "1795893379.6548886,2,56,head,Linear,backward_pre,,0,0,0,0,265465856,0.19295525399502367,,"
    "140563921334336\n"
    "1795893379.6548889,2,57,head,Linear,backward_post,0.030484843999147415,0,0,0,0,265465856,0."
    "22344009799417108,,140563921334336\n"
    "1795893379.6549008,2,94,blocks.0.attn.qkv,Linear,backward_pre,,0,0,0,0,265465856,0."
    "32132377800007816,,140563921334336\n"
    "1795893379.6549013,2,95,blocks.0.attn.qkv,Linear,backward_post,0.015632526999979746,0,0,0,0,"
    "265465856,0.3369563050000579,,140563921334336\n"
    "1795893379.9954455,3,10,blocks.0.attn.qkv,Linear,forward_pre,,0,0,0,0,265465856,0."
    "10416610100219259,,140563921334336\n"
    "1795893379.995446,3,11,blocks.0.attn.qkv,Linear,forward_post,0.009877160999167245,0,0,0,0,"
    "265465856,0.11404326200135984,,140563921334336\n"
    "1795893379.9954624,3,48,head,Linear,forward_pre,,0,0,0,0,265465856,0.19878585200058296,,"
    "140563921334336\n"
    "1795893379.9954627,3,49,head,Linear,forward_post,0.007951676001539454,0,0,0,0,265465856,0."
    "20673752800212242,,140563921334336\n"
    "1795893379.9954636,3,51,CrossEntropyLoss,CrossEntropyLoss,forward_pre,,0,0,0,0,265465856,0."
    "20693950800341554,,140563921334336\n"
    "1795893379.9954638,3,52,CrossEntropyLoss,CrossEntropyLoss,forward_post,0.00017926700093084946,"
    "0,0,0,0,265465856,0.2071187750043464,,140563921334336\n"
    "1795893379.9954643,3,53,CrossEntropyLoss,CrossEntropyLoss,backward_pre,,0,0,0,0,265465856,0."
    "20766051100508776,,140563921334336\n"
    "1795893379.9954646,3,54,CrossEntropyLoss,CrossEntropyLoss,backward_post,0."
    "00011705499491654336,0,0,0,0,265465856,0.2077775660000043,,140563921334336\n"
    "1795893379.995465,3,56,head,Linear,backward_pre,,0,0,0,0,265465856,0.20781752500624862,,"
    "140563921334336\n"
    "1795893379.9954653,3,57,head,Linear,backward_post,0.01909863699984271,0,0,0,0,265465856,0."
    "22691616200609133,,140563921334336\n"
    "1795893379.9954786,3,94,blocks.0.attn.qkv,Linear,backward_pre,,0,0,0,0,265728000,0."
    "31451478300004965,,140563921334336\n"
    "1795893379.9954789,3,95,blocks.0.attn.qkv,Linear,backward_post,0.01241598000342492,0,0,0,0,"
    "265728000,0.32693076300347457,,140563921334336\n"
    "1795893380.3070447,4,10,blocks.0.attn.qkv,Linear,forward_pre,,0,0,0,0,265797632,0."
    "10553511900070589,,140563921334336\n"
    "1795893380.3070452,4,11,blocks.0.attn.qkv,Linear,forward_post,0.0041303969992441125,0,0,0,0,"
    "265797632,0.10966551599995,,140563921334336\n"
    "1795893380.3070586,4,48,head,Linear,forward_pre,,0,0,0,0,265797632,0.1841607250025845,,"
    "140563921334336\n"
    "1795893380.307059,4,49,head,Linear,forward_post,0.008210881002014503,0,0,0,0,265797632,0."
    "19237160600459902,,140563921334336\n"
    "1795893380.3070598,4,51,CrossEntropyLoss,CrossEntropyLoss,forward_pre,,0,0,0,0,265797632,0."
    "19256489400140708,,140563921334336\n"
    "1795893380.3070602,4,52,CrossEntropyLoss,CrossEntropyLoss,forward_post,0.008354213998245541,0,"
    "0,0,0,265797632,0.20091910799965262,,140563921334336\n"
    "1795893380.3070605,4,53,CrossEntropyLoss,CrossEntropyLoss,backward_pre,,0,0,0,0,265797632,0."
    "20159987100487342,,140563921334336\n"
    "1795893380.3070612,4,54,CrossEntropyLoss,CrossEntropyLoss,backward_post,0."
    "00013085499813314527,0,0,0,0,265797632,0.20173072600300657,,140563921334336\n"
    "1795893380.3070624,4,56,head,Linear,backward_pre,,0,0,0,0,265797632,0.2017766950011719,,"
    "140563921334336\n"
    "1795893380.3070626,4,57,head,Linear,backward_post,0.004638844002329279,0,0,0,0,265797632,0."
    "20641553900350118,,140563921334336\n"
    "1795893380.3070753,4,94,blocks.0.attn.qkv,Linear,backward_pre,,0,0,0,0,265797632,0."
    "30180125100014266,,140563921334336\n"
    "1795893380.3070757,4,95,blocks.0.attn.qkv,Linear,backward_post,0.008199103001970798,0,0,0,0,"
    "265797632,0.31000035400211345,,140563921334336\n";

static const struct probe_column cols[] = {
    {"step", "INTEGER", ""},      {"seq", "INTEGER", ""},
    {"module", "TEXT", ""},       {"module_type", "TEXT", ""},
    {"stage", "TEXT", ""},        {"duration", "REAL", ""},
    {"allocated", "INTEGER", ""}, {"max_allocated", "INTEGER", ""},
    {"cached", "INTEGER", ""},    {"max_cached", "INTEGER", ""},
    {"rss", "INTEGER", ""},       {"time_offset", "REAL", ""},
    {"rank", "INTEGER", ""},      {"thread_id", "INTEGER", ""},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
static const struct probe_table_info base = {
    .name = "t", .kind = "history", .description = "", .cols = cols, .ncols = NCOLS};

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        UNIT_FAIL_("%s: %s", sql, msg);
}

/* The base table, and the rows of trace_csv added to it and to each rollup as history.c's
 * flush does: inserted, then sql_rollup_add. */
static void load(sqlite3 *db, struct probe_rollup **rs, int nr)
{
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "CREATE TABLE t(ts REAL");
    for (int c = 0; c < NCOLS; c++)
        sqlite3_str_appendf(s, ", \"%w\" %s", cols[c].name, cols[c].type);
    sqlite3_str_appendf(s, ")");
    char *sql = sqlite3_str_finish(s);
    exec(db, sql);
    sqlite3_free(sql);
    sqlite3_stmt *ins;
    ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                                 &ins, NULL),
              SQLITE_OK);
    char *text = strdup(trace_csv), *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct probe_value row[NCOLS];
        char *f = line, *next;
        double ts = strtod(f, &next);
        f = next + 1;
        for (int c = 0; c < NCOLS; c++) {
            next = strchr(f, ',');
            if (next)
                *next = '\0';
            if (!*f)
                row[c] = (struct probe_value){.type = PROBE_V_NULL};
            else if (cols[c].type[0] == 'I')
                row[c] = (struct probe_value){.type = PROBE_V_INT, .i = strtoll(f, NULL, 10)};
            else if (cols[c].type[0] == 'R')
                row[c] = (struct probe_value){.type = PROBE_V_REAL, .d = strtod(f, NULL)};
            else
                row[c] = (struct probe_value){.type = PROBE_V_TEXT, .s = f};
            f = next ? next + 1 : f + strlen(f);
        }
        sqlite3_bind_double(ins, 1, ts);
        for (int c = 0; c < NCOLS; c++)
            sql_history_bind(ins, c + 2, &row[c]);
        ASSERT_EQ(sqlite3_step(ins), SQLITE_DONE);
        sqlite3_reset(ins);
        for (int i = 0; i < nr; i++)
            sql_rollup_add(rs[i], ts, row);
    }
    sqlite3_finalize(ins);
    free(text);
}

/* A rollup of t and its table, as history.c makes them. */
static struct probe_rollup *rollup(sqlite3 *db, const char *name, const char *group,
                                   const char *values, struct probe_table_info *self)
{
    struct probe_column *rc;
    int n;
    struct pb_err err = {0};
    struct probe_rollup *r = sql_rollup_new(&base, group, values, &rc, &n, &err);
    ASSERT(r != NULL);
    *self = (struct probe_table_info){
        .name = name, .kind = "rollup", .description = "", .cols = rc, .ncols = n};
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "CREATE TABLE %s(ts REAL", name);
    for (int c = 0; c < n; c++)
        sqlite3_str_appendf(s, ", \"%w\" %s", rc[c].name, rc[c].type);
    sqlite3_str_appendf(s, ")");
    char *sql = sqlite3_str_finish(s);
    exec(db, sql);
    sqlite3_free(sql);
    return r;
}

/* Every row of a and b the same, in order (reals within 1e-12 relative). Returns the rows. */
static int same_rows(sqlite3 *db, const char *a, const char *b)
{
    sqlite3_stmt *sa, *sb;
    ASSERT_EQ(sqlite3_prepare_v2(db, a, -1, &sa, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(db, b, -1, &sb, NULL), SQLITE_OK);
    int rows = 0, ra, rb;
    while ((ra = sqlite3_step(sa)) == SQLITE_ROW && (rb = sqlite3_step(sb)) == SQLITE_ROW) {
        ASSERT_EQ(sqlite3_column_count(sa), sqlite3_column_count(sb));
        for (int c = 0; c < sqlite3_column_count(sa); c++) {
            int ta = sqlite3_column_type(sa, c), tb = sqlite3_column_type(sb, c);
            if (ta == SQLITE_NULL || tb == SQLITE_NULL) {
                if (ta != tb)
                    UNIT_FAIL_("row %d column %d: %s vs %s", rows, c, sqlite3_column_text(sa, c),
                               sqlite3_column_text(sb, c));
            } else if (ta == SQLITE_TEXT || tb == SQLITE_TEXT) {
                ASSERT_STR_EQ((const char *)sqlite3_column_text(sa, c),
                              (const char *)sqlite3_column_text(sb, c));
            } else {
                double x = sqlite3_column_double(sa, c), y = sqlite3_column_double(sb, c);
                double d = x > y ? x - y : y - x, m = y < 0 ? -y : y;
                if (d > 1e-12 * (m > 1 ? m : 1))
                    UNIT_FAIL_("row %d column %d (%s): %.17g vs %.17g", rows, c,
                               sqlite3_column_name(sa, c), x, y);
            }
        }
        rows++;
    }
    ASSERT_EQ(ra, SQLITE_DONE); /* same number of rows */
    ASSERT_EQ(sqlite3_step(sb), SQLITE_DONE);
    sqlite3_finalize(sa);
    sqlite3_finalize(sb);
    return rows;
}

static const char by_ms_rollup[] =
    "SELECT module, stage, rows, duration_count, duration_sum, duration_min, duration_max, "
    "duration_mean, allocated_count, allocated_max, ts FROM by_ms ORDER BY module, stage";
static const char by_ms_group[] =
    "SELECT module, stage, count(*), count(duration), sum(duration), min(duration), "
    "max(duration), avg(duration), count(allocated), max(allocated), max(ts) FROM t GROUP BY "
    "module, stage ORDER BY module, stage";
static const char by_step_rollup[] =
    "SELECT step, rows, duration_count, duration_sum, duration_min, duration_max, rss_min, "
    "rss_max, rss_mean FROM by_step ORDER BY step";
static const char by_step_group[] =
    "SELECT step, count(*), count(duration), sum(duration), min(duration), max(duration), "
    "min(rss), max(rss), avg(rss) FROM t GROUP BY step ORDER BY step";

TEST(rollup_equals_group_by_of_torch_trace)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    struct probe_table_info ms, st;
    struct probe_rollup *rs[2] = {
        rollup(db, "by_ms", "module,stage", "duration,allocated,max_allocated", &ms),
        rollup(db, "by_step", "step", "duration,allocated,max_allocated,rss", &st)};
    load(db, rs, 2);
    sql_rollup_sync(db, rs[0], &base, &ms);
    sql_rollup_sync(db, rs[1], &base, &st);
    /* 3 modules x 4 stages; 3 steps */
    ASSERT_EQ(same_rows(db, by_ms_rollup, by_ms_group), 12);
    ASSERT_EQ(same_rows(db, by_step_rollup, by_step_group), 3);
    /* pre events carry no duration: count 0 and NULL stats, as min() of no value */
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db,
                       "SELECT rows, duration_count, duration_mean IS NULL FROM by_ms WHERE "
                       "module = 'head' AND stage = 'forward_pre'",
                       -1, &q, NULL);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int(q, 0), 3);
    ASSERT_EQ(sqlite3_column_int(q, 1), 0);
    ASSERT_EQ(sqlite3_column_int(q, 2), 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

TEST(rollup_after_retention_evicts_a_step)
{
    sqlite3 *db;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    struct probe_table_info ms, st;
    struct probe_rollup *rs[2] = {
        rollup(db, "by_ms", "module,stage", "duration,allocated,max_allocated", &ms),
        rollup(db, "by_step", "step", "duration,allocated,max_allocated,rss", &st)};
    load(db, rs, 2);
    sql_rollup_sync(db, rs[0], &base, &ms);
    sql_rollup_sync(db, rs[1], &base, &st);
    /* Retention as history.c runs it: the evicted prefix (step 2, the first 12 rows)
     * subtracted, deleted from the base table, then the changed groups written. */
    sql_rollup_scan(db, "t", NCOLS, 12, -1, rs, 2);
    exec(db, "DELETE FROM t WHERE rowid <= 12");
    sql_rollup_sync(db, rs[0], &base, &ms);
    sql_rollup_sync(db, rs[1], &base, &st);
    ASSERT_EQ(same_rows(db, by_ms_rollup, by_ms_group), 12);
    ASSERT_EQ(same_rows(db, by_step_rollup, by_step_group), 2); /* step 2's group deleted */
    /* and every row gone: every group with it */
    sql_rollup_scan(db, "t", NCOLS, 36, -1, rs, 2);
    exec(db, "DELETE FROM t");
    sql_rollup_sync(db, rs[0], &base, &ms);
    sql_rollup_sync(db, rs[1], &base, &st);
    ASSERT_EQ(same_rows(db, by_ms_rollup, by_ms_group), 0);
    ASSERT_EQ(same_rows(db, by_step_rollup, by_step_group), 0);
    sqlite3_close(db);
}
