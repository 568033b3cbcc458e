/* SPDX-License-Identifier: MIT */
/* A deferred request answered from an interpreter snapshot that wants the GIL (thread names,
 * locals). The snapshot is taken on the worker with the GIL; if the GIL cannot be had in time,
 * a GIL-free snapshot is taken on the loop instead and the renderer is told why (gil_rc), so
 * the client always gets an answer within the timeout. */
#include <stdlib.h>

#include "server.h"
#include "probe.h"
#include "snapshot.h"

struct snapjob {
    struct dap_job_rc rc; /* stays 0: a failed snapshot is reply's */
    int flags, max_frames;
    cJSON *args; /* a copy: the request's message is gone by the time we answer */
    dap_snap_render render;
    struct probe_snapshot snap;
    int snap_rc;
    struct pb_err err;
};

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct snapjob *j = job;
    j->snap_rc = probe_pyrt_snapshot(&j->snap, j->flags, j->max_frames, &j->err);
}

/* Loop thread; also when the GIL could not be had (DAP_F_GIL_FALLBACK). */
static int reply(struct dap_reply *r, void *job, cJSON *body)
{
    struct snapjob *j = job;
    if (r->gil_rc < 0) {
        pb_err_clear(&j->err);
        j->snap_rc = probe_pyrt_snapshot(&j->snap, 0, j->max_frames, &j->err);
    }
    int rc = j->snap_rc;
    if (rc == 0) {
        dap_snapshot_drop_worker(&j->snap);
        rc = j->render(&j->snap, r->gil_rc, j->args, body, &j->err);
    }
    r->err = j->err;
    return rc;
}

static void drop(void *job)
{
    struct snapjob *j = job;
    probe_snapshot_free(&j->snap);
    cJSON_Delete(j->args);
}

static const struct dap_job snap_job = {sizeof(struct snapjob), NULL, run, reply, drop};

int dap_snapshot_request(struct dap_ctx *c, const cJSON *args, int flags, int max_frames,
                         dap_snap_render render)
{
    struct snapjob *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(&c->err, PB_EUNKNOWN, "out of memory");
    j->flags = flags;
    j->max_frames = max_frames;
    j->render = render;
    j->args = args ? cJSON_Duplicate(args, 1) : NULL;
    return dap_job_submit(c, &snap_job, j, DAP_F_GIL | DAP_F_GIL_FALLBACK,
                          probe_setting_gil_timeout_ms());
}
