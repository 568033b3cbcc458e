/* SPDX-License-Identifier: MIT */
/* What the CLI prints, the lowest layer every file may use: the one-line errors (and usage
 * errors of getopt), typed JSON getters of response bodies, and the pieces several commands
 * print the same way (frames' local variables, JSON output, a query's rows as a table, JSON or
 * CSV). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    /* Messages carry the target's names and paths: one line, no control characters. */
    fprintf(stderr, "probing: error: %s\n", n < 0 ? "out of memory" : cli_tx(msg));
    if (n >= 0)
        free(msg);
}

#define CLI_TX_RING 64

const char *cli_tx(const char *s)
{
    static char *ring[CLI_TX_RING]; /* the CLI prints from one thread */
    static unsigned next;
    if (!s || pb_term_clean(s))
        return s;
    char *e = pb_term_escape(s);
    if (!e)
        return "<out of memory>";
    free(ring[next]);
    ring[next] = e;
    next = (next + 1) % CLI_TX_RING;
    return e;
}

const char *cli_json_text(const cJSON *o, const char *k)
{
    return cli_tx(cli_json_str(o, k));
}

int cli_bad_option(const char *cmd, char **argv)
{
    if (strcmp(cmd, "probing") == 0) {
        cli_error("unknown option '%s': see 'probing --help'", argv[optind - 1]);
        return CLI_USAGE;
    }
    if (optopt && optopt != '?')
        cli_error("%s: unknown option or missing value for '-%c': see 'probing %s --help'", cmd,
                  optopt, cmd);
    else
        cli_error("%s: unknown option '%s': see 'probing %s --help'", cmd, argv[optind - 1], cmd);
    return CLI_USAGE;
}

int cli_unexpected_arg(const char *cmd, char **argv)
{
    cli_error("%s: unexpected argument '%s'", cmd, argv[optind]);
    return CLI_USAGE;
}

int cli_help_only(const char *cmd, int argc, char **argv, void (*help)(void))
{
    static const struct option longopts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c = getopt_long(argc, argv, "h", longopts, NULL);
    if (c == -1)
        return -1;
    if (c != 'h')
        return cli_bad_option(cmd, argv);
    help();
    return CLI_OK;
}

const char *cli_json_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double cli_json_num(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

int cli_json_true(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

int cli_print_body(cJSON *body, int json, void (*text)(const cJSON *))
{
    if (json)
        cli_print_json(body);
    else
        text(body);
    cJSON_Delete(body);
    return CLI_OK;
}

void cli_print_json(const cJSON *v)
{
    char *s = dap_json_print(v, 1);
    puts(s ? s : "null");
    cJSON_free(s);
}

void cli_print_locals(const cJSON *frame, const char *indent)
{
    const cJSON *locals = cJSON_GetObjectItemCaseSensitive(frame, "locals"), *l;
    cJSON_ArrayForEach(l, locals)
    {
        const char *v = cli_json_text(l, "value"), *type = cli_json_text(l, "type");
        printf("%s%s = %s  (%s)\n", indent, cli_json_text(l, "name"), v ? v : "<not read>",
               type ? type : "?");
    }
}

/* Text of a cell (numbers as integers when integral; strings with their control characters
 * escaped as cli_tx does, except newline and tab: CSV quotes them, the table shows them as
 * spaces). Returns a malloc'd string, or NULL for SQL NULL. */
static char *cell_text(const cJSON *v)
{
    char buf[64];
    if (cJSON_IsString(v))
        return pb_term_escape_lines(v->valuestring);
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
                cJSON *x =
                    !cJSON_IsNumber(v) ? cJSON_Duplicate(v, 1)
                    : d > -9007199254740992.0 && d < 9007199254740992.0 && d == (double)(long long)d
                        ? dap_json_int((long long)d)
                        : dap_json_real(d);
                cJSON_AddItemToObject(o, cJSON_GetArrayItem(cols, c)->valuestring, x);
            }
            cJSON_AddItemToArray(out, o);
        }
        char *s = dap_json_print(out, 1);
        puts(s ? s : "[]");
        cJSON_free(s);
        cJSON_Delete(out);
        return 0;
    }
    char **names = calloc((size_t)ncols + 1, sizeof *names); /* escaped, owned */
    char **cells = calloc(nrows * (size_t)ncols + 1, sizeof *cells);
    if (!names || !cells) {
        free(names);
        free(cells);
        return -1;
    }
    for (int c = 0; c < ncols; c++)
        names[c] = pb_term_escape_lines(cJSON_GetArrayItem(cols, c)->valuestring);
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
        char *t =
            pb_table_render(ncols, (const char *const *)names, nrows, (const char *const *)cells);
        fputs(t ? t : "", stdout);
        printf("(%zu row%s)\n", nrows, nrows == 1 ? "" : "s");
        free(t);
    }
    for (r = 0; r < nrows * (size_t)ncols; r++)
        free(cells[r]);
    for (int c = 0; c < ncols; c++)
        free(names[c]);
    free(cells);
    free(names);
    return 0;
}
