/* SPDX-License-Identifier: MIT */
/* evaluate (DAP: EvaluateRequest): contexts repl, clipboard, variables (statements allowed)
 * and watch, hover (one expression) evaluate in __main__'s globals, or with frameId in that
 * frame of a stopped thread (its globals and locals; assignments to locals stick). What the
 * code prints goes back as `output` events before the response; an exception is an error
 * response whose message is the traceback; for the debugging client, a result with children
 * gets a variablesReference.
 * A repl line starting with '%' is a probe console command (server/console.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "gil/gil.h"

static int render(struct srv_session *s, const struct probe_eval_result *r, const cJSON *args,
                  cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)err;
    for (int i = 0; i < r->nchunks; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "category", r->chunks[i].is_stderr ? "stderr" : "stdout");
        cJSON_AddStringToObject(ev, "output", r->chunks[i].text);
        srv_session_event(s, "output", ev);
    }
    if (r->exc_type) {
        const char *tb = r->traceback ? r->traceback : r->exc_type;
        size_t n = strlen(tb);
        *long_msg = strdup(tb);
        if (*long_msg && n > 0 && (*long_msg)[n - 1] == '\n')
            (*long_msg)[n - 1] = 0; /* a message, not a line */
        return *long_msg ? PB_EUNKNOWN : pb_err_set(err, PB_EUNKNOWN, "%s", r->exc_type);
    }
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(args, "context");
    int expr = cJSON_IsString(ctx) &&
               (strcmp(ctx->valuestring, "watch") == 0 || strcmp(ctx->valuestring, "hover") == 0);
    cJSON_AddStringToObject(body, "result", r->value ? r->value : expr ? "None" : "");
    if (r->type || expr)
        cJSON_AddStringToObject(body, "type", r->type ? r->type : "NoneType");
    srv_json_children(body, r->var_ref, r->indexed, r->named);
    return 0;
}

int srv_req_evaluate(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const char *expr = NULL, *context = "repl";
    long long frame_id = PROBE_EVAL_MAIN;
    int rc;
    if ((rc = dap_arg_str(args, "expression", &expr, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "context", &context, &c->err)) < 0)
        return rc;
    if (!expr)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.expression: expected string");
    if ((rc = dap_arg_int(args, "frameId", &frame_id, &c->err)) < 0)
        return rc;
    if (rc == 0 && frame_id < 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.frameId: no frame %lld", frame_id);
    if (rc == 0 && srv_native_frame_id(frame_id))
        return pb_err_set(&c->err, PB_EBADARG,
                          "frame %lld is a native frame: evaluate in a "
                          "Python frame of the call stack",
                          frame_id);
    int mode;
    if (strcmp(context, "watch") == 0 || strcmp(context, "hover") == 0)
        mode = PROBE_EVAL_EXPRESSION;
    else if (strcmp(context, "repl") == 0 || strcmp(context, "clipboard") == 0 ||
             strcmp(context, "variables") == 0)
        mode = PROBE_EVAL_STATEMENTS;
    else
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.context: unknown context '%s' "
                          "(expected repl, watch, hover, clipboard or variables)",
                          context);
    const char *p = expr + strspn(expr, " \t");
    if (strcmp(context, "repl") == 0 && *p == '%')
        return srv_console_command(c, p, body);
    /* References hold objects until the debugging client resumes or leaves: only it gets
     * them (another client's results would be held with nobody to release them). */
    return srv_eval_request(c, expr, mode, frame_id, srv_session_is_debugger(c->s), args, render);
}
