/* SPDX-License-Identifier: MIT */
/* probing/debugger (custom; docs/protocol.md): what the debugger has in place, read from the
 * interpreter on the worker with the GIL: stopped, breakpoints, raised, uncaught,
 * tracedThreads, monitoringTool, threadingHook, evalFrameHook, excepthook,
 * threadingExcepthook. */
#include "debugger/debugger.h"
#include "server/server.h"

struct censusjob {
    struct srv_job_rc rc;
    struct dbg_census c;
};

/* Worker thread, GIL held. */
static void run(void *job)
{
    dbg_census(&((struct censusjob *)job)->c);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct dbg_census *c = &((struct censusjob *)job)->c;
    cJSON_AddBoolToObject(body, "stopped", c->stopped);
    cJSON_AddNumberToObject(body, "breakpoints", c->breakpoints);
    cJSON_AddBoolToObject(body, "raised", c->raised);
    cJSON_AddBoolToObject(body, "uncaught", c->uncaught);
    cJSON_AddNumberToObject(body, "tracedThreads", c->traced_threads);
    if (c->monitoring_tool >= 0)
        cJSON_AddNumberToObject(body, "monitoringTool", c->monitoring_tool);
    else
        cJSON_AddNullToObject(body, "monitoringTool");
    cJSON_AddBoolToObject(body, "threadingHook", c->threading_hook);
    cJSON_AddBoolToObject(body, "evalFrameHook", c->eval_frame_hook);
    cJSON_AddNumberToObject(body, "entryHooks", c->entry_hooks);
    cJSON_AddBoolToObject(body, "excepthook", c->excepthook);
    cJSON_AddBoolToObject(body, "threadingExcepthook", c->threading_excepthook);
    return 0;
}

const struct srv_job srv_job_probing_debugger = {
    .size = sizeof(struct censusjob), .parse = NULL, .run = run, .reply = reply, .drop = NULL};
