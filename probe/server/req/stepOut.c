/* SPDX-License-Identifier: MIT */
/* DAP: StepOutRequest. The stopped thread runs until its function returns; the others resume. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int dap_req_stepOut(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return dap_step_request(c, args, PROBE_DBG_STEP_OUT);
}
