/* SPDX-License-Identifier: MIT */
/* The debugger's event source on CPython 3.8 to 3.11: a C trace function (Py_tracefunc), set
 * only while something needs it, and removed after. A tracer the application had on a thread
 * (coverage, a profiler's settrace) is kept and called first, and put back when we leave. Line
 * events are delivered only in frames that need them (f_trace_lines), decided at each call.
 * Two modes:
 * - gated (only breakpoints): a trace function costs every instruction of a traced thread
 *   (3.11 even runs unspecialised bytecode), so a frame-evaluation function (PEP 523) looks at
 *   each code object as it starts (a flag cached in co_extra) and traces the thread only while
 *   a frame whose code holds a breakpoint runs (on 3.11, where that function costs every call,
 *   entry hooks in the functions holding the breakpoints do the same when they can serve them
 *   all: hooks_entry.c); threads already inside such code when the breakpoint is set are
 *   traced as long as it is on their stack;
 * - full (a pause, a step, the "raised" filter): every thread state is traced; threads started
 *   later get the tracer through threading.settrace when the application does not use it. */
/* Thread states and (3.11) frame objects are opened up: the internal headers. */
#define Py_BUILD_CORE 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include "pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030C0000
#include "pycore_interp.h"
#include "pycore_runtime.h"
#endif
#if PY_VERSION_HEX < 0x030C0000
#include "pycore_pystate.h"
#endif
#pragma GCC diagnostic pop

#include "internal.h"

#if PY_VERSION_HEX < 0x030C0000

#include <stdlib.h>

#include "core/core.h"
#include "debugger.h"

/* The trace object of each traced thread state: what was there before us. */
struct cell {
    Py_tracefunc prev_func;
    PyObject *prev_obj; /* strong */
};

static int installed;
static PyObject *thread_hook; /* our threading.settrace hook while set (strong) */
/* The frame whose entry hook (hooks_entry.c) started tracing this thread (compared, never
 * dereferenced). */
static __thread PyFrameObject *entry_frame;

/* Full mode: every thread is traced (see the top of the file). */
static int full_mode(void)
{
    return atomic_load(&dbg_pause_all) || dbg_steps_any() || atomic_load(&dbg_exc_raised);
}

static void cell_free(PyObject *cap)
{
    struct cell *c = PyCapsule_GetPointer(cap, NULL);
    if (c) {
        Py_XDECREF(c->prev_obj);
        free(c);
    }
    PyErr_Clear();
}

/* Set a thread state's C trace function, as PyEval_SetTrace does for the current one. */
static void set_trace(PyThreadState *ts, Py_tracefunc func, PyObject *obj)
{
#if PY_VERSION_HEX >= 0x03090000
    if (_PyEval_SetTrace(ts, func, obj) < 0)
        PyErr_Clear();
#else
    _PyRuntimeState *runtime = &_PyRuntime;
    PyObject *old = ts->c_traceobj;
    runtime->ceval.tracing_possible += (func != NULL) - (ts->c_tracefunc != NULL);
    Py_XINCREF(obj);
    ts->c_tracefunc = NULL;
    ts->c_traceobj = NULL;
    ts->use_tracing = ts->c_profilefunc != NULL;
    Py_XDECREF(old);
    ts->c_tracefunc = func;
    ts->c_traceobj = obj;
    ts->use_tracing = (func != NULL) || (ts->c_profilefunc != NULL);
#endif
}

static int trace(PyObject *obj, PyFrameObject *f, int what, PyObject *arg);
static void entry_left(PyFrameObject *f);

static int chained(PyObject *obj)
{
    struct cell *c = PyCapsule_GetPointer(obj, NULL);
    return c && c->prev_func;
}

static int trace(PyObject *obj, PyFrameObject *f, int what, PyObject *arg)
{
    struct cell *c = PyCapsule_GetPointer(obj, NULL);
    if (!c) {
        PyErr_Clear();
        return 0;
    }
    if (c->prev_func) {
        int rc = c->prev_func(c->prev_obj, f, what, arg);
        if (rc)
            return rc;
    }
    if (!dbg_wanted() || dbg_is_probe_thread()) {
        if (what == PyTrace_CALL && !c->prev_func)
            f->f_trace_lines = 0;
        return 0;
    }
    switch (what) {
    case PyTrace_CALL: {
        int want = dbg_on_call(f);
        if (!c->prev_func)
            f->f_trace_lines = (char)(want > 0);
        return 0;
    }
    case PyTrace_LINE: return dbg_on_line(f, PyFrame_GetLineNumber(f));
    case PyTrace_RETURN: {
        int rc = dbg_on_return(f);
        if (f == entry_frame) {
            entry_frame = NULL;
            entry_left(f); /* may remove this very trace function: the last thing done */
        }
        return rc;
    }
    case PyTrace_EXCEPTION:
        if (atomic_load(&dbg_exc_raised) && arg && PyTuple_Check(arg) &&
            PyTuple_GET_SIZE(arg) == 3) {
            PyObject *tb = PyTuple_GET_ITEM(arg, 2);
            /* First raise only: the traceback holds just this frame. */
            if (tb && PyTraceBack_Check(tb) && !((PyTracebackObject *)tb)->tb_next)
                return dbg_on_raise(f, PyTuple_GET_ITEM(arg, 1));
        }
        return 0;
    default: return 0;
    }
}

/* Our trace function on ts, chaining to what it had. GIL held. */
static void install_on(PyThreadState *ts)
{
    if (ts->c_tracefunc == trace)
        return;
    struct cell *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->prev_func = ts->c_tracefunc;
    c->prev_obj = ts->c_traceobj;
    Py_XINCREF(c->prev_obj);
    PyObject *cap = PyCapsule_New(c, NULL, cell_free);
    if (!cap) {
        Py_XDECREF(c->prev_obj);
        free(c);
        PyErr_Clear();
        return;
    }
    set_trace(ts, trace, cap);
    Py_DECREF(cap);
}

static void remove_from(PyThreadState *ts)
{
    if (ts->c_tracefunc != trace)
        return; /* not ours (any more): the application replaced it */
    if (ts == PyThreadState_GET())
        entry_frame = NULL;
    PyObject *cap = ts->c_traceobj;
    Py_INCREF(cap);
    struct cell *c = PyCapsule_GetPointer(cap, NULL);
    if (c)
        set_trace(ts, c->prev_func, c->prev_obj);
    else
        set_trace(ts, NULL, NULL);
    PyErr_Clear();
    Py_DECREF(cap);
}

static PyFrameObject *top_frame(PyThreadState *ts) /* new reference */
{
#if PY_VERSION_HEX >= 0x03090000
    return PyThreadState_GetFrame(ts);
#else
    Py_XINCREF(ts->frame);
    return ts->frame;
#endif
}

/* Set f_trace_lines on ts's frames: all of them (all=1), else as each frame's code needs. A
 * thread whose tracer chains to another keeps its frames as that tracer set them. */
static void frames_lines(PyThreadState *ts, int all)
{
    if (ts->c_tracefunc != trace || chained(ts->c_traceobj))
        return;
    PyFrameObject *f = top_frame(ts);
    for (int n = 0; f && n < DBG_MAX_FRAMES; n++) {
        if (all) {
            f->f_trace_lines = 1;
        } else {
            PyCodeObject *code = dbg_frame_code(f);
            f->f_trace_lines = (char)dbg_code_wants_lines(code);
            Py_DECREF(code);
        }
        PyFrameObject *b = dbg_frame_back(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
}

static PyThreadState *probe_tstate(void)
{
    return dbg_is_probe_thread() ? PyThreadState_Get() : NULL;
}

/* threading.settrace hook: the first event of a new thread installs the C tracer there. */
static PyObject *new_thread_hook(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *frame = NULL, *event = NULL, *arg = NULL;
    if (!PyArg_UnpackTuple(args, "probing_trace", 3, 3, &frame, &event, &arg))
        return NULL;
    PyThreadState *ts = PyThreadState_Get();
    set_trace(ts, NULL, NULL); /* drop the trampoline that called us */
    if (installed && !dbg_is_probe_thread()) {
        install_on(ts);
        if (PyFrame_Check(frame))
            ((PyFrameObject *)frame)->f_trace_lines =
                (char)(dbg_on_call((PyFrameObject *)frame) > 0);
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef hook_def = {"probing_trace", new_thread_hook, METH_VARARGS, NULL};

static void thread_hook_set(int on)
{
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *threading = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    if (!threading) {
        PyErr_Clear();
        return;
    }
    PyObject *cur = PyObject_GetAttrString(threading, "_trace_hook");
    if (!cur) {
        PyErr_Clear();
    } else if (on && cur == Py_None && !thread_hook) {
        thread_hook = PyCFunction_New(&hook_def, NULL);
        if (thread_hook && PyObject_SetAttrString(threading, "_trace_hook", thread_hook) < 0)
            Py_CLEAR(thread_hook);
    } else if (!on && thread_hook) {
        if (cur == thread_hook)
            PyObject_SetAttrString(threading, "_trace_hook", Py_None);
        Py_CLEAR(thread_hook);
    }
    Py_XDECREF(cur);
    Py_DECREF(threading);
    PyErr_Clear();
}

static void for_each_thread(void (*fn)(PyThreadState *, int), int arg)
{
    PyThreadState *self = probe_tstate();
    PyInterpreterState *interp = PyInterpreterState_Main();
    int n = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts && n < 4096;
         ts = PyThreadState_Next(ts), n++)
        if (ts != self)
            fn(ts, arg);
}

static void install_fn(PyThreadState *ts, int arg)
{
    (void)arg;
    install_on(ts);
}

static void remove_fn(PyThreadState *ts, int arg)
{
    (void)arg;
    frames_lines(ts, 1); /* frames get the default back */
    remove_from(ts);
}

static void lines_fn(PyThreadState *ts, int all)
{
    frames_lines(ts, all);
}

/* ---- the gate (PEP 523 frame evaluation function), gated mode only ---- */

#if PY_VERSION_HEX >= 0x030B0000
typedef struct _PyInterpreterFrame gate_frame;
#else
typedef PyFrameObject gate_frame;
#endif

static _PyFrameEvalFunction gate_prev; /* what was there before (NULL: the default) */
static int gate_on;
static Py_ssize_t gate_extra = -1; /* our co_extra slot */
static atomic_long gate_gen = 1;   /* bumped when breakpoints change */
static __thread int gate_depth;

void dbg_gate_bp_changed(void)
{
    atomic_fetch_add(&gate_gen, 1);
}

/* 1 if code holds a line or function breakpoint: cached in co_extra per breakpoint set. */
static int gate_needs(PyCodeObject *code)
{
    void *v = NULL;
    uintptr_t g = (uintptr_t)atomic_load(&gate_gen);
    if (_PyCode_GetExtra((PyObject *)code, gate_extra, &v) == 0 && v && ((uintptr_t)v >> 1) == g)
        return (int)((uintptr_t)v & 1);
    /* Slow path, once per code object and breakpoint set: never disturb an exception being
     * thrown into the frame (throwflag). */
    PyObject *t, *val, *tb;
    PyErr_Fetch(&t, &val, &tb);
    int w = dbg_bp_in_code(code) || dbg_bp_function(code) > 0;
    if (_PyCode_SetExtra((PyObject *)code, gate_extra, (void *)((g << 1) | (uintptr_t)w)) < 0)
        PyErr_Clear();
    PyErr_Restore(t, val, tb);
    return w;
}

static PyObject *gate_next(PyThreadState *ts, gate_frame *fr, int throwflag)
{
#if PY_VERSION_HEX >= 0x03090000
    return gate_prev ? gate_prev(ts, fr, throwflag) : _PyEval_EvalFrameDefault(ts, fr, throwflag);
#else
    (void)ts;
    return gate_prev ? gate_prev(fr, throwflag) : _PyEval_EvalFrameDefault(fr, throwflag);
#endif
}

static int thread_needs(PyThreadState *ts);

static PyObject *gate_run(PyThreadState *ts, gate_frame *fr, int throwflag)
{
    if (!gate_on || !gate_needs(fr->f_code) || dbg_is_probe_thread())
        return gate_next(ts, fr, throwflag);
    /* This code holds a breakpoint: trace the thread while it runs (the call event that
     * follows turns its line events on). */
    int mine = ts->c_tracefunc != trace;
    if (mine)
        install_on(ts);
    gate_depth++;
    PyObject *r = gate_next(ts, fr, throwflag);
    gate_depth--;
    if (mine && gate_depth == 0 && !full_mode() && ts->c_tracefunc == trace) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        /* A breakpoint set while this call ran, in a frame further out, needs the thread
         * traced for that frame (dbg_hooks_update found it so): keep it then. */
        if (!thread_needs(ts))
            remove_from(ts);
        PyErr_Restore(t, v, tb);
    }
    return r;
}

#if PY_VERSION_HEX >= 0x03090000
static PyObject *gate(PyThreadState *ts, gate_frame *fr, int throwflag)
{
    return gate_run(ts, fr, throwflag);
}

static _PyFrameEvalFunction eval_get(void)
{
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Main());
}

static void eval_set(_PyFrameEvalFunction f)
{
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Main(), f);
}
#else
static PyObject *gate(PyFrameObject *fr, int throwflag)
{
    return gate_run(PyThreadState_Get(), fr, throwflag);
}

static _PyFrameEvalFunction eval_get(void)
{
    return PyInterpreterState_Main()->eval_frame;
}

static void eval_set(_PyFrameEvalFunction f)
{
    PyInterpreterState_Main()->eval_frame = f;
}
#endif

/* Install or remove the gate (GIL held). Another tool's frame evaluation function is kept
 * and called in turn; ours is only taken out if it is still the one in place. */
static void gate_set(int on)
{
    if (on && !gate_on) {
        if (gate_extra < 0 && (gate_extra = _PyEval_RequestCodeExtraIndex(NULL)) < 0) {
            PyErr_Clear();
            return; /* no co_extra slot left: full mode will do */
        }
        _PyFrameEvalFunction cur = eval_get();
        gate_prev = cur == _PyEval_EvalFrameDefault ? NULL : cur;
        eval_set(gate);
        gate_on = 1;
    } else if (!on && gate_on) {
        if (eval_get() == gate)
            eval_set(gate_prev ? gate_prev : _PyEval_EvalFrameDefault);
        gate_on = 0;
    }
}

/* 1 if f or a frame below it runs code that holds a breakpoint (f: a new reference, taken). */
static int frames_need(PyFrameObject *f)
{
    int need = 0;
    for (int n = 0; f && n < DBG_MAX_FRAMES && !need; n++) {
        PyCodeObject *code = dbg_frame_code(f);
        need = dbg_bp_in_code(code) || dbg_bp_function(code) > 0;
        Py_DECREF(code);
        PyFrameObject *b = dbg_frame_back(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
    return need;
}

/* 1 if a frame of ts runs code that holds a breakpoint. */
static int thread_needs(PyThreadState *ts)
{
    return frames_need(top_frame(ts));
}

/* The frame whose entry hook traced this thread returns: stop tracing as the gate does when
 * its outermost frame returns, unless a frame further out needs it. */
static void entry_left(PyFrameObject *f)
{
    PyThreadState *ts = PyThreadState_Get();
    if (full_mode() || ts->c_tracefunc != trace)
        return;
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    if (!frames_need(dbg_frame_back(f)))
        remove_from(ts);
    PyErr_Restore(t, v, tb);
}

void dbg_trace_entered(void)
{
    PyThreadState *ts = PyThreadState_Get();
    if (!installed || full_mode() || ts->c_tracefunc == trace || dbg_is_probe_thread())
        return;                           /* traced already: the call event came at RESUME */
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed: the hooked frame */
    if (!f)
        return;
    install_on(ts);
    if (ts->c_tracefunc != trace)
        return;
    entry_frame = f;
    /* The call event this frame missed: it decides the frame's line events. */
    int want = dbg_on_call(f);
    if (!chained(ts->c_traceobj))
        f->f_trace_lines = (char)(want > 0);
    PyErr_Clear();
}

static void gated_fn(PyThreadState *ts, int arg)
{
    (void)arg;
    if (thread_needs(ts)) {
        install_on(ts);
        frames_lines(ts, 0);
    } else {
        remove_fn(ts, 0);
    }
}

int dbg_hooks_update(struct pb_err *err)
{
    (void)err;
    if (!dbg_wanted()) {
        dbg_hooks_remove();
        return 0;
    }
    installed = 1;
    if (full_mode()) {
        gate_set(0);
        thread_hook_set(1);
        for_each_thread(install_fn, 0);
        for_each_thread(lines_fn, atomic_load(&dbg_pause_all) || dbg_steps_any());
    } else {
        thread_hook_set(0);
        int entry = dbg_entry_update();
        gate_set(!entry);
        if (gate_on || entry) {
            for_each_thread(gated_fn, 0);
        } else {
            for_each_thread(install_fn, 0);
            for_each_thread(lines_fn, 0);
        }
    }
    return 0;
}

int dbg_hooks_pause_all(struct pb_err *err)
{
    return dbg_hooks_update(err);
}

void dbg_hooks_remove(void)
{
    if (!installed)
        return;
    installed = 0;
    gate_set(0);
    dbg_entry_remove();
    thread_hook_set(0);
    for_each_thread(remove_fn, 0);
    PB_LOG(PB_LOG_DEBUG, "trace functions removed");
}

void dbg_hooks_census(struct dbg_census *into)
{
    int traced = 0, n = 0;
    PyInterpreterState *interp = PyInterpreterState_Main();
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts && n < 4096;
         ts = PyThreadState_Next(ts), n++)
        traced += ts->c_tracefunc == trace;
    into->traced_threads = traced;
    into->monitoring_tool = -1;
    into->threading_hook = thread_hook != NULL;
    into->eval_frame_hook = eval_get() == gate;
    into->entry_hooks = dbg_entry_count();
}

void dbg_hooks_stepping(PyFrameObject *f)
{
    PyThreadState *ts = PyThreadState_Get();
    if (!installed) {
        installed = 1;
        thread_hook_set(1);
    }
    install_on(ts);
    if (chained(ts->c_traceobj))
        return;
    Py_INCREF(f);
    for (int n = 0; f && n < DBG_MAX_FRAMES; n++) {
        f->f_trace_lines = 1;
        PyFrameObject *b = dbg_frame_back(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
}

#endif
