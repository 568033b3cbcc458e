/* SPDX-License-Identifier: MIT */
/* The fake probe's perf --torch (and perf --comm) for dap/ unit tests and fuzz replays: start answers as a
 * running tracer with the given every (started the first time, updated after), stop as a
 * stopped one (stopped only when it ran), status with the current state; "every" 999999 stands
 * for a target without torch and fails as the real probe does. No Python. */
#include <cJSON.h>

#include "torch/torch.h"

static int running, every_now = 10;

int torch_run(int action, int every, struct cJSON *out, struct pb_err *err)
{
    if (action == PROBE_TORCH_START) {
        if (every == 999999)
            return pb_err_set(err, PB_ESTATE,
                              "torch is not imported in process 1: start "
                              "tracing once the job has imported torch");
        cJSON_AddBoolToObject(out, "started", !running);
        running = 1;
        every_now = every;
    } else if (action == PROBE_TORCH_STOP) {
        cJSON_AddBoolToObject(out, "stopped", running);
        running = 0;
    }
    cJSON_AddBoolToObject(out, "running", running);
    cJSON_AddNumberToObject(out, "step", running ? 3 : 0);
    cJSON_AddNumberToObject(out, "every", every_now);
    return 0;
}

/* perf --comm: start answers as a started recorder, stop as stopped when it ran. */
static int comm_running;

int torch_comm_run(int action, int ddp, struct cJSON *out, struct pb_err *err)
{
    (void)err;
    (void)ddp;
    if (action == PROBE_TORCH_START)
        cJSON_AddBoolToObject(out, "started", !comm_running);
    else if (action == PROBE_TORCH_STOP)
        cJSON_AddBoolToObject(out, "stopped", comm_running);
    if (action != PROBE_TORCH_STATUS)
        comm_running = action == PROBE_TORCH_START;
    cJSON_AddBoolToObject(out, "running", comm_running);
    return 0;
}
