/* SPDX-License-Identifier: MIT */
/* DAP `thread` events for the debugging client: while one is attached, a timer on the loop
 * compares the set of Python threads (read without the GIL) every half second and reports
 * the ones that started and exited. */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "internal.h"
#include "core/core.h"
#include "pyrt/pyrt.h"
#include "gil/gil.h"
#include "debugger.h"

#define MAX_TIDS 4096

static uv_timer_t timer;
static int timer_init, running;
static long known[MAX_TIDS];
static int nknown;

static void thread_event(const char *reason, long tid)
{
    struct probe_dbg_event e = {.kind = PROBE_DBG_EV_THREAD, .thread_id = tid};
    pb_strlcpy(e.reason, reason, sizeof e.reason);
    dbg_emit(&e);
}

static int contains(const long *set, int n, long tid)
{
    for (int i = 0; i < n; i++)
        if (set[i] == tid)
            return 1;
    return 0;
}

/* Current tids (the probe's worker left out). */
static int current(long *out)
{
    struct probe_snapshot s = {0};
    struct pb_err err = {0};
    if (pyrt_snapshot(&s, 0, 1, &err) < 0)
        return -1;
    int n = 0;
    for (int i = 0; i < s.nthreads && n < MAX_TIDS; i++)
        if (s.threads[i].native_id > 0 && !gil_worker_owns(s.threads[i].ident))
            out[n++] = pyrt_thread_id(&s.threads[i]); /* the DAP thread id */
    pyrt_snapshot_free(&s);
    return n;
}

static void on_timer(uv_timer_t *t)
{
    (void)t;
    static long now[MAX_TIDS];
    int n = current(now);
    if (n < 0)
        return;
    for (int i = 0; i < n; i++)
        if (!contains(known, nknown, now[i]))
            thread_event("started", now[i]);
    for (int i = 0; i < nknown; i++)
        if (!contains(now, n, known[i]))
            thread_event("exited", known[i]);
    memcpy(known, now, (size_t)n * sizeof *now);
    nknown = n;
}

void dbg_threads_watch(int on)
{
    if (!timer_init) {
        uv_timer_init(core_agent_loop(), &timer);
        uv_unref((uv_handle_t *)&timer);
        timer_init = 1;
    }
    if (on && !running) {
        int n = current(known);
        nknown = n < 0 ? 0 : n;
        uv_timer_start(&timer, on_timer, 500, 500);
        running = 1;
    } else if (!on && running) {
        uv_timer_stop(&timer);
        running = 0;
    }
}
