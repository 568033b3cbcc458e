/* SPDX-License-Identifier: MIT */
/* Rendering response bodies in the CLI: typed JSON getters and the pieces several commands
 * print the same way (frames' local variables, JSON output). */
#include <stdio.h>

#include "cli.h"

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
    char *s = cJSON_Print(v);
    puts(s ? s : "null");
    cJSON_free(s);
}

void cli_print_locals(const cJSON *frame, const char *indent)
{
    const cJSON *locals = cJSON_GetObjectItemCaseSensitive(frame, "locals"), *l;
    cJSON_ArrayForEach(l, locals)
    {
        const char *v = cli_json_str(l, "value"), *type = cli_json_str(l, "type");
        printf("%s%s = %s  (%s)\n", indent, cli_json_str(l, "name"), v ? v : "<not read>",
               type ? type : "?");
    }
}
