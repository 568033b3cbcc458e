/* SPDX-License-Identifier: MIT */
/* DAP: StackTraceRequest. The thread's Python frames, innermost first, read without the GIL
 * (so it answers even when a C call holds the GIL forever), with startFrame/levels paging and
 * totalFrames. */
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"
#include "server/snapshot.h"

#define MAX_FRAMES 4096

static cJSON *stack_frame(const struct probe_frame *f, long tid, int depth)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)pb_frame_id(tid, depth));
    cJSON_AddStringToObject(o, "name", f->func ? f->func : "?");
    cJSON *src = cJSON_AddObjectToObject(o, "source");
    const char *file = f->file ? f->file : "?";
    const char *base = strrchr(file, '/');
    cJSON_AddStringToObject(src, "name", base ? base + 1 : file);
    if (file[0] != '<')
        cJSON_AddStringToObject(src, "path", file);
    cJSON_AddNumberToObject(o, "line", f->line);
    cJSON_AddNumberToObject(o, "column", 1);
    if (probe_dbg_is_library(f->file))
        cJSON_AddStringToObject(o, "presentationHint", "subtle");
    return o;
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
    /* A parked thread's stack is the one recorded when it stopped, with inspectable frames. */
    if (probe_dbg_stack((long)tid, start, levels, body) == 0)
        return 0;
    struct probe_snapshot s = {0};
    const struct probe_thread *t = NULL;
    /* A running thread's frames can change under the GIL-free reader, which may then see no
     * frame at all: read again (a few times, each well under a millisecond). */
    for (int attempt = 0; attempt < 4; attempt++) {
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
    cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
    long long end = levels > 0 && start + levels < t->nframes ? start + levels : t->nframes;
    for (long long i = start; i < end; i++)
        cJSON_AddItemToArray(arr, stack_frame(&t->frames[i], (long)tid, (int)i));
    cJSON_AddNumberToObject(body, "totalFrames", t->nframes);
    probe_snapshot_free(&s);
    return 0;
}
