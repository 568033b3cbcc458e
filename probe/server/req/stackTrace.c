/* SPDX-License-Identifier: MIT */
/* DAP: StackTraceRequest. The thread's Python frames, innermost first, read without the GIL
 * (so it answers even when a C call holds the GIL forever), with startFrame/levels paging and
 * totalFrames: a stopped thread's from its stop record (frames that scopes, evaluate and source
 * can inspect), another's from a GIL-free snapshot. One StackFrame builder for both
 * (dap_json_stack_frame, dbgjson.c). With the session's nativeFrames on (attach), the thread's
 * native frames are merged in (server/nativeframes.c) and paging applies to the merged stack. */
#include <string.h>
#include <time.h>

#include "debugger/debugger.h"
#include "server/server.h"
#include "server/snapshot.h"

#define MAX_FRAMES 4096

static void add_frames(cJSON *body, const struct probe_frame *frames, int n, long tid,
                       long long start, int total, int inspectable)
{
    cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr,
                             dap_json_stack_frame(&frames[i], tid, (int)(start + i), inspectable));
    cJSON_AddNumberToObject(body, "totalFrames", total);
}

int dap_req_stackTrace(struct dap_ctx *c, const cJSON *args, cJSON *body)
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
    if (dap_task_id_is(tid)) /* an asyncio task listed by threads while stopped */
        return dap_tasks_stack(tid, start, levels, body, &c->err);
    int native = dap_session_native_frames(c->s);
    /* A parked thread's stack is the one recorded when it stopped, with inspectable frames. */
    struct probe_frame *frames;
    int n, total = native ? probe_dbg_stack((long)tid, 0, 0, &frames, &n)
                          : probe_dbg_stack((long)tid, start, levels, &frames, &n);
    if (total >= 0) {
        rc = native
                 ? dap_native_stack((long)tid, native, frames, n, 1, start, levels, body, &c->err)
                 : (add_frames(body, frames, n, (long)tid, start, total, 1), 0);
        probe_dbg_frames_free(frames, n);
        return rc;
    }
    struct probe_snapshot s = {0};
    const struct probe_thread *t = NULL;
    /* A running thread's frames can change under the GIL-free reader, which may then see no
     * frame at all: read again. The thread may have been preempted in the middle of pushing a
     * frame (its link not set yet), and stays so while it waits for a CPU: the later reads
     * come after a pause of 1, 2, 3 ms... (at most 21 ms in all, only for such a thread). */
    for (int attempt = 0; attempt < 7; attempt++) {
        if (attempt > 0) {
            struct timespec nap = {0, attempt * 1000000L};
            nanosleep(&nap, NULL);
        }
        probe_snapshot_free(&s);
        memset(&s, 0, sizeof s);
        rc = probe_pyrt_snapshot(&s, 0, MAX_FRAMES, &c->err);
        if (rc < 0)
            return rc;
        t = dap_snapshot_find(&s, (long)tid);
        if (!t || t->nframes > 0)
            break;
    }
    if (!t) {
        probe_snapshot_free(&s);
        return pb_err_set(&c->err, PB_EBADARG, "no Python thread with id %lld", tid);
    }
    if (native) {
        rc = dap_native_stack((long)tid, native, t->frames, t->nframes, 0, start, levels, body,
                              &c->err);
        probe_snapshot_free(&s);
        return rc;
    }
    long long end = levels > 0 && start + levels < t->nframes ? start + levels : t->nframes;
    add_frames(body, t->frames + (start < end ? start : 0), start < end ? (int)(end - start) : 0,
               (long)tid, start, t->nframes, 0);
    probe_snapshot_free(&s);
    return 0;
}
