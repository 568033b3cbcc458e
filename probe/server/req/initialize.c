/* SPDX-License-Identifier: MIT */
/* DAP: InitializeRequest. Answers with the capabilities derived from the dispatch table (only
 * what is implemented), then sends the `initialized` event after the response. */
#include "server/server.h"

int srv_req_initialize(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const char *adapter = NULL;
    if (dap_arg_str(args, "adapterID", &adapter, &c->err) < 0)
        return c->err.code;
    cJSON *caps = srv_capabilities();
    cJSON *item = caps ? caps->child : NULL;
    while (item) {
        cJSON *next = item->next;
        cJSON_AddItemToObject(body, item->string, cJSON_DetachItemViaPointer(caps, item));
        item = next;
    }
    cJSON_Delete(caps);
    return 0;
}

void srv_post_initialize(struct srv_session *s)
{
    srv_session_event(s, "initialized", NULL);
}
