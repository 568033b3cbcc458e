/* SPDX-License-Identifier: MIT */
/* The debugger's decisions at each event the hooks deliver (GIL held, in the thread the event
 * happened in): park for a pause, a finished step, a function or line breakpoint, a raised
 * exception; follow a step over/out as frames return. The hooks differ per CPython version;
 * these do not. */
#include "internal.h"

/* (session generation << 32) | steps under way: one atomic word, so a count always belongs to
 * the session it was made in. */
static _Atomic uint64_t steps;

int dbg_steps_any(void)
{
    return (uint32_t)atomic_load(&steps) > 0;
}

int dbg_steps_begin(unsigned long gen)
{
    uint64_t cur = atomic_load(&steps);
    do {
        if ((uint32_t)(cur >> 32) != (uint32_t)gen)
            return 0;
    } while (!atomic_compare_exchange_weak(&steps, &cur, cur + 1));
    return 1;
}

void dbg_steps_end(unsigned long gen)
{
    uint64_t cur = atomic_load(&steps);
    do {
        if ((uint32_t)(cur >> 32) != (uint32_t)gen || (uint32_t)cur == 0)
            return;
    } while (!atomic_compare_exchange_weak(&steps, &cur, cur - 1));
}

void dbg_steps_reset(unsigned long gen)
{
    atomic_store(&steps, (uint64_t)(uint32_t)gen << 32);
}

int dbg_wanted(void)
{
    if (dbg_forked())
        return 0;
    return atomic_load(&dbg_pause_all) || dbg_steps_any() || dbg_bp_any() ||
           atomic_load(&dbg_exc_raised);
}

static void step_end(struct dbg_tls *t)
{
    if (t->step != DBG_STEP_NONE)
        dbg_steps_end(t->gen);
    t->step = DBG_STEP_NONE;
    Py_CLEAR(t->step_frame);
}

/* A step begun before the last detach is void (the detach's reset already uncounted it). */
static void step_check_session(struct dbg_tls *t)
{
    if (t->step != DBG_STEP_NONE && t->gen != atomic_load(&dbg_session_gen))
        step_end(t);
}

int dbg_code_wants_lines(PyCodeObject *code)
{
    return atomic_load(&dbg_pause_all) || dbg_steps_any() || dbg_bp_in_code(code) ||
           dbg_bp_function(code) > 0;
}

int dbg_on_call(PyFrameObject *f)
{
    struct dbg_tls *t = dbg_tls_get();
    step_check_session(t);
    if (atomic_load(&dbg_pause_all) || t->step == DBG_STEP_IN)
        return 1;
    PyCodeObject *code = dbg_frame_code(f);
    int want = 0, id = dbg_bp_function(code);
    if (id > 0) {
        t->fbp_frame = (PyObject *)f;
        t->fbp_id = id;
        want = 1;
    } else {
        want = dbg_bp_in_code(code);
    }
    Py_DECREF(code);
    return want;
}

int dbg_on_line(PyFrameObject *f, int line)
{
    struct dbg_tls *t = dbg_tls_get();
    struct dbg_stop_why why = {.reason = "breakpoint"};
    step_check_session(t);
    if (atomic_load(&dbg_pause_all)) {
        why.reason = "pause";
        dbg_park(f, &why);
        return 0;
    }
    if (t->step == DBG_STEP_IN || (t->step == DBG_STEP_OVER && t->step_frame == (PyObject *)f)) {
        step_end(t);
        why.reason = "step";
        dbg_park(f, &why);
        return 0;
    }
    if (t->fbp_frame == (PyObject *)f) {
        t->fbp_frame = NULL;
        if (!dbg_bp_function_ok(f, t->fbp_id))
            return 0;
        why.reason = "function breakpoint";
        why.nbp = 1;
        why.bp_ids[0] = t->fbp_id;
        dbg_park(f, &why);
        return 0;
    }
    if (!dbg_bp_any())
        return 0;
    PyCodeObject *code = dbg_frame_code(f);
    int stop = dbg_bp_check(f, code, line, &why);
    Py_DECREF(code);
    if (stop)
        dbg_park(f, &why);
    return 0;
}

int dbg_on_return(PyFrameObject *f)
{
    struct dbg_tls *t = dbg_tls_get();
    if (t->fbp_frame == (PyObject *)f)
        t->fbp_frame = NULL;
    if (t->step != DBG_STEP_NONE && t->step_frame == (PyObject *)f) {
        /* Leaving the frame a step over/out started in: the step goes on in the caller, at
         * its next line. */
        PyObject *back = (PyObject *)dbg_frame_back(f);
        Py_CLEAR(t->step_frame);
        if (!back) {
            step_end(t);
            return 0;
        }
        t->step_frame = back;
        t->step = DBG_STEP_OVER;
        dbg_hooks_stepping((PyFrameObject *)back);
    }
    return 0;
}

int dbg_on_raise(PyFrameObject *f, PyObject *exc)
{
    if (!atomic_load(&dbg_exc_raised) || dbg_exc_skip(exc))
        return 0;
    struct dbg_stop_why why = {.reason = "exception", .exc = exc, .break_mode = "always"};
    char desc[300];
    dbg_exc_describe(exc, desc, sizeof desc);
    why.description = desc;
    dbg_park(f, &why);
    return 0;
}
