/* SPDX-License-Identifier: MIT */
/* DAP: ScopesRequest. Locals and Globals of a stopped frame (arguments.frameId), each with a
 * variablesReference; read on the worker with the GIL. */
#include "debugger/debugger.h"
#include "server/server.h"

struct scopesjob {
    struct dap_job_rc rc;
    long long frame_id;
    struct probe_dbg_scope scopes[2];
};

static int parse(struct dap_ctx *c, const cJSON *args, void *job)
{
    struct scopesjob *j = job;
    int rc = dap_arg_int(args, "frameId", &j->frame_id, &c->err);
    if (rc > 0)
        rc = pb_err_set(&c->err, PB_EBADARG, "arguments.frameId: expected integer");
    return rc;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct scopesjob *j = job;
    j->rc.rc = probe_dbg_scopes(j->frame_id, j->scopes, &j->rc.err);
}

static int reply(struct dap_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct scopesjob *j = job;
    static const char *const names[2][2] = {{"Locals", "locals"}, {"Globals", "globals"}};
    cJSON *arr = cJSON_AddArrayToObject(body, "scopes");
    for (int i = 0; i < 2; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", names[i][0]);
        cJSON_AddStringToObject(o, "presentationHint", names[i][1]);
        cJSON_AddNumberToObject(o, "variablesReference", (double)j->scopes[i].ref);
        if (j->scopes[i].named >= 0)
            cJSON_AddNumberToObject(o, "namedVariables", (double)j->scopes[i].named);
        cJSON_AddBoolToObject(o, "expensive", 0);
        cJSON_AddItemToArray(arr, o);
    }
    return 0;
}

const struct dap_job dap_job_scopes = {sizeof(struct scopesjob), parse, run, reply, NULL};
