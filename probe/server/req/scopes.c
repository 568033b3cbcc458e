/* SPDX-License-Identifier: MIT */
/* DAP: ScopesRequest. Locals and Globals of a stopped frame (arguments.frameId), each with a
 * variablesReference; read on the worker with the GIL. A native frame (nativeFrames) has no
 * scope: answered on the loop with none. */
#include <errno.h>
#include <stdlib.h>

#include "core/settings.h"
#include "debugger/debugger.h"
#include "server/server.h"

struct scopesjob {
    struct srv_job_rc rc;
    long long frame_id;
    struct probe_dbg_scope scopes[2];
};

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct scopesjob *j = job;
    j->rc.rc = dbg_scopes(j->frame_id, j->scopes, &j->rc.err);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
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

static const struct srv_job job_scopes = {
    .size = sizeof(struct scopesjob), .parse = NULL, .run = run, .reply = reply, .drop = NULL};

int srv_req_scopes(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    long long id = 0;
    int rc = dap_arg_int(args, "frameId", &id, &c->err);
    if (rc > 0)
        rc = pb_err_set(&c->err, PB_EBADARG, "arguments.frameId: expected integer");
    if (rc < 0)
        return rc;
    if (srv_native_frame_id(id)) {
        cJSON_AddArrayToObject(body, "scopes");
        return 0;
    }
    struct scopesjob *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(&c->err, -ENOMEM, "out of memory: 'scopes' was not run");
    j->frame_id = id;
    return srv_job_submit(c, &job_scopes, j, SRV_F_GIL, core_setting_gil_timeout_ms());
}
