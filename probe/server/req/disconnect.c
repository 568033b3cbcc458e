/* SPDX-License-Identifier: MIT */
/* DAP: DisconnectRequest. The target keeps running (we never launched it, so terminateDebuggee
 * is not honoured): the debugging client's breakpoints and tracing go and stopped threads
 * resume; the connection is closed after the response. */
#include "server/server.h"

int srv_req_disconnect(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)args;
    (void)body;
    srv_debugger_release(c->s);
    srv_session_close_after_reply(c->s);
    return 0;
}
