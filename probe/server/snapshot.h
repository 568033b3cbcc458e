/* SPDX-License-Identifier: MIT */
/* JSON builders over probe snapshots, shared by the threads/stackTrace/probing/dump handlers. */
#ifndef DAP_SNAPSHOT_H
#define DAP_SNAPSHOT_H

#include <cJSON.h>

#include "pyrt/atasks_json.h"
#include "pyrt/pyrt.h"
#include "server.h"

/* The DAP thread id of a Python thread: its native tid (small, stable, what top/gdb show). */
long dap_thread_id(const struct probe_thread *t);
/* Remove the probe's worker thread from s (it has a thread state only while it works). */
void dap_snapshot_drop_worker(struct probe_snapshot *s);
cJSON *dap_json_frame(const struct probe_frame *f, int with_locals);
cJSON *dap_json_thread(const struct probe_thread *t, int with_locals);
struct prof_nstack;
/* A thread's merged native stack (prof/native.c): {answered, merged, evalFrames,
 * entryFrames, frames, pythonFrames (unmerged only)}; docs/protocol.md. */
cJSON *dap_json_native(const struct prof_nstack *s);
const struct probe_thread *dap_snapshot_find(const struct probe_snapshot *s, long id);

/* asyncio tasks as DAP threads while the target is stopped (tasks.c): ids DAP_TASK_ID_BASE
 * (3 * 2^29, above every thread id: a tid is below 2^22, plus 2^22 per subinterpreter) + a
 * number per task, below 2^31 (DAP ids are int32). */
#define DAP_TASK_ID_BASE (3LL << 29)
#define DAP_TASK_ID_COUNT (1LL << 29)
int dap_task_id_is(long long id);
/* Appends a thread entry per task of a to threads and keeps their coroutine chains for
 * dap_tasks_stack (replacing the last ones). */
void dap_tasks_threads(const struct probe_atasks *a, cJSON *threads);
/* stackTrace of a task id: its chain as the last dap_tasks_threads kept it, paged; 0 or a
 * negative code with err (an id not in that answer). */
int dap_tasks_stack(long long id, long long start, long long levels, cJSON *body,
                    struct pb_err *err);

#endif

#ifndef DAP_SNAPJOB_DECL
#define DAP_SNAPJOB_DECL
struct dap_ctx;
/* Renders a response body from a snapshot. gil_rc is 0 when the snapshot was taken with the
 * GIL (flags honoured), else why not (PB_ETIMEDOUT, PB_ENOGIL) and the snapshot has no names
 * from threading and no locals. */
typedef int (*dap_snap_render)(const struct probe_snapshot *s, int gil_rc, const cJSON *args,
                               cJSON *body, struct pb_err *err);
/* A request answered from a snapshot (threads, probing/dump; snapjob.c): a DAP_F_GIL |
 * DAP_F_GIL_FALLBACK job whose parse calls dap_snap_init, with these parts. */
struct dap_snapjob {
    struct dap_job_rc rc; /* stays 0: a failed snapshot is reply's */
    int flags, max_frames;
    cJSON *args; /* a copy: the request's message is gone by the time we answer */
    dap_snap_render render;
    struct probe_snapshot snap;
    int snap_rc;
    struct pb_err err;
};
struct dap_reply;
/* Loop: the snapshot to take (flags: PROBE_SNAP_*) and how to render it. 0 or a negative code
 * with c->err. */
int dap_snap_init(struct dap_ctx *c, struct dap_snapjob *j, const cJSON *args, int flags,
                  int max_frames, dap_snap_render render);
void dap_snap_run(void *job);
void dap_snap_without_gil(struct dap_snapjob *j);
int dap_snap_reply(struct dap_reply *r, void *job, cJSON *body);
void dap_snap_drop(void *job);
#endif
