/* SPDX-License-Identifier: MIT */
/* probing/memory (custom; docs/protocol.md): the process's memory from /proc, then Python's
 * (objects by type, gc, tracemalloc, torch CUDA) gathered on the worker under the GIL.
 * Arguments: top (1 to 1000, default 10), trace ("start" | "stop"). When the GIL cannot be had
 * in time the answer still comes with the /proc part and says why Python's part is missing. */
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "probe.h"

struct memjob {
    struct dap_pending *p;
    int top;
    char trace[8];
    cJSON *py; /* filled on the worker */
    int rc;
    struct pb_err err;
};

/* Worker thread, GIL held. */
static void mem_with_gil(void *arg)
{
    struct memjob *j = arg;
    j->rc = probe_memory_python(j->py, j->top, j->trace[0] ? j->trace : NULL, &j->err);
}

/* Loop thread. */
static void mem_done(void *arg, int gil_rc)
{
    struct memjob *j = arg;
    cJSON *body = cJSON_CreateObject();
    struct pb_err perr = {0};
    int rc = probe_memory_proc(body, &perr);
    if (gil_rc < 0) {
        dap_gil_busy_error(gil_rc, probe_setting_gil_timeout_ms(), &j->err);
        cJSON_AddStringToObject(body, "pythonError", j->err.msg);
    } else if (j->rc < 0) {
        cJSON_AddStringToObject(body, "pythonError", j->err.msg);
    } else {
        cJSON *item;
        while ((item = j->py->child) != NULL) {
            cJSON_DetachItemViaPointer(j->py, item);
            cJSON_AddItemToObject(body, item->string, item);
        }
    }
    if (rc < 0)
        cJSON_AddStringToObject(body, "processError", perr.msg);
    dap_pending_finish(j->p, 0, body, NULL);
    cJSON_Delete(j->py);
    free(j);
}

int dap_req_probing_memory(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    long long top = 10;
    const char *trace = NULL;
    int rc;
    if ((rc = dap_arg_int(args, "top", &top, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "trace", &trace, &c->err)) < 0)
        return rc;
    if (top < 1 || top > 1000)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.top: expected 1 to 1000");
    if (trace && strcmp(trace, "start") != 0 && strcmp(trace, "stop") != 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.trace: expected \"start\" or \"stop\"");
    struct memjob *j = calloc(1, sizeof *j);
    if (!j || !(j->py = cJSON_CreateObject())) {
        free(j);
        return pb_err_set(&c->err, PB_EUNKNOWN, "out of memory");
    }
    j->top = (int)top;
    if (trace)
        strcpy(j->trace, trace);
    j->p = dap_ctx_defer(c);
    if (!j->p || probe_gil_submit(mem_with_gil, mem_done, j, probe_setting_gil_timeout_ms()) < 0) {
        if (j->p)
            dap_pending_finish(j->p, PB_EUNKNOWN, NULL, NULL);
        cJSON_Delete(j->py);
        free(j);
    }
    return DAP_DEFERRED;
}
