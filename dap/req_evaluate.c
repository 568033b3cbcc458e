/* SPDX-License-Identifier: MIT */
/* evaluate (DAP: EvaluateRequest) on a running target: contexts repl, clipboard (statements
 * allowed) and watch, hover (one expression) evaluate in __main__'s globals. What the code
 * prints goes back as `output` events before the response; an exception is an error response
 * whose message is the traceback. A repl line starting with '%' is a probe console command
 * (console.c). Frames: none can be selected yet (the target is never stopped), so a frameId
 * is refused with a message that says whether the frame exists at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "probe.h"
#include "snapshot.h"

static int render(struct dap_session *s, const struct probe_eval_result *r, const cJSON *args,
                  cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)err;
    for (int i = 0; i < r->nchunks; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "category", r->chunks[i].is_stderr ? "stderr" : "stdout");
        cJSON_AddStringToObject(ev, "output", r->chunks[i].text);
        dap_session_event(s, "output", ev);
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
    int expr = cJSON_IsString(ctx) && (strcmp(ctx->valuestring, "watch") == 0 ||
                                       strcmp(ctx->valuestring, "hover") == 0);
    cJSON_AddStringToObject(body, "result", r->value ? r->value : expr ? "None" : "");
    if (r->type || expr)
        cJSON_AddStringToObject(body, "type", r->type ? r->type : "NoneType");
    cJSON_AddNumberToObject(body, "variablesReference", 0);
    return 0;
}

/* frameId refers to (thread << 12) | depth (see stackTrace). Loop thread; no GIL. */
static int refuse_frame(struct dap_ctx *c, long long frame_id)
{
    long tid = (long)(frame_id >> 12);
    int depth = (int)(frame_id & 0xfff);
    struct probe_snapshot s = {0};
    int exists = 0;
    if (frame_id >= 0 && probe_pyrt_snapshot(&s, 0, depth + 1, &c->err) == 0) {
        const struct probe_thread *t = dap_snapshot_find(&s, tid);
        exists = t && depth < t->nframes;
    }
    probe_snapshot_free(&s);
    if (!exists)
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.frameId: no frame %lld (thread %ld has no frame at depth %d)",
                          frame_id, tid, depth);
    return pb_err_set(&c->err, PB_EBADARG,
                      "arguments.frameId: evaluating in a frame's scope is not supported yet "
                      "(the target keeps running); leave frameId out to evaluate in __main__");
}

int dap_req_evaluate(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    const char *expr = NULL, *context = "repl";
    long long frame_id = -1;
    int rc;
    if ((rc = dap_arg_str(args, "expression", &expr, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "context", &context, &c->err)) < 0)
        return rc;
    if (!expr)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.expression: expected string");
    if ((rc = dap_arg_int(args, "frameId", &frame_id, &c->err)) < 0)
        return rc;
    if (rc == 0)
        return refuse_frame(c, frame_id);
    int mode;
    if (strcmp(context, "watch") == 0 || strcmp(context, "hover") == 0)
        mode = PROBE_EVAL_EXPRESSION;
    else if (strcmp(context, "repl") == 0 || strcmp(context, "clipboard") == 0 ||
             strcmp(context, "variables") == 0)
        mode = PROBE_EVAL_STATEMENTS;
    else
        return pb_err_set(&c->err, PB_EBADARG, "arguments.context: unknown context '%s' "
                          "(expected repl, watch, hover, clipboard or variables)", context);
    const char *p = expr + strspn(expr, " \t");
    if (strcmp(context, "repl") == 0 && *p == '%')
        return dap_console_command(c, p, body);
    return dap_eval_request(c, expr, mode, args, render);
}
