/* SPDX-License-Identifier: MIT */
/* JSON builders over probe snapshots, shared by the threads/stackTrace/probing/dump handlers. */
#ifndef DAP_SNAPSHOT_H
#define DAP_SNAPSHOT_H

#include <cJSON.h>

#include "pyrt/pyrt.h"

/* The DAP thread id of a Python thread: its native tid (small, stable, what top/gdb show). */
long dap_thread_id(const struct probe_thread *t);
/* Remove the probe's worker thread from s (it has a thread state only while it works). */
void dap_snapshot_drop_worker(struct probe_snapshot *s);
cJSON *dap_json_frame(const struct probe_frame *f, int with_locals);
cJSON *dap_json_thread(const struct probe_thread *t, int with_locals);
const struct probe_thread *dap_snapshot_find(const struct probe_snapshot *s, long id);

#endif

#ifndef DAP_SNAPJOB_DECL
#define DAP_SNAPJOB_DECL
struct dap_ctx;
/* Renders a response body from a snapshot. gil_rc is 0 when the snapshot was taken with the
 * GIL (flags honoured), else why not (PB_ETIMEDOUT, PB_ENOGIL) and the snapshot has no names
 * from threading and no locals. */
typedef int (*dap_snap_render)(const struct probe_snapshot *s, int gil_rc, const cJSON *args,
                               cJSON *body, struct pb_err *err);
/* Defer c and answer it from a snapshot taken with flags (see snapjob.c). Returns DAP_DEFERRED. */
int dap_snapshot_request(struct dap_ctx *c, const cJSON *args, int flags, int max_frames,
                         dap_snap_render render);
#endif
