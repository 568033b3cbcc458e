/* SPDX-License-Identifier: MIT */
/* probing/pause (custom; docs/protocol.md): stop every Python thread, from any client.
 * Arguments: hold (boolean, default true): stay stopped without a debugging client until
 * probing/resume. The pause itself is pause's job (req/pause.c). */
#include "debugger/debugger.h"
#include "server/server.h"

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct srv_pausejob *j = job;
    int hold = 1;
    int rc = dap_arg_bool(args, "hold", &hold, &c->err);
    if (rc < 0)
        return rc;
    j->hold = hold;
    dbg_pause_begin();
    j->begun = 1;
    return 0;
}

const struct srv_job srv_job_probing_pause = {.size = sizeof(struct srv_pausejob),
                                              .parse = parse,
                                              .run = srv_pause_run,
                                              .reply = srv_reply_empty,
                                              .drop = srv_pause_drop};
