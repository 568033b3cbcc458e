/* SPDX-License-Identifier: MIT */
/* DAP: AttachRequest. The process is already running and the probe is in it, so attaching is
 * a matter of admission: over TCP the client must present the token ("token" argument, compared
 * in constant time) or the connection is closed. "probingClient": "cli" marks a CLI client, which
 * does not take the debugger's seat. "nativeFrames": "off" (default), "merged" or "all": whether
 * this session's stackTrace shows native frames between the Python ones (nativeframes.c). */
#include <string.h>

#include "server/server.h"
#include "core/core.h"

int srv_req_attach(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    const char *token = NULL, *client = NULL;
    if (dap_arg_str(args, "token", &token, &c->err) < 0 ||
        dap_arg_str(args, "probingClient", &client, &c->err) < 0) {
        if (srv_session_transport(c->s) == SRV_TRANSPORT_TCP)
            srv_session_close_after_reply(c->s);
        return c->err.code;
    }
    if (srv_session_transport(c->s) == SRV_TRANSPORT_TCP) {
        if (!core_token_check(token)) {
            srv_session_close_after_reply(c->s);
            return pb_err_set(&c->err, PB_EAUTH,
                              "attach refused: wrong or missing token (arguments.token)");
        }
        srv_session_set_authed(c->s);
    }
    const char *native = NULL;
    int mode = SRV_NATIVE_OFF;
    if (dap_arg_str(args, "nativeFrames", &native, &c->err) < 0)
        return c->err.code;
    if (native && strcmp(native, "merged") == 0)
        mode = SRV_NATIVE_MERGED;
    else if (native && strcmp(native, "all") == 0)
        mode = SRV_NATIVE_ALL;
    else if (native && strcmp(native, "off") != 0)
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.nativeFrames: '%.64s' is not one of \"off\", \"merged\", "
                          "\"all\" (native frames in the call stack)",
                          native);
    int debugger = !(client && strcmp(client, "cli") == 0);
    if (debugger && srv_debugger_claim(c->s, &c->err) < 0)
        return c->err.code;
    srv_session_set_attached(c->s, debugger);
    srv_session_set_native_frames(c->s, mode);
    return 0;
}
