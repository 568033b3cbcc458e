/* SPDX-License-Identifier: MIT */
/* DAP: AttachRequest. The process is already running and the probe is in it, so attaching is
 * a matter of admission: over TCP the client must present the token ("token" argument, compared
 * in constant time) or the connection is closed. "probingClient": "cli" marks a CLI client, which
 * does not take the debugger's seat. */
#include <string.h>

#include "server/server.h"
#include "core/core.h"

int dap_req_attach(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    const char *token = NULL, *client = NULL;
    if (dap_arg_str(args, "token", &token, &c->err) < 0 ||
        dap_arg_str(args, "probingClient", &client, &c->err) < 0) {
        if (dap_session_transport(c->s) == DAP_TRANSPORT_TCP)
            dap_session_close_after_reply(c->s);
        return c->err.code;
    }
    if (dap_session_transport(c->s) == DAP_TRANSPORT_TCP) {
        if (!probe_token_check(token)) {
            dap_session_close_after_reply(c->s);
            return pb_err_set(&c->err, PB_EAUTH,
                              "attach refused: wrong or missing token (arguments.token)");
        }
        dap_session_set_authed(c->s);
    }
    int debugger = !(client && strcmp(client, "cli") == 0);
    if (debugger && dap_debugger_claim(c->s, &c->err) < 0)
        return c->err.code;
    dap_session_set_attached(c->s, debugger);
    return 0;
}
