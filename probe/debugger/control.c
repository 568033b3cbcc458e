/* SPDX-License-Identifier: MIT */
/* What server/ asks of the debugger on the loop thread: resume, step, pause (begin and end
 * around the worker's part), the client configured; and the detach, whose cleanup runs under
 * the GIL. Resuming and stepping involve only the stop records and a condition variable, so
 * they answer even while a C extension holds the GIL. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "core/core.h"
#include "gil/gil.h"
#include "debugger.h"

/* ---- under the GIL ---- */

int dbg_pause(int hold, struct pb_err *err)
{
    if (hold >= 0)
        dbg_hold(hold);
    atomic_store(&dbg_pause_all, 1);
    int rc = dbg_hooks_pause_all(err);
    if (PyErr_Occurred())
        PyErr_Clear();
    return rc;
}

void dbg_census(struct dbg_census *out)
{
    memset(out, 0, sizeof *out);
    out->stopped = dbg_stopped();
    out->breakpoints = dbg_bp_count();
    out->raised = atomic_load(&dbg_exc_raised);
    out->uncaught = atomic_load(&dbg_exc_uncaught);
    dbg_hooks_census(out);
    dbg_exc_census(out);
    if (PyErr_Occurred())
        PyErr_Clear();
}

/* ---- on the loop ---- */

static void update_done(void *arg, int rc)
{
    (void)rc;
    free(arg);
}

static void update_with_gil(void *arg)
{
    (void)arg;
    struct pb_err err = {0};
    dbg_vars_sync();
    if (dbg_hooks_update(&err) < 0)
        PB_LOG(PB_LOG_WARN, "debugger hooks: %s", err.msg);
}

/* After a resume: narrow the hooks to what is still wanted (asynchronously). */
static void schedule_update(void)
{
    if (gil_submit(update_with_gil, update_done, NULL, 10000) < 0)
        PB_LOG(PB_LOG_WARN, "debugger hooks: could not schedule an update");
}

int dbg_resume_all(int announce)
{
    int was = dbg_stopped();
    dbg_resume(0, DBG_STEP_NONE);
    if (was && announce) { /* a debugging client attached meanwhile learns it from an event */
        struct probe_dbg_event e = {.kind = PROBE_DBG_EV_CONTINUED, .thread_id = getpid()};
        dbg_emit(&e);
    }
    schedule_update();
    return was;
}

int dbg_step_thread(long tid, int mode, struct pb_err *err)
{
    if (!dbg_parked(tid))
        return pb_err_set(err, PB_ESTATE,
                          "thread %ld is not stopped in Python code: only a "
                          "stopped thread can step",
                          tid);
    dbg_resume(tid, mode == PROBE_DBG_STEP_IN     ? DBG_STEP_IN
                    : mode == PROBE_DBG_STEP_OVER ? DBG_STEP_OVER
                                                  : DBG_STEP_OUT);
    return 0;
}

static uv_timer_t pause_timer;
static int pause_timer_init;

/* Nobody parked soon after a pause (every thread is in C code, e.g. sleeping): the target is
 * stopped all the same as far as Python goes; say so, for the main thread. */
static void on_pause_timer(uv_timer_t *t)
{
    (void)t;
    if (!atomic_load(&dbg_pause_all) || dbg_set_announced(1))
        return;
    struct probe_dbg_event e = {.kind = PROBE_DBG_EV_STOPPED,
                                .thread_id = getpid(),
                                .reason = "pause",
                                .text = "Paused (threads in native code stop when they "
                                        "return to Python)"};
    dbg_emit(&e);
}

/* A pause's `stopped` must follow its response (DAP): events wait until the pause ends. */
void dbg_pause_begin(void)
{
    dbg_events_hold(+1);
}

void dbg_pause_end(int ok)
{
    if (ok) {
        if (!pause_timer_init) {
            uv_timer_init(core_agent_loop(), &pause_timer);
            uv_unref((uv_handle_t *)&pause_timer);
            pause_timer_init = 1;
        }
        uv_timer_start(&pause_timer, on_pause_timer, 200, 0);
    }
    dbg_events_hold(-1);
}

void dbg_configured(void)
{
    dbg_events_start();
    if (!dbg_stopped())
        return;
    dbg_set_announced(1);
    long tid = dbg_first_parked();
    struct probe_dbg_event e = {
        .kind = PROBE_DBG_EV_STOPPED, .thread_id = tid ? tid : getpid(), .reason = "pause"};
    dbg_emit(&e);
}

/* ---- detach: everything of ours goes, under the GIL; retried while the GIL is busy ---- */

struct cleanup {
    unsigned long gen;
    int tries;
};

static void cleanup_with_gil(void *arg)
{
    struct cleanup *c = arg;
    dbg_vars_sync();
    if (c->gen != atomic_load(&dbg_session_gen))
        return; /* a new client came meanwhile: its breakpoints stay */
    dbg_bp_clear_all();
    dbg_exc_remove();
    dbg_hooks_remove();
    c->tries = -1;
}

static void cleanup_done(void *arg, int rc)
{
    struct cleanup *c = arg;
    if (rc == PB_ETIMEDOUT && c->tries >= 0 && ++c->tries < 600 &&
        gil_submit(cleanup_with_gil, cleanup_done, c, 1000) == 0)
        return;
    if (c->tries >= 0)
        PB_LOG(PB_LOG_WARN, "debugger cleanup did not run (rc %d)", rc);
    free(c);
}

void dbg_detach(void)
{
    atomic_store(&dbg_exc_raised, 0);
    atomic_store(&dbg_exc_uncaught, 0);
    dbg_hold(0);
    dbg_resume(0, DBG_STEP_NONE);
    unsigned long gen = atomic_fetch_add(&dbg_session_gen, 1) + 1;
    dbg_steps_reset(gen);
    dbg_events_drain_all();
    struct cleanup *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->gen = gen;
    if (gil_submit(cleanup_with_gil, cleanup_done, c, 1000) < 0)
        free(c);
}
