/* SPDX-License-Identifier: MIT */
/* probing/eval (custom; docs/protocol.md): run code in the target's __main__ and return what
 * the evaluating thread printed, the result's bounded repr, or the exception with its
 * traceback, all in the body (the CLI's eval and repl). mode "complete" only asks whether the
 * input is a complete statement, as Python's REPL decides (the repl's continuation prompt). */
#include <string.h>

#include "server/server.h"
#include "gil/gil.h"

static int render(struct srv_session *s, const struct probe_eval_result *r, const cJSON *args,
                  cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)s;
    (void)err;
    (void)long_msg;
    cJSON *out = cJSON_AddArrayToObject(body, "output");
    for (int i = 0; i < r->nchunks; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "category", r->chunks[i].is_stderr ? "stderr" : "stdout");
        cJSON_AddStringToObject(o, "output", r->chunks[i].text);
        cJSON_AddItemToArray(out, o);
    }
    cJSON_AddBoolToObject(body, "outputTruncated", r->output_truncated);
    if (r->value) {
        cJSON_AddStringToObject(body, "result", r->value);
        cJSON_AddStringToObject(body, "type", r->type ? r->type : "?");
    } else {
        cJSON_AddNullToObject(body, "result");
        cJSON_AddNullToObject(body, "type");
    }
    if (r->exc_type) {
        cJSON *e = cJSON_AddObjectToObject(body, "exception");
        cJSON_AddStringToObject(e, "type", r->exc_type);
        cJSON_AddStringToObject(e, "traceback", r->traceback ? r->traceback : "");
    } else {
        cJSON_AddNullToObject(body, "exception");
    }
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(args, "mode");
    if (cJSON_IsString(mode) && strcmp(mode->valuestring, "complete") == 0)
        cJSON_AddBoolToObject(body, "complete", r->complete);
    return 0;
}

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    const char *code = NULL, *mode = "statements";
    int rc;
    if ((rc = dap_arg_str(args, "code", &code, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "mode", &mode, &c->err)) < 0)
        return rc;
    if (!code)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.code: expected string");
    int m;
    if (strcmp(mode, "statements") == 0)
        m = PROBE_EVAL_STATEMENTS;
    else if (strcmp(mode, "expression") == 0)
        m = PROBE_EVAL_EXPRESSION;
    else if (strcmp(mode, "complete") == 0)
        m = PROBE_EVAL_CHECK;
    else
        return pb_err_set(
            &c->err, PB_EBADARG,
            "arguments.mode: expected \"statements\", \"expression\" or \"complete\"");
    return srv_eval_init(c, job, code, m, PROBE_EVAL_MAIN, 0, args, render);
}

const struct srv_job srv_job_probing_eval = {.size = sizeof(struct srv_evaljob),
                                             .parse = parse,
                                             .run = srv_eval_run,
                                             .reply = srv_eval_reply,
                                             .drop = srv_eval_drop};
