/* SPDX-License-Identifier: MIT */
/* DAP: StackTraceRequest. The thread's Python frames, innermost first, read without the GIL
 * (so it answers even when a C call holds the GIL forever), with startFrame/levels paging and
 * totalFrames: a stopped thread's from its stop record (frames that scopes, evaluate and source
 * can inspect), another's from a GIL-free snapshot. One StackFrame builder for both
 * (srv_json_stack_frame, dbgjson.c). With the session's nativeFrames on (attach), the thread's
 * native frames are merged in (server/nativeframes.c) and paging applies to the merged stack.
 * A thread not parked is read on the task thread (a job): its reads may pause between tries and
 * its native stack may wait for the thread (up to 1 s), and the loop never blocks. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debugger/debugger.h"
#include "server/server.h"
#include "server/snapshot.h"
#include "sig/prof_sig.h"
#include "sql/vtab.h"

#define MAX_FRAMES 4096

static void add_frames(cJSON *body, const struct probe_frame *frames, int n, long tid,
                       long long start, int total, int inspectable)
{
    cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr,
                             srv_json_stack_frame(&frames[i], tid, (int)(start + i), inspectable));
    cJSON_AddNumberToObject(body, "totalFrames", total);
}

/* The stack of a thread that is not parked: read on the task thread, answered on the loop. */
struct stjob {
    struct srv_job_rc rc; /* first: the job machinery's; stays 0 (reply says what failed) */
    long tid;
    long long start, levels;
    int native;
    struct probe_snapshot s;
    const struct probe_thread *t; /* in s; NULL: no such thread */
    int snap_rc;
    struct pb_err err;
    struct srv_native_answer nat; /* with native */
};

/* Thread tid's CPU time in ns (-1: unknown) and whether it is runnable: on a CPU or waiting for
 * one (its state as system.threads reads it). */
static int thread_now(long tid, long long *cpu_ns)
{
    struct timespec ts;
    *cpu_ns = clock_gettime(sig_thread_cpu_clock(tid), &ts) == 0
                  ? (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec
                  : -1;
    return strcmp(sql_vtab_thread_state(tid), "running") == 0;
}

/* After a read that found no frame: 1 ms, then on while the thread is runnable but has not run
 * another 0.2 ms of CPU (it was preempted in the middle of pushing a frame and waits for a CPU
 * to finish it), at most 50 ms. A thread asleep is not in the middle of a push. */
static void wait_until_it_ran(long tid)
{
    long long cpu0, cpu;
    thread_now(tid, &cpu0);
    for (int ms = 0; ms < 50; ms++) {
        struct timespec nap = {0, 1000000L};
        nanosleep(&nap, NULL);
        if (!thread_now(tid, &cpu) || cpu0 < 0 || cpu < 0 || cpu - cpu0 >= 200000)
            return;
    }
}

/* Task thread. */
static void stack_run(void *job)
{
    struct stjob *j = job;
    /* A running thread's frames can change under the GIL-free reader, which may then see no
     * frame at all: read again. The thread may have been preempted in the middle of pushing a
     * frame (its link not set yet), and stays so while it waits for a CPU, for tens of
     * milliseconds on a loaded machine: each later read comes once it has run again (at most 50
     * ms each, only for such a thread; 1 ms for a thread asleep). */
    for (int attempt = 0; attempt < 7; attempt++) {
        if (attempt > 0)
            wait_until_it_ran(j->tid);
        pyrt_snapshot_free(&j->s);
        memset(&j->s, 0, sizeof j->s);
        j->snap_rc = pyrt_snapshot_thread(&j->s, j->tid, MAX_FRAMES, &j->err);
        if (j->snap_rc < 0)
            return;
        j->t = srv_snapshot_find(&j->s, j->tid);
        if (!j->t || j->t->nframes > 0)
            break;
    }
    if (j->t && j->native)
        srv_native_ask(j->tid, &j->nat);
}

/* Loop. */
static int stack_reply(struct srv_reply *r, void *job, cJSON *body)
{
    struct stjob *j = job;
    const struct probe_thread *t = j->t;
    long long start = j->start, levels = j->levels;
    if (j->snap_rc < 0) {
        r->err = j->err;
        return j->snap_rc;
    }
    if (!t)
        return pb_err_set(&r->err, PB_EBADARG, "no Python thread with id %ld", j->tid);
    if (j->native)
        return srv_native_stack_answered(j->tid, j->native, t->frames, t->nframes, 0, start, levels,
                                         &j->nat, body, &r->err);
    long long end = levels > 0 && start + levels < t->nframes ? start + levels : t->nframes;
    add_frames(body, t->frames + (start < end ? start : 0), start < end ? (int)(end - start) : 0,
               j->tid, start, t->nframes, 0);
    return 0;
}

static void stack_drop(void *job)
{
    struct stjob *j = job;
    prof_nstack_free(&j->nat.ns);
    pyrt_snapshot_free(&j->s);
}

static const struct srv_job stack_job = {
    .size = sizeof(struct stjob), .run = stack_run, .reply = stack_reply, .drop = stack_drop};

int srv_req_stackTrace(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    long long tid = -1, start = 0, levels = 0;
    int rc;
    if ((rc = dap_arg_int(args, "threadId", &tid, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "startFrame", &start, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "levels", &levels, &c->err)) < 0)
        return rc;
    if (tid < 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.threadId: expected integer");
    if (start < 0 || levels < 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.startFrame/levels: must be >= 0");
    if (srv_task_id_is(tid)) /* an asyncio task listed by threads while stopped */
        return srv_tasks_stack(tid, start, levels, body, &c->err);
    int native = srv_session_native_frames(c->s);
    /* A parked thread's stack is the one recorded when it stopped, with inspectable frames.
     * It waits in a system call: its native stack is read in place, no signal to wait for
     * (prof_native_stacks), so it is answered here on the loop. */
    struct probe_frame *frames;
    int n, total = native ? dbg_stack((long)tid, 0, 0, &frames, &n)
                          : dbg_stack((long)tid, start, levels, &frames, &n);
    if (total >= 0) {
        rc = native
                 ? srv_native_stack((long)tid, native, frames, n, 1, start, levels, body, &c->err)
                 : (add_frames(body, frames, n, (long)tid, start, total, 1), 0);
        dbg_frames_free(frames, n);
        return rc;
    }
    struct stjob *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(&c->err, -ENOMEM, "out of memory: '%s' was not run", c->command);
    *j = (struct stjob){.tid = (long)tid, .start = start, .levels = levels, .native = native};
    return srv_job_submit(c, &stack_job, j, SRV_F_TASK, 0);
}
