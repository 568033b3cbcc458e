/* SPDX-License-Identifier: MIT */
/* `probing -p PID config [KEY[=VALUE]]`: list the probe's runtime settings, show one, or
 * change one (validated by the probe: the error names the allowed range). Through
 * probing/config; PROBING_<KEY> environment variables of the target set the same keys at
 * start. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf("usage: probing -p PID config [KEY[=VALUE]]\n"
           "\n"
           "Without arguments, list every runtime setting of the probe in the target with\n"
           "its value, default, allowed values and meaning. With KEY, show that setting;\n"
           "with KEY=VALUE, change it (live, until the process exits). The target's\n"
           "environment sets the same keys at start: PROBING_ + the key upper-cased with\n"
           "'.' as '_' (query.max_rows <- PROBING_QUERY_MAX_ROWS).\n"
           "\n"
           "Example: probing -p 4242 config history.interval_s=1\n");
}

static const char *field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

int cli_cmd_config(const struct cli_opts *o, int argc, char **argv)
{
    int rc = cli_help_only("config", argc, argv, help);
    if (rc >= 0)
        return rc;
    if (argc - optind > 1) {
        cli_error("config: unexpected argument '%s': one KEY or KEY=VALUE at a time",
                  argv[optind + 1]);
        return CLI_USAGE;
    }
    char key[128] = "";
    const char *value = NULL;
    if (optind < argc) {
        const char *a = argv[optind], *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
        if (kl == 0 || kl >= sizeof key) {
            cli_error("config: expected KEY or KEY=VALUE, got '%s'", a);
            return CLI_USAGE;
        }
        memcpy(key, a, kl);
        key[kl] = '\0';
        value = eq ? eq + 1 : NULL;
    }
    cJSON *args = cJSON_CreateObject();
    if (key[0])
        cJSON_AddStringToObject(args, "key", key);
    if (value)
        cJSON_AddStringToObject(args, "value", value);
    cJSON *body = cli_call(o, "config", "probing/config", args);
    if (!body)
        return CLI_FAIL;
    const cJSON *settings = cJSON_GetObjectItemCaseSensitive(body, "settings"), *s;
    if (key[0]) {
        s = cJSON_GetArrayItem(settings, 0);
        printf("%s = %s\n", field(s, "name"), field(s, "value"));
        if (!value) {
            const char *d = field(s, "default");
            printf("    %s (default %s; allowed %s)\n", field(s, "description"), d[0] ? d : "empty",
                   field(s, "allowed"));
        }
    } else {
        int n = cJSON_GetArraySize(settings), i = 0;
        const char *cols[] = {"name", "value", "default", "allowed", "description"};
        const char **cells = calloc((size_t)n * 5 + 1, sizeof *cells);
        cJSON_ArrayForEach(s, settings)
        {
            for (int k = 0; cells && k < 5; k++)
                cells[i * 5 + k] = field(s, cols[k]);
            i++;
        }
        char *t = cells ? pb_table_render(5, cols, (size_t)n, cells) : NULL;
        fputs(t ? t : "", stdout);
        free(t);
        free(cells);
    }
    cJSON_Delete(body);
    return CLI_OK;
}
