/* SPDX-License-Identifier: MIT */
/* DAP: ContinueRequest. Every parked thread resumes (all-stop); answered on the loop, so it
 * works even while a C extension holds the GIL. */
#include "debugger/debugger.h"
#include "server/server.h"

int srv_req_continue(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)c;
    (void)args;
    dbg_resume_all(0);
    cJSON_AddBoolToObject(body, "allThreadsContinued", 1);
    return 0;
}
