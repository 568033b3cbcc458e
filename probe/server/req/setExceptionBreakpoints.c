/* SPDX-License-Identifier: MIT */
/* DAP: SetExceptionBreakpointsRequest. filters: "raised" (stop where any exception is raised)
 * and "uncaught" (stop when one ends a thread), set on the worker with the GIL; one verified
 * Breakpoint per filter. */
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"

struct excjob {
    struct srv_job_rc rc;
    int raised, uncaught;
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct excjob *j = job;
    const cJSON *filters = cJSON_GetObjectItemCaseSensitive(args, "filters");
    if (!cJSON_IsArray(filters))
        return pb_err_set(&c->err, PB_EBADARG, "arguments.filters: expected array");
    const cJSON *f;
    cJSON_ArrayForEach(f, filters)
    {
        if (!cJSON_IsString(f))
            return pb_err_set(&c->err, PB_EBADARG, "arguments.filters: expected strings");
        if (strcmp(f->valuestring, "raised") == 0)
            j->raised = 1;
        else if (strcmp(f->valuestring, "uncaught") == 0)
            j->uncaught = 1;
        else
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.filters: unknown filter '%s' "
                              "(expected raised or uncaught)",
                              f->valuestring);
    }
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct excjob *j = job;
    j->rc.rc = dbg_set_exception_breakpoints(j->raised, j->uncaught, &j->rc.err);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct excjob *j = job;
    cJSON *out = cJSON_AddArrayToObject(body, "breakpoints");
    for (int i = 0; i < j->raised + j->uncaught; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "verified", 1);
        cJSON_AddItemToArray(out, o);
    }
    return 0;
}

const struct srv_job srv_job_setExceptionBreakpoints = {
    .size = sizeof(struct excjob), .parse = parse, .run = run, .reply = reply, .drop = NULL};
