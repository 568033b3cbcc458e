/* SPDX-License-Identifier: MIT */
/* DAP: ConfigurationDoneRequest. Ends the client's configuration phase; the target was running
 * all along and keeps running, so there is nothing to start. */
#include "server/server.h"

int srv_req_configurationDone(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)c;
    (void)args;
    (void)body;
    return 0;
}
