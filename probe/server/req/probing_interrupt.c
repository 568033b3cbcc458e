/* SPDX-License-Identifier: MIT */
/* probing/interrupt (custom; docs/protocol.md): raise KeyboardInterrupt in the evaluation that
 * is running (probing/eval, evaluate), in the probe's worker thread only: the target's own
 * threads are never touched. Answered at once; the evaluation's own response tells the end.
 * nativeWait: the system call the evaluation waits in, when it does (the interrupt takes effect
 * only when that call returns to Python code). */
#include "server/server.h"
#include "gil/gil.h"

int srv_req_probing_interrupt(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)args;
    int rc = gil_eval_interrupt();
    if (rc < 0)
        return pb_err_set(&c->err, rc, "cannot start the interrupting thread: %s", pb_strerror(rc));
    cJSON_AddBoolToObject(body, "interrupted", rc == 1);
    long nr = rc == 1 ? gil_eval_native_wait() : -1;
    if (nr >= 0)
        cJSON_AddNumberToObject(body, "nativeWait", (double)nr);
    return 0;
}
