/* SPDX-License-Identifier: MIT */
/* The debugger's event source on CPython 3.12 and later: sys.monitoring (PEP 669) with a tool
 * id of our own, taken while something needs events and given back after. With breakpoints,
 * PY_START tells us each code object once (then DISABLEs itself there) and code objects that
 * hold a breakpoint get local LINE events, so other code runs at full speed; lines without a
 * breakpoint DISABLE themselves. Pausing and stepping turn LINE (and returns) on globally for
 * as long as they last. restart_events() re-arms what DISABLE switched off whenever breakpoints
 * or modes change. */
#include "internal.h"

#if PY_VERSION_HEX >= 0x030C0000

#include "core/core.h"
#include "debugger.h"

enum { EV_PY_START, EV_PY_RETURN, EV_PY_YIELD, EV_LINE, EV_RAISE, EV_PY_UNWIND, EV_N };
static const char *const ev_names[EV_N] = {"PY_START", "PY_RETURN", "PY_YIELD",
                                           "LINE",     "RAISE",     "PY_UNWIND"};
static long ev_bits[EV_N];

static int tool = -1;
static PyObject *mon;         /* sys.monitoring (strong) while we hold a tool id */
static PyObject *disable;     /* sys.monitoring.DISABLE (strong) */
static PyObject *local_codes; /* set of code objects we gave local events */
static PyObject *callbacks[EV_N];

static int global_modes(void)
{
    return atomic_load(&dbg_pause_all) || dbg_steps_any();
}

static PyFrameObject *cur_frame(void) /* borrowed */
{
    return PyEval_GetFrame();
}

static PyObject *set_local(PyObject *code, long mask)
{
    return PyObject_CallMethod(mon, "set_local_events", "iOl", tool, code, mask);
}

/* Local LINE events on code (once). */
static void want_lines(PyObject *code)
{
    if (!local_codes)
        return;
    int has = PySet_Contains(local_codes, code);
    if (has != 0) {
        PyErr_Clear();
        return;
    }
    PyObject *r = set_local(code, ev_bits[EV_LINE]);
    if (r && PySet_Add(local_codes, code) < 0)
        PyErr_Clear();
    Py_XDECREF(r);
    PyErr_Clear();
}

static PyObject *cb_start(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n < 1 || dbg_is_probe_thread() || !dbg_wanted())
        Py_RETURN_NONE;
    PyFrameObject *f = cur_frame();
    if (!f)
        Py_RETURN_NONE;
    PyCodeObject *code = (PyCodeObject *)args[0];
    int want = dbg_on_call(f);
    if (want > 0 && (dbg_bp_in_code(code) || dbg_bp_function(code) > 0))
        want_lines(args[0]);
    if (want > 0 || global_modes())
        Py_RETURN_NONE;
    return Py_NewRef(disable);
}

static PyObject *cb_line(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n < 2 || dbg_is_probe_thread() || !dbg_wanted())
        Py_RETURN_NONE;
    PyFrameObject *f = cur_frame();
    int line = (int)PyLong_AsLong(args[1]);
    PyErr_Clear();
    if (!f)
        Py_RETURN_NONE;
    struct dbg_tls *t = dbg_tls_get();
    int keep =
        global_modes() || t->fbp_frame == (PyObject *)f || dbg_bp_at((PyCodeObject *)args[0], line);
    if (dbg_on_line(f, line) < 0)
        return NULL;
    if (keep || global_modes())
        Py_RETURN_NONE;
    return Py_NewRef(disable);
}

static PyObject *cb_return(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    (void)args;
    (void)n;
    if (dbg_is_probe_thread() || !dbg_wanted())
        Py_RETURN_NONE;
    PyFrameObject *f = cur_frame();
    if (f && dbg_on_return(f) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *cb_raise(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n < 3 || dbg_is_probe_thread() || !dbg_wanted())
        Py_RETURN_NONE;
    PyFrameObject *f = cur_frame();
    if (f && dbg_on_raise(f, args[2]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef defs[EV_N] = {
    {"probing_py_start", (PyCFunction)(void (*)(void))cb_start, METH_FASTCALL, NULL},
    {"probing_py_return", (PyCFunction)(void (*)(void))cb_return, METH_FASTCALL, NULL},
    {"probing_py_yield", (PyCFunction)(void (*)(void))cb_return, METH_FASTCALL, NULL},
    {"probing_line", (PyCFunction)(void (*)(void))cb_line, METH_FASTCALL, NULL},
    {"probing_raise", (PyCFunction)(void (*)(void))cb_raise, METH_FASTCALL, NULL},
    {"probing_py_unwind", (PyCFunction)(void (*)(void))cb_return, METH_FASTCALL, NULL},
};

/* Take a free tool id and register the callbacks. GIL held. */
static int acquire(struct pb_err *err)
{
    if (tool >= 0)
        return 0;
    mon = PySys_GetObject("monitoring");
    if (!mon)
        return pb_err_set(err, PB_EUNKNOWN, "sys.monitoring is not available");
    Py_INCREF(mon);
    PyObject *events = PyObject_GetAttrString(mon, "events");
    for (int i = 0; events && i < EV_N; i++) {
        PyObject *v = PyObject_GetAttrString(events, ev_names[i]);
        ev_bits[i] = v ? PyLong_AsLong(v) : 0;
        Py_XDECREF(v);
    }
    Py_XDECREF(events);
    disable = PyObject_GetAttrString(mon, "DISABLE");
    if (PyErr_Occurred() || !disable) {
        Py_CLEAR(mon);
        Py_CLEAR(disable);
        return gil_py_fail(err, "sys.monitoring");
    }
    /* The debugger's own id first, then ids nobody reserved a meaning for. */
    static const int order[] = {0, 4, 3, 1, 2, 5};
    for (size_t i = 0; i < sizeof order / sizeof order[0] && tool < 0; i++) {
        PyObject *r = PyObject_CallMethod(mon, "use_tool_id", "is", order[i], "probing");
        if (r)
            tool = order[i];
        Py_XDECREF(r);
        PyErr_Clear();
    }
    if (tool < 0) {
        Py_CLEAR(mon);
        Py_CLEAR(disable);
        return pb_err_set(err, PB_ESTATE,
                          "sys.monitoring has no free tool id (all 6 are "
                          "taken by other tools in the target)");
    }
    local_codes = PySet_New(NULL);
    for (int i = 0; i < EV_N; i++) {
        callbacks[i] = PyCFunction_New(&defs[i], NULL);
        PyObject *r = callbacks[i] ? PyObject_CallMethod(mon, "register_callback", "ilO", tool,
                                                         ev_bits[i], callbacks[i])
                                   : NULL;
        Py_XDECREF(r);
        PyErr_Clear();
    }
    PB_LOG(PB_LOG_DEBUG, "sys.monitoring tool id %d taken", tool);
    return 0;
}

static void call_void(PyObject *r)
{
    Py_XDECREF(r);
    PyErr_Clear();
}

/* Local LINE events on the code of every frame that holds a breakpoint now (running loops
 * would never see PY_START again); drop them where breakpoints went. GIL held. */
static void refresh_locals(void)
{
    PyObject *stale = local_codes ? PySequence_List(local_codes) : NULL;
    for (Py_ssize_t i = 0; stale && i < PyList_GET_SIZE(stale); i++) {
        PyObject *code = PyList_GET_ITEM(stale, i);
        if (!dbg_bp_in_code((PyCodeObject *)code) && dbg_bp_function((PyCodeObject *)code) <= 0) {
            call_void(set_local(code, 0));
            PySet_Discard(local_codes, code);
        }
    }
    Py_XDECREF(stale);
    PyErr_Clear();
    PyInterpreterState *interp = PyInterpreterState_Main();
    int n = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts && n < 4096;
         ts = PyThreadState_Next(ts), n++) {
        PyFrameObject *f = PyThreadState_GetFrame(ts);
        for (int d = 0; f && d < DBG_MAX_FRAMES; d++) {
            PyCodeObject *code = PyFrame_GetCode(f);
            if (dbg_bp_in_code(code) || dbg_bp_function(code) > 0)
                want_lines((PyObject *)code);
            Py_DECREF(code);
            PyFrameObject *b = PyFrame_GetBack(f);
            Py_DECREF(f);
            f = b;
        }
        Py_XDECREF(f);
    }
}

void dbg_gate_bp_changed(void)
{
}

int dbg_hooks_update(struct pb_err *err)
{
    if (!dbg_wanted()) {
        dbg_hooks_remove();
        return 0;
    }
    int rc = acquire(err);
    if (rc < 0)
        return rc;
    long mask = 0;
    if (dbg_bp_any())
        mask |= ev_bits[EV_PY_START];
    if (atomic_load(&dbg_exc_raised))
        mask |= ev_bits[EV_RAISE];
    if (global_modes())
        mask |= ev_bits[EV_LINE] | ev_bits[EV_PY_START] | ev_bits[EV_PY_RETURN] |
                ev_bits[EV_PY_YIELD] | ev_bits[EV_PY_UNWIND];
    refresh_locals();
    call_void(PyObject_CallMethod(mon, "set_events", "il", tool, mask));
    call_void(PyObject_CallMethod(mon, "restart_events", NULL));
    return 0;
}

int dbg_hooks_pause_all(struct pb_err *err)
{
    return dbg_hooks_update(err);
}

void dbg_hooks_stepping(PyFrameObject *f)
{
    (void)f;
    struct pb_err err = {0};
    if (dbg_hooks_update(&err) < 0)
        PB_LOG(PB_LOG_WARN, "stepping: %s", err.msg);
}

void dbg_hooks_census(struct dbg_census *into)
{
    /* Ground truth from sys.monitoring itself: any tool id named as ours. */
    PyObject *m = PySys_GetObject("monitoring");
    int found = -1;
    for (int id = 0; m && id < 6 && found < 0; id++) {
        PyObject *name = PyObject_CallMethod(m, "get_tool", "i", id);
        if (name && PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "probing") == 0)
            found = id;
        Py_XDECREF(name);
        PyErr_Clear();
    }
    into->traced_threads = 0;
    into->monitoring_tool = found;
    into->threading_hook = 0;
    into->eval_frame_hook = 0;
    into->entry_hooks = 0;
}

void dbg_hooks_remove(void)
{
    if (tool < 0)
        return;
    call_void(PyObject_CallMethod(mon, "set_events", "ii", tool, 0));
    PyObject *codes = local_codes ? PySequence_List(local_codes) : NULL;
    for (Py_ssize_t i = 0; codes && i < PyList_GET_SIZE(codes); i++)
        call_void(set_local(PyList_GET_ITEM(codes, i), 0));
    Py_XDECREF(codes);
    Py_CLEAR(local_codes);
    for (int i = 0; i < EV_N; i++) {
        call_void(PyObject_CallMethod(mon, "register_callback", "ilO", tool, ev_bits[i], Py_None));
        Py_CLEAR(callbacks[i]);
    }
    call_void(PyObject_CallMethod(mon, "free_tool_id", "i", tool));
    PB_LOG(PB_LOG_DEBUG, "sys.monitoring tool id %d given back", tool);
    tool = -1;
    Py_CLEAR(disable);
    Py_CLEAR(mon);
}

#endif
