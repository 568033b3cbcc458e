/* SPDX-License-Identifier: MIT */
/* probing/torch (custom; docs/protocol.md): perf --torch in the target. Arguments: action
 * ("start" | "stop" | "status", default "status"), every (1 to 1000000, start only; default 10 at
 * the first start, unchanged when already running). The tracer runs on the worker under the GIL (torch/torch.c); the body carries its state
 * (running, step, tracedSteps, every, stepDetection, memory, rank, backward, torch, notes, and
 * started / stopped). */
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "probe.h"
#include "torch/torch.h"

struct torchjob {
    struct dap_pending *p;
    int action, every;
    cJSON *body; /* filled on the worker */
    int rc;
    struct pb_err err;
};

/* Worker thread, GIL held. */
static void torch_with_gil(void *arg)
{
    struct torchjob *j = arg;
    j->rc = probe_torch_run(j->action, j->every, j->body, &j->err);
}

/* Loop thread. */
static void torch_done(void *arg, int gil_rc)
{
    struct torchjob *j = arg;
    if (gil_rc < 0) {
        dap_gil_busy_error(gil_rc, probe_setting_gil_timeout_ms(), &j->err);
        j->rc = gil_rc;
    }
    if (j->rc < 0) {
        dap_pending_finish(j->p, j->rc, NULL, &j->err);
        cJSON_Delete(j->body);
    } else {
        dap_pending_finish(j->p, 0, j->body, NULL);
    }
    free(j);
}

int dap_req_probing_torch(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    const char *action = NULL;
    long long every = -1;
    int rc, act;
    if ((rc = dap_arg_str(args, "action", &action, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "every", &every, &c->err)) < 0)
        return rc;
    if (!action || strcmp(action, "status") == 0)
        act = PROBE_TORCH_STATUS;
    else if (strcmp(action, "start") == 0)
        act = PROBE_TORCH_START;
    else if (strcmp(action, "stop") == 0)
        act = PROBE_TORCH_STOP;
    else
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.action: expected \"start\", \"stop\" or \"status\"");
    if (every == -1)
        every = 0; /* the tracer's default (TORCH_EVERY_DEFAULT), or unchanged when running */
    else if (every < 1 || every > 1000000)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.every: expected 1 to 1000000");
    struct torchjob *j = calloc(1, sizeof *j);
    if (!j || !(j->body = cJSON_CreateObject())) {
        free(j);
        return pb_err_set(&c->err, PB_EUNKNOWN, "out of memory");
    }
    j->action = act;
    j->every = (int)every;
    j->p = dap_ctx_defer(c);
    if (!j->p || probe_gil_submit(torch_with_gil, torch_done, j, probe_setting_gil_timeout_ms()) < 0) {
        if (j->p)
            dap_pending_finish(j->p, PB_EUNKNOWN, NULL, NULL);
        cJSON_Delete(j->body);
        free(j);
    }
    return DAP_DEFERRED;
}
