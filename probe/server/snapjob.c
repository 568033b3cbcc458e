/* SPDX-License-Identifier: MIT */
/* The job of a request answered from an interpreter snapshot that wants the GIL (thread
 * names, locals): threads, probing/dump. The snapshot is taken on the worker with the GIL; if
 * the GIL cannot be had in time, a GIL-free snapshot is taken on the loop instead and the
 * renderer is told why (gil_rc), so the client always gets an answer within the timeout. */

#include <errno.h>

#include "server.h"
#include "snapshot.h"

/* Worker thread, GIL held. */
void srv_snap_run(void *job)
{
    struct srv_snapjob *j = job;
    j->snap_rc = pyrt_snapshot(&j->snap, j->flags, j->max_frames, &j->err);
}

/* Any thread: the snapshot without the GIL (it could not be had in time): locals asked for are
 * read from memory (simple values only), and the asyncio tasks where the interpreter keeps them
 * in lists (3.14+). */
void srv_snap_without_gil(struct srv_snapjob *j)
{
    pb_err_clear(&j->err);
    j->snap_rc = pyrt_snapshot(&j->snap,
                               (j->flags & PROBE_SNAP_LOCALS ? PROBE_SNAP_MEMLOCALS : 0) |
                                   (j->flags & PROBE_SNAP_TASKS ? PROBE_SNAP_TASKS_MEM : 0),
                               j->max_frames, &j->err);
}

/* Loop thread; also when the GIL could not be had (SRV_F_GIL_FALLBACK). */
int srv_snap_reply(struct srv_reply *r, void *job, cJSON *body)
{
    struct srv_snapjob *j = job;
    if (r->gil_rc < 0)
        srv_snap_without_gil(j);
    int rc = j->snap_rc;
    if (rc == 0) {
        srv_snapshot_drop_worker(&j->snap);
        rc = j->render(&j->snap, r->gil_rc, j->args, body, &j->err);
    }
    r->err = j->err;
    return rc;
}

void srv_snap_drop(void *job)
{
    struct srv_snapjob *j = job;
    pyrt_snapshot_free(&j->snap);
    cJSON_Delete(j->args);
}

int srv_snap_init(struct srv_ctx *c, struct srv_snapjob *j, const cJSON *args, int flags,
                  int max_frames, srv_snap_render render)
{
    j->flags = flags;
    j->max_frames = max_frames;
    j->render = render;
    if (args && !(j->args = cJSON_Duplicate(args, 1)))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}
