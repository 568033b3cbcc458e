/* SPDX-License-Identifier: MIT */
/* DAP: DisconnectRequest. The target keeps running (we never launched it, so terminateDebuggee
 * is not honoured); the connection is closed after the response. */
#include "internal.h"

int dap_req_disconnect(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)args;
    (void)body;
    dap_session_close_after_reply(c->s);
    return 0;
}
