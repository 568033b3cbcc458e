/* SPDX-License-Identifier: MIT */
/* `probing -p PID query "SQL" [--format table|json|csv]` and `probing -p PID tables [NAME]`:
 * SQL over the probe's tables (docs/tables.md) through probing/query, rendered as an aligned
 * table (default), a JSON array of objects, or RFC 4180 CSV. A result cut by query.max_rows or
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

/* Text of a cell (numbers as integers when integral). Returns a malloc'd string, or NULL for
 * SQL NULL. */
static char *cell_text(const cJSON *v)
{
    char buf[64];
    if (cJSON_IsString(v))
        return strdup(v->valuestring);
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(long long)d)
            snprintf(buf, sizeof buf, "%.0f", d);
        else
            dap_number_text(d, buf, sizeof buf); /* digits that read back as d */
        return strdup(buf);
    }
    return NULL;
}

static void csv_field(const char *s)
{
    if (!s)
        return; /* NULL: an empty field */
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

int cli_query_print(const cJSON *body, int fmt)
{
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(body, "columns");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows");
    int ncols = cJSON_GetArraySize(cols);
    size_t nrows = (size_t)cJSON_GetArraySize(rows);
    if (fmt == CLI_FMT_JSON) {
        cJSON *out = cJSON_CreateArray();
        const cJSON *row;
        cJSON_ArrayForEach(row, rows)
        {
            cJSON *o = cJSON_CreateObject();
            for (int c = 0; c < ncols; c++) {
                const cJSON *v = cJSON_GetArrayItem(row, c);
                double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
                /* Numbers exactly as they came (cJSON would print 15 digits). */
                cJSON *x = !cJSON_IsNumber(v) ? cJSON_Duplicate(v, 1)
                           : d > -9007199254740992.0 && d < 9007199254740992.0 &&
                                   d == (double)(long long)d
                               ? dap_json_int((long long)d)
                               : dap_json_real(d);
                cJSON_AddItemToObject(o, cJSON_GetArrayItem(cols, c)->valuestring, x);
            }
            cJSON_AddItemToArray(out, o);
        }
        char *s = cJSON_Print(out);
        puts(s ? s : "[]");
        cJSON_free(s);
        cJSON_Delete(out);
        return 0;
    }
    const char **names = calloc((size_t)ncols + 1, sizeof *names);
    char **cells = calloc(nrows * (size_t)ncols + 1, sizeof *cells);
    if (!names || !cells) {
        free(names);
        free(cells);
        return -1;
    }
    for (int c = 0; c < ncols; c++)
        names[c] = cJSON_GetArrayItem(cols, c)->valuestring;
    size_t r = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        for (int c = 0; c < ncols; c++)
            cells[r * (size_t)ncols + (size_t)c] = cell_text(cJSON_GetArrayItem(row, c));
        r++;
    }
    if (fmt == CLI_FMT_CSV) {
        for (int c = 0; c < ncols; c++) {
            if (c)
                putchar(',');
            csv_field(names[c]);
        }
        fputs("\r\n", stdout);
        for (r = 0; r < nrows; r++) {
            for (int c = 0; c < ncols; c++) {
                if (c)
                    putchar(',');
                csv_field(cells[r * (size_t)ncols + (size_t)c]);
            }
            fputs("\r\n", stdout);
        }
    } else {
        char *t = pb_table_render(ncols, names, nrows, (const char *const *)cells);
        fputs(t ? t : "", stdout);
        printf("(%zu row%s)\n", nrows, nrows == 1 ? "" : "s");
        free(t);
    }
    for (r = 0; r < nrows * (size_t)ncols; r++)
        free(cells[r]);
    free(cells);
    free(names);
    return 0;
}

void cli_query_wait(struct dap_client *dc, int base_ms)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "key", "query.timeout_ms");
    if (dap_client_request(dc, "probing/config", args, &body, &err) == 0) {
        const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "settings"), 0);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "value");
        if (cJSON_IsString(v))
            dc->timeout_ms = base_ms + atoi(v->valuestring);
    }
    cJSON_Delete(body);
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
    cJSON *body = NULL, *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sql", sql);
    int rc = dap_client_request(&dc, "probing/query", args, &body, &err);
    cli_disconnect(&dc);
    if (rc < 0) {
        cli_error("%s", err.msg);
        return NULL;
    }
    return body;
}

int cli_cmd_query(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int fmt = CLI_FMT_TABLE, c;
    while ((c = getopt_long(argc, argv, "+f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "table") == 0)
                fmt = CLI_FMT_TABLE;
            else if (strcmp(optarg, "json") == 0)
                fmt = CLI_FMT_JSON;
            else if (strcmp(optarg, "csv") == 0)
                fmt = CLI_FMT_CSV;
            else {
                cli_error("query: --format '%s': expected table, json or csv", optarg);
                return CLI_USAGE;
            }
            break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("query", argv);
        }
    }
    /* Options may also follow the SQL: probing -p PID query "SELECT 1" --format csv. */
    const char *sql = NULL;
    for (; optind < argc; optind++) {
        if (strcmp(argv[optind], "--format") == 0 || strcmp(argv[optind], "-f") == 0) {
            if (optind + 1 >= argc) {
                cli_error("query: %s needs a value: table, json or csv", argv[optind]);
                return CLI_USAGE;
            }
            const char *f = argv[++optind];
            fmt = strcmp(f, "json") == 0 ? CLI_FMT_JSON : strcmp(f, "csv") == 0 ? CLI_FMT_CSV
                  : strcmp(f, "table") == 0 ? CLI_FMT_TABLE : -1;
            if (fmt < 0) {
                cli_error("query: --format '%s': expected table, json or csv", f);
                return CLI_USAGE;
            }
        } else if (strncmp(argv[optind], "--format=", 9) == 0) {
            const char *f = argv[optind] + 9;
            fmt = strcmp(f, "json") == 0 ? CLI_FMT_JSON : strcmp(f, "csv") == 0 ? CLI_FMT_CSV
                  : strcmp(f, "table") == 0 ? CLI_FMT_TABLE : -1;
            if (fmt < 0) {
                cli_error("query: --format '%s': expected table, json or csv", f);
                return CLI_USAGE;
            }
        } else if (!sql) {
            sql = argv[optind];
        } else {
            cli_error("query: unexpected argument '%s' (quote the SQL as one argument)",
                      argv[optind]);
            return CLI_USAGE;
        }
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
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "truncated")))
        fprintf(stderr, "probing: note: %s\n",
                cJSON_IsString(note) ? note->valuestring : "result truncated");
    cJSON_Delete(body);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cli_cmd_tables(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': tables_help(); return CLI_OK;
        default: return cli_bad_option("tables", argv);
        }
    }
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
            printf("%s%s (%s): %s\n", shown ? "\n" : "", f[0], f[1], f[5]);
            last = f[0];
            shown++;
        }
        printf("    %-14s %-8s %s\n", f[2], f[3], f[4]);
    }
    cJSON_Delete(body);
    if (want && !shown) {
        cli_error("tables: no table '%s': see 'probing -p PID tables'", want);
        return CLI_FAIL;
    }
    return CLI_OK;
}
