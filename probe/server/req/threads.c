/* SPDX-License-Identifier: MIT */
/* DAP: ThreadsRequest. Every Python thread, id = native tid, named as `threading` names it when
 * the GIL can be had in time (else the OS thread name). While the target is stopped, a thread
 * that is not parked (it runs native code: a sleep, a read, a C extension) says so in its
 * name; it stops when it returns to Python. */
#include <stdio.h>

#include "debugger/debugger.h"
#include "server/server.h"
#include "server/snapshot.h"

static int render(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                  struct pb_err *err)
{
    (void)gil_rc;
    (void)args;
    (void)err;
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    int stopped = probe_dbg_stopped();
    for (int i = 0; i < s->nthreads; i++) {
        cJSON *t = cJSON_CreateObject();
        long id = dap_thread_id(&s->threads[i]);
        const char *name = s->threads[i].name ? s->threads[i].name : "";
        cJSON_AddNumberToObject(t, "id", (double)id);
        if (stopped && !probe_dbg_parked(id)) {
            char buf[300];
            snprintf(buf, sizeof buf, "%s (in native code)", name);
            cJSON_AddStringToObject(t, "name", buf);
        } else {
            cJSON_AddStringToObject(t, "name", name);
        }
        cJSON_AddItemToArray(arr, t);
    }
    return 0;
}

static int parse(struct dap_ctx *c, const cJSON *args, void *job)
{
    return dap_snap_init(c, job, args, PROBE_SNAP_NAMES, 1, render);
}

const struct dap_job dap_job_threads = {sizeof(struct dap_snapjob), parse, dap_snap_run,
                                        dap_snap_reply, dap_snap_drop};
