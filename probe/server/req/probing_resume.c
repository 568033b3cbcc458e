/* SPDX-License-Identifier: MIT */
/* probing/resume (custom; docs/protocol.md): resume a target stopped by probing/pause or by the
 * debugger, from any client. Body: wasStopped. A debugging client learns it from a
 * `continued` event. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int srv_req_probing_resume(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)c;
    (void)args;
    int was = dbg_resume_all(1);
    cJSON_AddBoolToObject(body, "wasStopped", was);
    return 0;
}
