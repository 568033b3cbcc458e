/* SPDX-License-Identifier: MIT */
/* JSON builders over probe snapshots, shared by the threads/stackTrace/probing/dump handlers. */
#ifndef SRV_SNAPSHOT_H
#define SRV_SNAPSHOT_H

#include <cJSON.h>

#include "pyrt/atasks_json.h"
#include "pyrt/pyrt.h"
#include "server.h"

/* The DAP thread id of a Python thread: its native tid (small, stable, what top/gdb show). */
long srv_thread_id(const struct probe_thread *t);
/* Remove the probe's worker thread from s (it has a thread state only while it works). */
void srv_snapshot_drop_worker(struct probe_snapshot *s);
cJSON *srv_json_frame(const struct probe_frame *f, int with_locals);
cJSON *srv_json_thread(const struct probe_thread *t, int with_locals);
struct prof_nstack;
/* A thread's merged native stack (prof/native.c): {answered, merged, evalFrames,
 * entryFrames, frames, pythonFrames (unmerged only)}; docs/protocol.md. */
cJSON *srv_json_native(const struct prof_nstack *s);
const struct probe_thread *srv_snapshot_find(const struct probe_snapshot *s, long id);

/* asyncio tasks as DAP threads while the target is stopped (tasks.c): ids SRV_TASK_ID_BASE
 * (3 * 2^29, above every thread id: a tid is below 2^22, plus 2^22 per subinterpreter) + a
 * number per task, below 2^31 (DAP ids are int32). */
#define SRV_TASK_ID_BASE (3LL << 29)
#define SRV_TASK_ID_COUNT (1LL << 29)
int srv_task_id_is(long long id);
/* Appends a thread entry per task of a to threads and keeps their coroutine chains for
 * srv_tasks_stack (replacing the last ones). */
void srv_tasks_threads(const struct probe_atasks *a, cJSON *threads);
/* stackTrace of a task id: its chain as the last srv_tasks_threads kept it, paged; 0 or a
 * negative code with err (an id not in that answer). */
int srv_tasks_stack(long long id, long long start, long long levels, cJSON *body,
                    struct pb_err *err);

#endif

#ifndef SRV_SNAPJOB_DECL
#define SRV_SNAPJOB_DECL
struct srv_ctx;
/* Renders a response body from a snapshot. gil_rc is 0 when the snapshot was taken with the
 * GIL (flags honoured), else why not (PB_ETIMEDOUT, PB_ENOGIL) and the snapshot has no names
 * from threading and no locals. */
typedef int (*srv_snap_render)(const struct probe_snapshot *s, int gil_rc, const cJSON *args,
                               cJSON *body, struct pb_err *err);
/* A request answered from a snapshot (threads, probing/dump; snapjob.c): a SRV_F_GIL |
 * SRV_F_GIL_FALLBACK job whose parse calls srv_snap_init, with these parts. */
struct srv_snapjob {
    struct srv_job_rc rc; /* stays 0: a failed snapshot is reply's */
    int flags, max_frames;
    cJSON *args; /* a copy: the request's message is gone by the time we answer */
    srv_snap_render render;
    struct probe_snapshot snap;
    int snap_rc;
    struct pb_err err;
};
struct srv_reply;
/* Loop: the snapshot to take (flags: PROBE_SNAP_*) and how to render it. 0 or a negative code
 * with c->err. */
int srv_snap_init(struct srv_ctx *c, struct srv_snapjob *j, const cJSON *args, int flags,
                  int max_frames, srv_snap_render render);
void srv_snap_run(void *job);
void srv_snap_without_gil(struct srv_snapjob *j);
int srv_snap_reply(struct srv_reply *r, void *job, cJSON *body);
void srv_snap_drop(void *job);
#endif
