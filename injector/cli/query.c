/* SPDX-License-Identifier: MIT */
/* `probing -p PID query "SQL" [--format table|json|csv]` and `probing -p PID tables [NAME]`:
 * SQL over the probe's tables (docs/tables.md) through probing/query, rendered as an aligned
 * table (default), a JSON array of objects, or RFC 4180 CSV (cli_query_print, output.c). A result cut by query.max_rows or
 * query.max_bytes prints a note on stderr and still exits 0. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf("usage: probing -p PID query \"SQL\" [--format table|json|csv]\n"
           "\n"
           "Run one read-only SQL statement (SQLite) over the target's live state and\n"
           "collected history: python.backtrace, python.threads, python.objects,\n"
           "python.modules, python.gc, system.process, system.threads,\n"
           "system.process_history, probing.settings, probing.tables ('probing tables' lists\n"
           "them with their columns; docs/tables.md has examples). Helpers: now(),\n"
           "human_bytes(n), iso_time(ts), percentile(x, p).\n"
           "\n"
           "  -f, --format F   table (default), json (an array of objects) or csv (RFC 4180)\n"
           "\n"
           "Limits (see 'probing config'): query.max_rows, query.max_bytes (a longer result\n"
           "is cut, with a note on stderr) and query.timeout_ms (a longer query is\n"
           "interrupted). The database is read-only.\n"
           "\n"
           "Example: probing -p 4242 query \"SELECT func, lineno FROM python.backtrace\"\n");
}

static void tables_help(void)
{
    printf("usage: probing -p PID tables [NAME]\n"
           "\n"
           "List every table you can query (probing -p PID query ...) with its columns,\n"
           "their types and meaning; with NAME (e.g. python.threads), only that table.\n");
}

/* Connect, ask probing/query, return the body (caller deletes) or NULL after printing the
 * error. The wait is the probe's query.timeout_ms plus --timeout, so a long query is answered
 * (interrupted by the probe) rather than abandoned. */
static cJSON *run_query(const struct cli_opts *o, const char *sql)
{
    struct pb_err err = {0};
    struct dap_client dc;
    if (cli_open(o, &dc) < 0)
        return NULL;
    cli_query_wait(&dc, o->timeout_ms);
    cJSON *body = cli_query(&dc, sql, &err);
    cli_disconnect(&dc);
    if (!body)
        cli_error("%s", err.msg);
    return body;
}

/* The format named f, or -1 after printing the error. */
static int parse_format(const char *f)
{
    int fmt = strcmp(f, "table") == 0  ? CLI_FMT_TABLE
              : strcmp(f, "json") == 0 ? CLI_FMT_JSON
              : strcmp(f, "csv") == 0  ? CLI_FMT_CSV
                                       : -1;
    if (fmt < 0)
        cli_error("query: --format '%s': expected table, json or csv", f);
    return fmt;
}

int cli_cmd_query(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int fmt = CLI_FMT_TABLE, c;
    while ((c = getopt_long(argc, argv, "+f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if ((fmt = parse_format(optarg)) < 0)
                return CLI_USAGE;
            break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("query", argv);
        }
    }
    /* Options may also follow the SQL: probing -p PID query "SELECT 1" --format csv. */
    const char *sql = NULL;
    static const char eq[] = "--format=";
    for (; optind < argc; optind++) {
        const char *a = argv[optind], *f;
        if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
            if (optind + 1 >= argc) {
                cli_error("query: %s needs a value: table, json or csv", a);
                return CLI_USAGE;
            }
            f = argv[++optind];
        } else if (strncmp(a, eq, strlen(eq)) == 0) {
            f = a + strlen(eq);
        } else if (!sql) {
            sql = a;
            continue;
        } else {
            cli_error("query: unexpected argument '%s' (quote the SQL as one argument)", a);
            return CLI_USAGE;
        }
        if ((fmt = parse_format(f)) < 0)
            return CLI_USAGE;
    }
    if (!sql || !*sql) {
        cli_error("query: missing SQL: probing -p PID query \"SELECT ...\"");
        return CLI_USAGE;
    }
    cJSON *body = run_query(o, sql);
    if (!body)
        return CLI_FAIL;
    int rc = cli_query_print(body, fmt);
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(body, "note");
    /* A note: the result was cut (query.max_rows...), or a table is empty for a reason (no
     * NVIDIA GPU or driver). */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "truncated")) || cJSON_IsString(note))
        fprintf(stderr, "probing: note: %s\n",
                cJSON_IsString(note) ? cli_tx(note->valuestring) : "result truncated");
    cJSON_Delete(body);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cli_cmd_tables(const struct cli_opts *o, int argc, char **argv)
{
    int rc = cli_help_only("tables", argc, argv, tables_help);
    if (rc >= 0)
        return rc;
    if (argc - optind > 1) {
        cli_error("tables: unexpected argument '%s'", argv[optind + 1]);
        return CLI_USAGE;
    }
    const char *want = optind < argc ? argv[optind] : NULL;
    cJSON *body = run_query(o, "SELECT table_name, kind, column_name, type, description, "
                               "table_description FROM probing.tables");
    if (!body)
        return CLI_FAIL;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows"), *row;
    const char *last = "";
    int shown = 0;
    cJSON_ArrayForEach(row, rows)
    {
        const char *f[6];
        for (int i = 0; i < 6; i++) {
            const cJSON *v = cJSON_GetArrayItem(row, i);
            f[i] = cJSON_IsString(v) ? v->valuestring : "";
        }
        if (want && strcmp(want, f[0]) != 0)
            continue;
        if (strcmp(last, f[0]) != 0) {
            printf("%s%s (%s): %s\n", shown ? "\n" : "", cli_tx(f[0]), cli_tx(f[1]), cli_tx(f[5]));
            last = f[0];
            shown++;
        }
        printf("    %-14s %-8s %s\n", cli_tx(f[2]), cli_tx(f[3]), cli_tx(f[4]));
    }
    cJSON_Delete(body);
    if (want && !shown) {
        cli_error("tables: no table '%s': see 'probing -p PID tables'", want);
        return CLI_FAIL;
    }
    return CLI_OK;
}
