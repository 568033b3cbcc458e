/* SPDX-License-Identifier: MIT */
/* A fake probe for unit-testing dap/ handlers without a Python process: the probe.h and probe/pyrt/pyrt.h
 * functions the handlers call, answering from a canned two-thread snapshot. GIL jobs run
 * inline (or time out, when fake_gil_timeout is set). */
#include <stdlib.h>
#include <string.h>

#include "fake_probe.h"
#include "pyrt/pyrt.h"
#include "core/core.h"
#include "gil/gil.h"
#include "server/server.h"

int fake_gil_timeout;
int fake_listen_calls;
static struct probe_info info = {
    .pid = 4242, .python_version = "3.11.7", .socket_path = "/tmp/probing-0/4242.sock"};

const struct probe_info *core_info_get(void)
{
    return &info;
}
unsigned long gil_worker_ident(void)
{
    return 999;
}
int gil_worker_owns(unsigned long ident)
{
    return ident == 999;
}
int gil_worker_busy_text(unsigned long holder, char *buf, size_t n)
{
    (void)holder;
    (void)buf;
    (void)n;
    return 0;
}

int core_token_check(const char *token)
{
    return token && strcmp(token, "secret-token") == 0;
}

int srv_tcp_listen(const char *address, const char *token, struct pb_err *err)
{
    (void)token;
    fake_listen_calls++;
    if (strcmp(address, "bad") == 0)
        return pb_err_set(err, PB_EBADARG, "address 'bad': expected HOST:PORT");
    pb_strlcpy(info.tcp_address, address, sizeof info.tcp_address);
    return 0;
}

int gil_submit(probe_gil_fn fn, probe_gil_done done, void *arg, int timeout_ms)
{
    (void)timeout_ms;
    if (fake_gil_timeout) {
        done(arg, PB_ETIMEDOUT);
        return 0;
    }
    fn(arg);
    done(arg, 0);
    return 0;
}

int gil_call(probe_gil_fn fn, void *arg, int timeout_ms)
{
    (void)timeout_ms;
    if (fake_gil_timeout)
        return PB_ETIMEDOUT;
    fn(arg);
    return 0;
}

static char *fake_dup(const char *s)
{
    return strdup(s);
}

/* No remembered names: threads always asks under the (fake) GIL here. */
int pyrt_names_fresh(int max_age_ms)
{
    (void)max_age_ms;
    return 0;
}

int pyrt_names_known(const struct probe_snapshot *s)
{
    (void)s;
    return 0;
}

int pyrt_snapshot(struct probe_snapshot *s, int flags, int max_frames, struct pb_err *err)
{
    (void)err;
    memset(s, 0, sizeof *s);
    strcpy(s->version, "3.11.7");
    s->nthreads = 3;
    s->threads = fake_zalloc(3, sizeof *s->threads);
    static const long tids[3] = {4242, 4243, 0};
    static const unsigned long idents[3] = {7000, 7001, 999 /* the worker */};
    for (int i = 0; i < 3; i++) {
        struct probe_thread *t = &s->threads[i];
        t->ident = idents[i];
        t->native_id = tids[i] ? tids[i] : 4244;
        t->is_main = i == 0;
        t->holds_gil = i == 1;
        t->daemon = (flags & PROBE_SNAP_NAMES) ? i == 1 : -1;
        t->name_from_threading = (flags & PROBE_SNAP_NAMES) != 0;
        t->name = fake_dup(t->name_from_threading ? (i == 0 ? "MainThread" : "worker") : "python3");
        t->nframes = max_frames < 3 ? max_frames : 3;
        t->frames = fake_zalloc(3, sizeof *t->frames);
        for (int f = 0; f < t->nframes; f++) {
            t->frames[f].func = fake_dup(f == 0 ? "inner" : f == 1 ? "outer" : "<module>");
            t->frames[f].file = fake_dup("/app/main.py");
            t->frames[f].line = 10 * (f + 1);
            t->frames[f].nlocals = -1;
            if (flags & PROBE_SNAP_LOCALS) {
                t->frames[f].nlocals = 1;
                t->frames[f].locals = fake_zalloc(1, sizeof *t->frames[f].locals);
                t->frames[f].locals[0].name = fake_dup("x");
                t->frames[f].locals[0].type = fake_dup("int");
                t->frames[f].locals[0].value = fake_dup("42");
            }
        }
    }
    return 0;
}

/* The fake snapshot's thread with that id alone (as the real one walks that thread only). */
int pyrt_snapshot_thread(struct probe_snapshot *s, long id, int max_frames, struct pb_err *err)
{
    int rc = pyrt_snapshot(s, 0, max_frames, err), k = 0;
    for (int i = 0; rc == 0 && i < s->nthreads; i++) {
        if (pyrt_thread_id(&s->threads[i]) == id)
            s->threads[k++] = s->threads[i];
        else
            pyrt_thread_free(&s->threads[i]);
    }
    if (rc == 0)
        s->nthreads = k;
    return rc;
}
