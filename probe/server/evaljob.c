/* SPDX-License-Identifier: MIT */
/* A deferred request that runs code in the target (probing/eval, evaluate): the evaluation
 * runs on the worker under the GIL (dbg_eval_run, in __main__ or a stopped frame) with the
 * eval GIL timeout; the loop never waits. If the GIL cannot be had in time nothing runs, and
 * the answer names the thread holding it and where it is, read from a GIL-free snapshot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "snapshot.h"
#include "gil/gil.h"
#include "debugger/debugger.h"

int srv_gil_busy_error(int gil_rc, int timeout_ms, struct pb_err *err)
{
    if (gil_rc != PB_ETIMEDOUT)
        return pb_err_set(err, gil_rc,
                          "the interpreter is not running Python code now "
                          "(starting or finalising): nothing was run");
    struct probe_snapshot s = {0};
    struct pb_err serr = {0};
    const struct probe_thread *h = NULL;
    char busy[256];
    if (pyrt_snapshot(&s, 0, 1, &serr) == 0)
        for (int i = 0; i < s.nthreads; i++)
            if (s.threads[i].holds_gil)
                h = &s.threads[i];
    if (gil_worker_busy_text(h ? h->ident : 0, busy, sizeof busy)) {
        pb_err_set(err, PB_ETIMEDOUT, "%s: nothing was run; %s", busy, PROBE_BUSY_HINT);
    } else if (!h) {
        pb_err_set(err, PB_ETIMEDOUT, "the GIL could not be had within %d ms: nothing was run",
                   timeout_ms);
    } else if (h->nframes > 0) {
        const struct probe_frame *f = &h->frames[0];
        pb_err_set(err, PB_ETIMEDOUT,
                   "the GIL is held by thread %ld \"%s\" in %s (%s:%d) and was not released "
                   "within %d ms: nothing was run",
                   srv_thread_id(h), h->name ? h->name : "?", f->func ? f->func : "?",
                   f->file ? f->file : "?", f->line, timeout_ms);
    } else {
        pb_err_set(err, PB_ETIMEDOUT,
                   "the GIL is held by thread %ld \"%s\" (no Python frames: in native code) and "
                   "was not released within %d ms: nothing was run",
                   srv_thread_id(h), h->name ? h->name : "?", timeout_ms);
    }
    pyrt_snapshot_free(&s);
    return PB_ETIMEDOUT;
}

/* Worker thread, GIL held. */
void srv_eval_run(void *job)
{
    struct srv_evaljob *j = job;
    j->rc.rc = dbg_eval_run(j->src, j->mode, j->frame_id, j->refs, j->result, &j->rc.err);
}

/* Loop thread. */
int srv_eval_reply(struct srv_reply *r, void *job, cJSON *body)
{
    struct srv_evaljob *j = job;
    return j->render(r->s, j->result, j->args, body, &r->err, &r->long_msg);
}

void srv_eval_drop(void *job)
{
    struct srv_evaljob *j = job;
    if (j->result) {
        gil_eval_result_free(j->result);
        free(j->result);
    }
    if (j->s) {
        srv_session_eval_count(j->s, -1);
        srv_session_unref(j->s);
    }
    cJSON_Delete(j->args);
    free(j->src);
}

int srv_eval_init(struct srv_ctx *c, struct srv_evaljob *j, const char *src, int mode,
                  long long frame_id, int refs, const cJSON *args, srv_eval_render render)
{
    j->mode = mode;
    j->frame_id = frame_id;
    j->refs = refs;
    j->render = render;
    j->s = c->s;
    srv_session_ref(j->s);
    srv_session_eval_count(j->s, +1);
    if (!(j->src = strdup(src)) || !(j->result = calloc(1, sizeof *j->result)) ||
        (args && !(j->args = cJSON_Duplicate(args, 1))))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}

static const struct srv_job eval_job = {.size = sizeof(struct srv_evaljob),
                                        .parse = NULL,
                                        .run = srv_eval_run,
                                        .reply = srv_eval_reply,
                                        .drop = srv_eval_drop};

int srv_eval_request(struct srv_ctx *c, const char *src, int mode, long long frame_id, int refs,
                     const cJSON *args, srv_eval_render render)
{
    struct srv_evaljob *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    int rc = srv_eval_init(c, j, src, mode, frame_id, refs, args, render);
    if (rc < 0) {
        srv_eval_drop(j);
        free(j);
        return rc;
    }
    return srv_job_submit(c, &eval_job, j, SRV_F_GIL, gil_eval_timeout_ms());
}

void srv_evals_closed(struct srv_session *s)
{
    if (srv_session_evals(s) > 0)
        gil_eval_interrupt();
}
