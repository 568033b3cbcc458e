/* SPDX-License-Identifier: MIT */
/* probing/query (custom; docs/protocol.md): run one read-only SQL statement over the probe's
 * tables (docs/tables.md). Arguments: sql (string). Body: columns, rows (arrays of JSON
 * numbers, strings, null), truncated, note, elapsedMs (time spent in SQLite). The query runs on
 * the task thread, never on the loop, so other requests stay answerable meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "sql/store.h"

struct queryjob {
    struct srv_job_rc rc;
    char *sql;
    struct probe_rows rows;
};

/* Task thread. */
static void run(void *job)
{
    struct queryjob *j = job;
    j->rc.rc = sql_store_query(j->sql, &j->rows, &j->rc.err);
}

cJSON *srv_json_rows(const struct probe_rows *r)
{
    cJSON *rows = cJSON_CreateArray();
    for (size_t i = 0; rows && i < r->nrows; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int c = 0; c < r->ncols; c++) {
            const struct probe_value *v = &r->cells[i * (size_t)r->ncols + (size_t)c];
            cJSON *x = v->type == PROBE_V_INT    ? dap_json_int(v->i)
                       : v->type == PROBE_V_REAL ? dap_json_real(v->d)
                       : v->type == PROBE_V_TEXT ? cJSON_CreateString(v->s)
                                                 : cJSON_CreateNull();
            cJSON_AddItemToArray(row, x);
        }
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}

/* Loop thread. */
static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct queryjob *j = job;
    cJSON *cols = cJSON_AddArrayToObject(body, "columns");
    for (int c = 0; c < j->rows.ncols; c++)
        cJSON_AddItemToArray(cols, cJSON_CreateString(j->rows.cols[c]));
    cJSON_AddItemToObject(body, "rows", srv_json_rows(&j->rows));
    cJSON_AddBoolToObject(body, "truncated", j->rows.truncated);
    if (j->rows.note[0])
        cJSON_AddStringToObject(body, "note", j->rows.note);
    else
        cJSON_AddNullToObject(body, "note");
    cJSON_AddNumberToObject(body, "elapsedMs", j->rows.elapsed_ms);
    return 0;
}

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct queryjob *j = job;
    const char *sql = NULL;
    int rc = dap_arg_str(args, "sql", &sql, &c->err);
    if (rc < 0)
        return rc;
    if (!sql || !*sql)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.sql: expected a SQL statement");
    if (!(j->sql = strdup(sql)))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}

static void drop(void *job)
{
    struct queryjob *j = job;
    core_rows_free(&j->rows);
    free(j->sql);
}

const struct srv_job srv_job_probing_query = {
    .size = sizeof(struct queryjob), .parse = parse, .run = run, .reply = reply, .drop = drop};
