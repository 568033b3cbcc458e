/* SPDX-License-Identifier: MIT */
/* DAP: PauseRequest. Every Python thread stops at its next line (all-stop); set up on the
 * worker with the GIL. The `stopped` event follows the response (DAP): threads in native code
 * stop when they return to Python, and if none stops soon the target is announced stopped all
 * the same. probing/pause shares this job (req/probing_pause.c). */
#include "debugger/debugger.h"
#include "server/server.h"

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    (void)c;
    (void)args;
    struct srv_pausejob *j = job;
    j->hold = -1;
    dbg_pause_begin();
    j->begun = 1;
    return 0;
}

/* Worker thread, GIL held. */
void srv_pause_run(void *job)
{
    struct srv_pausejob *j = job;
    j->rc.rc = dbg_pause(j->hold, &j->rc.err);
    j->ran = 1;
}

/* After the response: the held-back `stopped` may go. */
void srv_pause_drop(void *job)
{
    struct srv_pausejob *j = job;
    if (j->begun)
        dbg_pause_end(j->ran && j->rc.rc == 0);
}

const struct srv_job srv_job_pause = {.size = sizeof(struct srv_pausejob),
                                      .parse = parse,
                                      .run = srv_pause_run,
                                      .reply = srv_reply_empty,
                                      .drop = srv_pause_drop};
