/* SPDX-License-Identifier: MIT */
/* A deferred request that runs code in the target (probing/eval, evaluate): the evaluation
 * runs on the worker under the GIL (probe_eval_run, in __main__ or a stopped frame) with the
 * eval GIL timeout; the loop never waits. If the GIL cannot be had in time nothing runs, and
 * the answer names the thread holding it and where it is, read from a GIL-free snapshot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "probe.h"
#include "snapshot.h"

struct evaljob {
    struct dap_job_rc rc;
    struct dap_session *s; /* a reference of our own: the evaluation count */
    char *src;
    int mode;
    long long frame_id;
    int refs;
    cJSON *args;
    dap_eval_render render;
    struct probe_eval_result r;
};

int dap_gil_busy_error(int gil_rc, int timeout_ms, struct pb_err *err)
{
    if (gil_rc != PB_ETIMEDOUT)
        return pb_err_set(err, gil_rc, "the interpreter is not running Python code now "
                                       "(starting or finalising): nothing was run");
    struct probe_snapshot s = {0};
    struct pb_err serr = {0};
    const struct probe_thread *h = NULL;
    char busy[256];
    if (probe_pyrt_snapshot(&s, 0, 1, &serr) == 0)
        for (int i = 0; i < s.nthreads; i++)
            if (s.threads[i].holds_gil)
                h = &s.threads[i];
    if (probe_worker_busy_text(h ? h->ident : 0, busy, sizeof busy)) {
        pb_err_set(err, PB_ETIMEDOUT, "%s: nothing was run; %s", busy, PROBE_BUSY_HINT);
    } else if (!h) {
        pb_err_set(err, PB_ETIMEDOUT, "the GIL could not be had within %d ms: nothing was run",
                   timeout_ms);
    } else if (h->nframes > 0) {
        const struct probe_frame *f = &h->frames[0];
        pb_err_set(err, PB_ETIMEDOUT,
                   "the GIL is held by thread %ld \"%s\" in %s (%s:%d) and was not released "
                   "within %d ms: nothing was run",
                   dap_thread_id(h), h->name ? h->name : "?", f->func ? f->func : "?",
                   f->file ? f->file : "?", f->line, timeout_ms);
    } else {
        pb_err_set(err, PB_ETIMEDOUT,
                   "the GIL is held by thread %ld \"%s\" (no Python frames: in native code) and "
                   "was not released within %d ms: nothing was run",
                   dap_thread_id(h), h->name ? h->name : "?", timeout_ms);
    }
    probe_snapshot_free(&s);
    return PB_ETIMEDOUT;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct evaljob *j = job;
    j->rc.rc = probe_eval_run(j->src, j->mode, j->frame_id, j->refs, &j->r, &j->rc.err);
}

/* Loop thread. */
static int reply(struct dap_reply *r, void *job, cJSON *body)
{
    struct evaljob *j = job;
    return j->render(r->s, &j->r, j->args, body, &r->err, &r->long_msg);
}

static void drop(void *job)
{
    struct evaljob *j = job;
    probe_eval_result_free(&j->r);
    if (j->s) {
        dap_session_eval_count(j->s, -1);
        dap_session_unref(j->s);
    }
    cJSON_Delete(j->args);
    free(j->src);
}

static const struct dap_job eval_job = {sizeof(struct evaljob), NULL, run, reply, drop};

int dap_eval_request(struct dap_ctx *c, const char *src, int mode, long long frame_id, int refs,
                     const cJSON *args, dap_eval_render render)
{
    struct evaljob *j = calloc(1, sizeof *j);
    if (!j || !(j->src = strdup(src))) {
        free(j);
        return pb_err_set(&c->err, PB_EUNKNOWN, "out of memory");
    }
    j->mode = mode;
    j->frame_id = frame_id;
    j->refs = refs;
    j->render = render;
    j->args = args ? cJSON_Duplicate(args, 1) : NULL;
    j->s = c->s;
    dap_session_ref(j->s);
    dap_session_eval_count(j->s, +1);
    return dap_job_submit(c, &eval_job, j, DAP_F_GIL, probe_eval_timeout_ms());
}
