/* SPDX-License-Identifier: MIT */
/* DAP: ThreadsRequest. Every Python thread, id = native tid, named as `threading` names it when
 * the GIL can be had in time (else the OS thread name). */
#include "internal.h"
#include "snapshot.h"

static int render(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                  struct pb_err *err)
{
    (void)gil_rc;
    (void)args;
    (void)err;
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    for (int i = 0; i < s->nthreads; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", (double)dap_thread_id(&s->threads[i]));
        cJSON_AddStringToObject(t, "name", s->threads[i].name ? s->threads[i].name : "");
        cJSON_AddItemToArray(arr, t);
    }
    return 0;
}

int dap_req_threads(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    return dap_snapshot_request(c, args, PROBE_SNAP_NAMES, 1, render);
}
