/* SPDX-License-Identifier: MIT */
/* DAP: StepInRequest. The stopped thread runs to the next line, entering calls; the others resume. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int srv_req_stepIn(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return srv_step_request(c, args, PROBE_DBG_STEP_IN);
}
