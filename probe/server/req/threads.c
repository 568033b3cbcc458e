/* SPDX-License-Identifier: MIT */
/* DAP: ThreadsRequest. Every Python thread of every interpreter, id = native tid (plus
 * interp * 4194304 for a subinterpreter's thread state: pyrt_thread_id; its name then ends
 * in " (interp N)"), named as `threading` names it when
 * the GIL can be had in time (else the OS thread name). While the target is stopped, a thread
 * that is not parked (it runs native code: a sleep, a read, a C extension) says so in its
 * name; it stops when it returns to Python. When threading's names were read less than
 * NAMES_FRESH_MS ago and every thread is one of those, the answer comes at once from a GIL-free
 * snapshot with those names (pyrt's name cache): no wait for a GIL that a computing target
 * gives up only every switch interval (5 ms), or never during a long C call. While the target
 * is stopped (the parked threads leave the GIL free), every asyncio task follows the threads as
 * an entry of its own (server/tasks.c), its coroutine chain its stack. */
#include <stdio.h>

#include "debugger/debugger.h"
#include "server/server.h"
#include "server/snapshot.h"

#define NAMES_FRESH_MS 1000

static int render(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                  struct pb_err *err)
{
    (void)gil_rc;
    (void)args;
    (void)err;
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    int stopped = dbg_stopped();
    for (int i = 0; i < s->nthreads; i++) {
        cJSON *t = cJSON_CreateObject();
        long id = srv_thread_id(&s->threads[i]);
        const char *name = s->threads[i].name ? s->threads[i].name : "";
        char iname[300], buf[330];
        if (s->threads[i].interp_id != 0) { /* a subinterpreter's thread state */
            snprintf(iname, sizeof iname, "%s (interp %lld)", name, s->threads[i].interp_id);
            name = iname;
        }
        cJSON_AddNumberToObject(t, "id", (double)id);
        if (stopped && !dbg_parked(id)) {
            snprintf(buf, sizeof buf, "%s (in native code)", name);
            cJSON_AddStringToObject(t, "name", buf);
        } else {
            cJSON_AddStringToObject(t, "name", name);
        }
        cJSON_AddItemToArray(arr, t);
    }
    /* Stopped: every asyncio task too, its coroutine chain as its stack (server/tasks.c). */
    if (stopped && s->atasks.read) /* with the GIL, or without it on 3.14+ */
        srv_tasks_threads(&s->atasks, arr);
    return 0;
}

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct srv_snapjob *j = job;
    /* Stopped (the debugger paused the target): with the asyncio tasks, under the GIL, which
     * the parked threads leave free. */
    int stopped = dbg_stopped();
    int rc =
        srv_snap_init(c, j, args, PROBE_SNAP_NAMES | (stopped ? PROBE_SNAP_TASKS : 0), 1, render);
    if (rc < 0 || stopped || !pyrt_names_fresh(NAMES_FRESH_MS))
        return rc;
    if (pyrt_snapshot(&j->snap, 0, 1, &j->err) < 0) {
        pb_err_clear(&j->err);
        return 0;
    }
    srv_snapshot_drop_worker(&j->snap); /* ours, left out of the answer anyway */
    if (!pyrt_names_known(&j->snap)) {  /* a thread started since: ask threading */
        pyrt_snapshot_free(&j->snap);
        return 0;
    }
    return SRV_JOB_ANSWERED;
}

const struct srv_job srv_job_threads = {.size = sizeof(struct srv_snapjob),
                                        .parse = parse,
                                        .run = srv_snap_run,
                                        .reply = srv_snap_reply,
                                        .drop = srv_snap_drop};
