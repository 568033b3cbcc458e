/* SPDX-License-Identifier: MIT */
/* The probe's console commands: a repl `evaluate` starting with '%' is one of these instead of
 * Python. %sql runs a query on the task thread (sql_store_query) and answers with the table
 * rendered as text; %help lists them. See docs/protocol.md "evaluate". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "sql/store.h"

struct sqljob {
    struct srv_job_rc rc;
    char *sql;
    char *text; /* the rendered result */
};

static char *cell_text(const struct probe_value *v)
{
    char buf[64];
    switch (v->type) {
    case PROBE_V_NULL: return NULL;
    case PROBE_V_INT: snprintf(buf, sizeof buf, "%lld", v->i); return strdup(buf);
    case PROBE_V_REAL: snprintf(buf, sizeof buf, "%g", v->d); return strdup(buf);
    default: return strdup(v->s ? v->s : "");
    }
}

/* Task thread. */
static void sql_run(void *job)
{
    struct sqljob *j = job;
    struct probe_rows rows = {0};
    j->rc.rc = sql_store_query(j->sql, &rows, &j->rc.err);
    if (j->rc.rc < 0)
        return;
    size_t n = rows.nrows * (size_t)rows.ncols;
    char **cells = calloc(n + 1, sizeof *cells);
    if (cells) {
        for (size_t i = 0; i < n; i++)
            cells[i] = cell_text(&rows.cells[i]);
        char *table = pb_table_render(rows.ncols, (const char *const *)rows.cols, rows.nrows,
                                      (const char *const *)cells);
        size_t len = (table ? strlen(table) : 0) + sizeof rows.note + 64;
        j->text = malloc(len);
        if (j->text)
            snprintf(j->text, len, "%s%s(%zu row%s%s%s)", table ? table : "",
                     table && table[0] && table[strlen(table) - 1] != '\n' ? "\n" : "", rows.nrows,
                     rows.nrows == 1 ? "" : "s", rows.truncated ? "; " : "",
                     rows.truncated ? rows.note : "");
        free(table);
        for (size_t i = 0; i < n; i++)
            free(cells[i]);
        free(cells);
    }
    if (!j->text)
        j->rc.rc = pb_err_set(&j->rc.err, -ENOMEM, "out of memory");
    core_rows_free(&rows);
}

/* Loop thread. */
static int sql_reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct sqljob *j = job;
    cJSON_AddStringToObject(body, "result", j->text);
    cJSON_AddNumberToObject(body, "variablesReference", 0);
    return 0;
}

static void sql_drop(void *job)
{
    struct sqljob *j = job;
    free(j->text);
    free(j->sql);
}

static const struct srv_job sql_job = {.size = sizeof(struct sqljob),
                                       .parse = NULL,
                                       .run = sql_run,
                                       .reply = sql_reply,
                                       .drop = sql_drop};

static int cmd_sql(struct srv_ctx *c, const char *rest, cJSON *body)
{
    (void)body;
    if (!*rest)
        return pb_err_set(&c->err, PB_EBADARG, "%%sql: give a query, e.g. %%sql SELECT 1");
    struct sqljob *j = calloc(1, sizeof *j);
    if (!j || !(j->sql = strdup(rest))) {
        free(j);
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    }
    return srv_job_submit(c, &sql_job, j, SRV_F_TASK, 0);
}

static int cmd_help(struct srv_ctx *c, const char *rest, cJSON *body);

static const struct {
    const char *name, *usage, *summary;
    int (*fn)(struct srv_ctx *c, const char *rest, cJSON *body);
} commands[] = {
    {"help", "%help", "this list", cmd_help},
    {"sql", "%sql SELECT ...", "run a read-only SQL query on the probe's tables", cmd_sql},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static int cmd_help(struct srv_ctx *c, const char *rest, cJSON *body)
{
    (void)c;
    (void)rest;
    char text[1024] = "Console commands (anything else is Python, run in __main__):\n";
    for (size_t i = 0; i < NCOMMANDS; i++) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof text - n, "  %-18s %s\n", commands[i].usage, commands[i].summary);
    }
    text[strlen(text) - 1] = 0;
    cJSON_AddStringToObject(body, "result", text);
    cJSON_AddNumberToObject(body, "variablesReference", 0);
    return 0;
}

int srv_console_command(struct srv_ctx *c, const char *line, cJSON *body)
{
    const char *name = line + 1;
    size_t n = strcspn(name, " \t\r\n");
    const char *rest = name + n;
    rest += strspn(rest, " \t\r\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strlen(commands[i].name) == n && strncmp(commands[i].name, name, n) == 0)
            return commands[i].fn(c, rest, body);
    return pb_err_set(&c->err, PB_EBADARG, "unknown console command '%%%.*s': try %%help",
                      (int)(n > 40 ? 40 : n), name);
}
