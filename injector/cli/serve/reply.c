/* SPDX-License-Identifier: MIT */
/* `probing serve`'s replies, used by the server (serve.c) and the API (api.c) alike: a JSON
 * body, a JSON error, and a request's JSON body read. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

void cli_serve_json(struct cli_serve_reply *r, int status, cJSON *v)
{
    r->body = dap_json_print(v, 0);
    r->len = strlen(r->body);
    r->type = "application/json";
    r->status = status;
    cJSON_Delete(v);
}

void cli_serve_error(struct cli_serve_reply *r, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    free(r->body);
    cli_serve_json(r, status, o);
}

cJSON *cli_serve_body(const char *body, struct cli_serve_reply *r)
{
    cJSON *j = cJSON_Parse(body);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        cli_serve_error(r, 400, "the request body must be a JSON object");
        return NULL;
    }
    return j;
}
