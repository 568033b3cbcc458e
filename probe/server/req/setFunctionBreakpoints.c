/* SPDX-License-Identifier: MIT */
/* DAP: SetFunctionBreakpointsRequest. Replaces every function breakpoint (a function's name or
 * qualified name; conditions and hit conditions), set on the worker with the GIL; one
 * Breakpoint per requested one, in order. The job's parts are setBreakpoints' (srv_bpjob_*). */
#include "debugger/debugger.h"
#include "server/server.h"

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(args, "breakpoints")))
        return pb_err_set(&c->err, PB_EBADARG, "arguments.breakpoints: expected array");
    return srv_bpjob_parse(c, job, args);
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct srv_bpjob *j = job;
    j->rc.rc = dbg_set_function_breakpoints(j->specs, j->n, j->out, &j->rc.err);
}

const struct srv_job srv_job_setFunctionBreakpoints = {.size = sizeof(struct srv_bpjob),
                                                       .parse = parse,
                                                       .run = run,
                                                       .reply = srv_bpjob_reply,
                                                       .drop = srv_bpjob_drop};
