/* SPDX-License-Identifier: MIT */
/* DAP: StepOutRequest. The stopped thread runs until its function returns; the others resume. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int srv_req_stepOut(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return srv_step_request(c, args, PROBE_DBG_STEP_OUT);
}
