/* SPDX-License-Identifier: MIT */
/* probing/memory (custom; docs/protocol.md): the process's memory from /proc, then Python's
 * (objects by type, gc, tracemalloc, torch CUDA) gathered on the worker under the GIL.
 * Arguments: top (1 to 1000, default 10), trace ("start" | "stop"), snapshot (an absolute path:
 * torch.cuda.memory._snapshot() is pickled there by the target, when torch.cuda is initialised;
 * the answer's cuda.snapshot says what was written or why not). When the GIL cannot be had
 * in time the answer still comes with the /proc part and says why Python's part is missing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "gil/gil.h"
#include "core/settings.h"

struct memjob {
    struct srv_job_rc rc; /* stays 0: Python's failure is part of the answer */
    int top;
    char trace[8];
    char snapshot[4096];
    cJSON *py; /* filled on the worker */
    int py_rc;
    struct pb_err py_err;
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct memjob *j = job;
    long long top = 10;
    const char *trace = NULL, *snapshot = NULL;
    int rc;
    if ((rc = dap_arg_int(args, "top", &top, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "trace", &trace, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "snapshot", &snapshot, &c->err)) < 0)
        return rc;
    if (snapshot && (snapshot[0] != '/' || strlen(snapshot) >= sizeof j->snapshot))
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.snapshot: expected an absolute path "
                          "shorter than %zu bytes",
                          sizeof j->snapshot);
    if (top < 1 || top > 1000)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.top: expected 1 to 1000");
    if (trace && strcmp(trace, "start") != 0 && strcmp(trace, "stop") != 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.trace: expected \"start\" or \"stop\"");
    if (!(j->py = cJSON_CreateObject()))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    j->top = (int)top;
    if (trace)
        strcpy(j->trace, trace);
    if (snapshot)
        strcpy(j->snapshot, snapshot);
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct memjob *j = job;
    j->py_rc = gil_memory_python(j->py, j->top, j->trace[0] ? j->trace : NULL,
                                 j->snapshot[0] ? j->snapshot : NULL, &j->py_err);
}

/* Loop thread; also when the GIL could not be had (SRV_F_GIL_FALLBACK). */
static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    struct memjob *j = job;
    struct pb_err perr = {0};
    int rc = gil_memory_proc(body, &perr);
    if (r->gil_rc < 0) {
        srv_gil_busy_error(r->gil_rc, core_setting_gil_timeout_ms(), &j->py_err);
        cJSON_AddStringToObject(body, "pythonError", j->py_err.msg);
    } else if (j->py_rc < 0) {
        cJSON_AddStringToObject(body, "pythonError", j->py_err.msg);
    } else {
        cJSON *item;
        while ((item = j->py->child) != NULL) {
            cJSON_DetachItemViaPointer(j->py, item);
            cJSON_AddItemToObject(body, item->string, item);
        }
    }
    if (rc < 0)
        cJSON_AddStringToObject(body, "processError", perr.msg);
    return 0;
}

static void drop(void *job)
{
    cJSON_Delete(((struct memjob *)job)->py);
}

const struct srv_job srv_job_probing_memory = {
    .size = sizeof(struct memjob), .parse = parse, .run = run, .reply = reply, .drop = drop};
