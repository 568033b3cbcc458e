/* SPDX-License-Identifier: MIT */
/* probing/torch and probing/comm (custom; docs/protocol.md): perf --torch and perf --comm in
 * the target. probing/comm takes action alone (also "flight_recorder": the state and
 * flightRecorderEntries; "sequence": each process group's sequence number, recorder or not:
 * torch, initialized, rank, groups, start; ddp, start only: give each DistributedDataParallel
 * module the recorder's comm hook, which stays) and answers the recorder's state (running, records, maxRecords,
 * functions, rank, pending, flightRecorder, torch, notes; started, stopped, left). probing/torch: Arguments: action
 * ("start" | "stop" | "status", default "status"), every (1 to 1000000, start only; default 10 at
 * the first start, unchanged when already running). The tracer runs on the worker under the GIL (torch/torch.c); the body carries its state
 * (running, step, tracedSteps, every, stepDetection, memory, rank, backward, torch, notes, and
 * started / stopped). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "torch/torch.h"

struct torchjob {
    struct srv_job_rc rc;
    int action, every, comm, ddp;
    cJSON *body; /* filled on the worker */
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct torchjob *j = job;
    const char *action = NULL;
    long long every = -1;
    int rc;
    if ((rc = dap_arg_str(args, "action", &action, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "every", &every, &c->err)) < 0)
        return rc;
    if (!action || strcmp(action, "status") == 0)
        j->action = PROBE_TORCH_STATUS;
    else if (strcmp(action, "start") == 0)
        j->action = PROBE_TORCH_START;
    else if (strcmp(action, "stop") == 0)
        j->action = PROBE_TORCH_STOP;
    else if (j->comm && strcmp(action, "flight_recorder") == 0)
        j->action = PROBE_COMM_FLIGHT_RECORDER;
    else if (j->comm && strcmp(action, "sequence") == 0)
        j->action = PROBE_COMM_SEQUENCE;
    else
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.action: expected \"start\", \"stop\"%s "
                          "or \"status\"",
                          j->comm ? ", \"flight_recorder\", \"sequence\"" : "");
    if (every == -1)
        every = 0; /* the tracer's default (TORCH_EVERY_DEFAULT), or unchanged when running */
    else if (every < 1 || every > 1000000)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.every: expected 1 to 1000000");
    j->every = (int)every;
    if (!(j->body = cJSON_CreateObject()))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct torchjob *j = job;
    j->rc.rc = j->comm ? torch_comm_run(j->action, j->ddp, j->body, &j->rc.err)
                       : torch_run(j->action, j->every, j->body, &j->rc.err);
}

/* Loop thread. */
static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    struct torchjob *j = job;
    cJSON *item;
    while ((item = j->body->child) != NULL) {
        cJSON_DetachItemViaPointer(j->body, item);
        cJSON_AddItemToObject(body, item->string, item);
    }
    return 0;
}

static void drop(void *job)
{
    cJSON_Delete(((struct torchjob *)job)->body);
}

const struct srv_job srv_job_probing_torch = {
    .size = sizeof(struct torchjob), .parse = parse, .run = run, .reply = reply, .drop = drop};

static int parse_comm(struct srv_ctx *c, const cJSON *args, void *job)
{
    if (cJSON_GetObjectItemCaseSensitive(args, "every"))
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.every: probing/comm records every "
                          "call (its bound is the setting comm.max_records)");
    struct torchjob *j = job;
    int rc = dap_arg_bool(args, "ddp", &j->ddp, &c->err);
    if (rc < 0)
        return rc;
    j->comm = 1;
    if ((rc = parse(c, args, job)) < 0)
        return rc;
    if (j->ddp == 1 && j->action != PROBE_TORCH_START)
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.ddp: only with action \"start\" (it gives each "
                          "DistributedDataParallel module the recorder's comm hook)");
    return 0;
}

const struct srv_job srv_job_probing_comm = {
    .size = sizeof(struct torchjob), .parse = parse_comm, .run = run, .reply = reply, .drop = drop};
