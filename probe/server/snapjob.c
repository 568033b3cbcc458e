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
    struct dap_pending *p;
    int flags, max_frames;
    cJSON *args; /* a copy: the request's message is gone by the time we answer */
    dap_snap_render render;
    struct probe_snapshot snap;
    int snap_rc;
    struct pb_err err;
};

/* Worker thread, GIL held. */
static void snap_with_gil(void *arg)
{
    struct snapjob *j = arg;
    j->snap_rc = probe_pyrt_snapshot(&j->snap, j->flags, j->max_frames, &j->err);
}

/* Loop thread. */
static void snap_done(void *arg, int gil_rc)
{
    struct snapjob *j = arg;
    if (gil_rc < 0) {
        pb_err_clear(&j->err);
        j->snap_rc = probe_pyrt_snapshot(&j->snap, 0, j->max_frames, &j->err);
    }
    cJSON *body = cJSON_CreateObject();
    int rc = j->snap_rc;
    if (rc == 0) {
        dap_snapshot_drop_worker(&j->snap);
        rc = j->render(&j->snap, gil_rc, j->args, body, &j->err);
    }
    dap_pending_finish(j->p, rc, body, &j->err);
    probe_snapshot_free(&j->snap);
    cJSON_Delete(j->args);
    free(j);
}

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
    j->p = dap_ctx_defer(c);
    if (!j->p || probe_gil_submit(snap_with_gil, snap_done, j, probe_setting_gil_timeout_ms()) < 0) {
        if (j->p)
            dap_pending_finish(j->p, PB_EUNKNOWN, NULL, NULL);
        cJSON_Delete(j->args);
        free(j);
        return DAP_DEFERRED;
    }
    return DAP_DEFERRED;
}
