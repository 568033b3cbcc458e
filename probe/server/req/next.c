/* SPDX-License-Identifier: MIT */
/* DAP: NextRequest. The stopped thread runs to the next line in the same function (or its caller); the others resume. Answered on the loop. */
#include "debugger/debugger.h"
#include "server/server.h"

int dap_req_next(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return dap_step_request(c, args, PROBE_DBG_STEP_OVER);
}
