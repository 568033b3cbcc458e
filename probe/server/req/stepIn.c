/* SPDX-License-Identifier: MIT */
/* DAP: StepInRequest. The stopped thread runs to the next line, entering calls; the others resume. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int dap_req_stepIn(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return dap_step_request(c, args, PROBE_DBG_STEP_IN);
}
