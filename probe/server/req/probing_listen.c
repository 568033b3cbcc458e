/* SPDX-License-Identifier: MIT */
/* probing/listen (custom; docs/protocol.md): also serve DAP on TCP at arguments.address
 * ("HOST:PORT", port 0 picks one) for clients that present arguments.token in `attach`. Only
 * accepted on the local socket (whoever reaches it already has the target's uid). */
#include "server/server.h"
#include "core/core.h"

int srv_req_probing_listen(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const char *address = NULL, *token = NULL;
    int rc;
    if ((rc = dap_arg_str(args, "address", &address, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "token", &token, &c->err)) < 0)
        return rc;
    if (!address)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.address: expected string");
    if (!token)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.token: expected string");
    rc = srv_tcp_listen(address, token, &c->err);
    if (rc < 0)
        return rc;
    cJSON_AddStringToObject(body, "address", core_info_get()->tcp_address);
    return 0;
}
