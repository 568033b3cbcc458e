/* SPDX-License-Identifier: MIT */
/* perf --torch: compiles the tracer (torch_py.c) into a private namespace, gives it two C
 * functions (emit: rows into the history tables; rss: the resident set size from one pread of
 * /proc/self/statm), and runs its start/stop/status on the worker under the GIL. The hooks
 * themselves run in the job's threads; the only C they call per hook is rss(), and emit() once
 * per step. Tables: docs/tables.md; design: docs/torch.md. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "gil/pyhelper.h"
#include "sql/store.h"
#include "internal.h"
#include "torch.h"

#define TRACE_TABLE PROBE_TORCH_TRACE_TABLE
#define STEPS_TABLE PROBE_TORCH_STEPS_TABLE
#define NTRACE probe_torch_trace_ncols
#define NSTEPS probe_torch_steps_ncols

static int statm_fd = -1;  /* GIL-protected */
static int tables_defined; /* GIL-protected */

/* One Python value as a cell: None, int, float, str (borrowed text, valid while v lives). */
static void cell(PyObject *v, struct probe_value *out)
{
    memset(out, 0, sizeof *out);
    if (v == Py_None) {
        out->type = PROBE_V_NULL;
    } else if (PyLong_Check(v)) {
        out->type = PROBE_V_INT;
        out->i = PyLong_AsLongLong(v);
        out->d = (double)out->i;
        if (out->i == -1 && PyErr_Occurred()) { /* beyond 64 bits */
            PyErr_Clear();
            out->type = PROBE_V_REAL;
            out->d = PyLong_AsDouble(v);
            PyErr_Clear();
        }
    } else if (PyFloat_Check(v)) {
        out->type = PROBE_V_REAL;
        out->d = PyFloat_AS_DOUBLE(v);
    } else if (PyUnicode_Check(v)) {
        const char *s = PyUnicode_AsUTF8(v);
        if (!s)
            PyErr_Clear();
        out->type = s ? PROBE_V_TEXT : PROBE_V_NULL;
        out->s = (char *)s; /* sql_history_append copies it */
    } else {
        out->type = PROBE_V_NULL;
    }
}

static int append(const char *table, PyObject *row, int ncols)
{
    struct probe_value v[16];
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != ncols)
        return -1;
    for (int i = 0; i < ncols; i++)
        cell(PyTuple_GET_ITEM(row, i), &v[i]);
    return sql_history_append(table, v, ncols);
}

/* emit(rows, step): rows of python.torch_trace (a list of tuples), then one of
 * python.torch_steps. Called by the tracer once per step, in the job's thread. Requires GIL. */
static PyObject *emit(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *rows, *step;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &rows, &PyTuple_Type, &step))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++)
        append(TRACE_TABLE, PyList_GET_ITEM(rows, i), NTRACE);
    append(STEPS_TABLE, step, NSTEPS);
    Py_RETURN_NONE;
}

/* rss(): resident bytes, 0 when /proc cannot be read. One pread per call. Requires GIL. */
static PyObject *rss(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    static long page;
    char buf[128];
    if (statm_fd < 0) {
        statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        page = sysconf(_SC_PAGESIZE);
    }
    ssize_t n = statm_fd >= 0 ? pread(statm_fd, buf, sizeof buf - 1, 0) : -1;
    long long pages = 0;
    if (n > 0) {
        buf[n] = 0;
        const char *sp = strchr(buf, ' ');
        pages = sp ? strtoll(sp + 1, NULL, 10) : 0;
    }
    return PyLong_FromLongLong(pages * page);
}

/* Does a frame of this stack run torch/optim/optimizer.py, whose optimizer step wrapper iterates
 * torch.optim.optimizer._global_optimizer_post_hooks live (torch 2.x)? Requires GIL; runs no
 * Python code. */
static int in_optimizer(PyObject *frame)
{
    static const char tail[] = "torch/optim/optimizer.py";
    PyObject *f = frame;
    Py_XINCREF(f);
    for (int depth = 0; f && f != Py_None && depth < 1024; depth++) {
        PyObject *code = PyObject_GetAttrString(f, "f_code");
        PyObject *fn = code ? PyObject_GetAttrString(code, "co_filename") : NULL;
        const char *s = fn && PyUnicode_Check(fn) ? PyUnicode_AsUTF8(fn) : NULL;
        size_t n = s ? strlen(s) : 0;
        int hit = n >= sizeof tail - 1 && strcmp(s + n - (sizeof tail - 1), tail) == 0;
        Py_XDECREF(fn);
        Py_XDECREF(code);
        PyObject *back = hit ? NULL : PyObject_GetAttrString(f, "f_back");
        Py_DECREF(f);
        if (hit)
            return 1;
        f = back;
        PyErr_Clear();
    }
    Py_XDECREF(f);
    PyErr_Clear();
    return 0;
}

/* safe_edit(d, key, value, in_hook) -> bool: d[key] = value (value None: del d[key]) only when no
 * iteration of d can be under way, so that the job never gets "OrderedDict mutated during
 * iteration" out of its optimizer step. torch 2.x calls the global post-step hooks from a loop
 * over the dict's live values in torch/optim/optimizer.py, and a thread switch can fall between
 * two hooks: so no thread may have a frame there, but the calling thread when in_hook (our hook
 * runs inside that loop: there only the last key may go, the one the loop stands on). The check
 * and the edit run no Python code, so no other thread runs in between. Requires GIL. */
static PyObject *safe_edit(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *d, *key, *value;
    int in_hook;
    if (!PyArg_ParseTuple(args, "OOOp", &d, &key, &value, &in_hook))
        return NULL;
    PyObject *cur = PySys_GetObject("_current_frames"); /* borrowed */
    PyObject *frames = cur ? PyObject_CallObject(cur, NULL) : NULL;
    if (!frames || !PyDict_Check(frames)) {
        Py_XDECREF(frames);
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    unsigned long me = PyThread_get_thread_ident();
    PyObject *tid, *frame;
    Py_ssize_t pos = 0;
    int busy = 0;
    while (!busy && PyDict_Next(frames, &pos, &tid, &frame))
        busy = !(in_hook && PyLong_AsUnsignedLong(tid) == me) && in_optimizer(frame);
    PyErr_Clear();
    Py_DECREF(frames);
    if (busy)
        Py_RETURN_FALSE;
    if (value != Py_None) {
        if (PyObject_SetItem(d, key, value) < 0)
            return NULL;
        Py_RETURN_TRUE;
    }
    if (in_hook) { /* only the last key: the loop that called us stands on it */
        PyObject *it = PyObject_GetIter(d), *k, *last = NULL;
        while (it && (k = PyIter_Next(it))) {
            Py_XDECREF(last);
            last = k;
        }
        Py_XDECREF(it);
        int is_last = last && !PyErr_Occurred() && PyObject_RichCompareBool(last, key, Py_EQ) == 1;
        Py_XDECREF(last);
        PyErr_Clear();
        if (!is_last)
            Py_RETURN_FALSE;
    }
    if (PyObject_DelItem(d, key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return NULL;
        PyErr_Clear();
    }
    Py_RETURN_TRUE;
}

static PyMethodDef emit_def = {"emit", emit, METH_VARARGS, "rows into the history tables"};
static PyMethodDef safe_edit_def = {"safe_edit", safe_edit, METH_VARARGS,
                                    "edit a hook dict only when no loop can be iterating it"};
static PyObject *safe_edit_fn; /* GIL-protected; made on first start, kept */
static PyMethodDef rss_def = {"rss", rss, METH_NOARGS, "resident set size in bytes"};

PyObject *torch_compile(const char *src, const char *filename, const char *modname)
{
    PyObject *d = PyDict_New();
    PyObject *code = d ? Py_CompileString(src, filename, Py_file_input) : NULL;
    PyObject *name = PyUnicode_FromString(modname);
    PyObject *r = NULL;
    if (code && name && PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        PyDict_SetItemString(d, "__name__", name) == 0)
        r = PyEval_EvalCode(code, d, d);
    Py_XDECREF(r);
    Py_XDECREF(name);
    Py_XDECREF(code);
    if (!r)
        Py_CLEAR(d);
    return d;
}

PyObject *torch_ns_fn(struct probe_torch_ns *n, const char *name)
{
    if (!n->ns) {
        PyObject *d = torch_compile(n->src, n->filename, n->modname);
        if (!d)
            return NULL;
        for (int i = 0; i < 2; i++)
            if (!(n->fns[i] = PyCFunction_New(n->defs[i], NULL))) {
                Py_CLEAR(n->fns[0]);
                Py_DECREF(d);
                return NULL;
            }
        n->ns = d;
    }
    PyObject *f = PyDict_GetItemString(n->ns, name);
    if (!f)
        PyErr_Format(PyExc_AttributeError, "probing's %s has no '%s'", n->modname, name);
    return f;
}

/* The tracer: its functions get emit() and rss(). */
static struct probe_torch_ns tracer = {
    probe_torch_src, "<probing-torch>", "probing._torch", {&emit_def, &rss_def}, NULL,
    {NULL, NULL}};

static int define_tables(struct pb_err *err)
{
    if (tables_defined)
        return 0;
    int rc = sql_torch_tables_define(err);
    if (rc == 0)
        rc = sql_history_index(TRACE_TABLE, "step,module", err);
    if (rc == 0)
        rc = sql_history_index(STEPS_TABLE, "step", err);
    if (rc == 0)
        tables_defined = 1;
    return rc;
}

/* A copy of the tracer's answer (a dict of str, int, float, bool, None and lists of str) into
 * out. Requires GIL; leaves no exception set. */
void torch_copy_dict(PyObject *d, cJSON *out)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!key) {
            PyErr_Clear();
            continue;
        }
        if (v == Py_None) {
            cJSON_AddNullToObject(out, key);
        } else if (PyBool_Check(v)) {
            cJSON_AddBoolToObject(out, key, v == Py_True);
        } else if (PyLong_Check(v) || PyFloat_Check(v)) {
            double x = PyFloat_Check(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
            PyErr_Clear();
            cJSON_AddNumberToObject(out, key, x);
        } else if (PyUnicode_Check(v)) {
            const char *s = PyUnicode_AsUTF8(v);
            PyErr_Clear();
            cJSON_AddStringToObject(out, key, s ? s : "?");
        } else if (PyList_Check(v)) {
            cJSON *a = cJSON_AddArrayToObject(out, key);
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
                PyObject *s = PyList_GET_ITEM(v, i);
                const char *t = PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
                PyErr_Clear();
                if (t)
                    cJSON_AddItemToArray(a, cJSON_CreateString(t));
            }
        }
    }
}

int torch_run(int action, int every, cJSON *out, struct pb_err *err)
{
    static const char *const names[] = {"start", "stop", "status"};
    if (action < PROBE_TORCH_START || action > PROBE_TORCH_STATUS)
        return pb_err_set(err, PB_EBADARG, "unknown torch action %d", action);
    if (action == PROBE_TORCH_START) {
        PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
        if (!mods || !PyDict_GetItemString(mods, "torch"))
            return pb_err_set(err, PB_ESTATE,
                              "torch is not imported in process %d: start "
                              "tracing once the job has imported torch",
                              core_info_get()->pid);
        int rc = define_tables(err);
        if (rc < 0)
            return rc;
    }
    if (action != PROBE_TORCH_START && !tracer.ns) { /* never started: nothing to compile or stop */
        cJSON_AddBoolToObject(out, "running", 0);
        if (action == PROBE_TORCH_STOP)
            cJSON_AddBoolToObject(out, "stopped", 0);
        return 0;
    }
    PyObject *fn = torch_ns_fn(&tracer, names[action]);
    PyObject *res = NULL;
    if (fn)
        res = action != PROBE_TORCH_START ? PyObject_CallObject(fn, NULL)
              : (safe_edit_fn || (safe_edit_fn = PyCFunction_New(&safe_edit_def, NULL)))
                  ? PyObject_CallFunction(fn, "iOOO", every, tracer.fns[0], tracer.fns[1],
                                          safe_edit_fn)
                  : NULL;
    if (!res)
        return gil_py_fail(err, action == PROBE_TORCH_START  ? "starting the torch tracer"
                                : action == PROBE_TORCH_STOP ? "stopping the torch tracer"
                                                             : "reading the torch tracer's state");
    if (res == Py_None) {
        Py_DECREF(res);
        return pb_err_set(err, PB_ESTATE,
                          "torch in process %d has no torch.nn (is it still "
                          "being imported?): nothing to trace",
                          core_info_get()->pid);
    }
    if (PyDict_Check(res))
        torch_copy_dict(res, out);
    Py_DECREF(res);
    PyErr_Clear();
    return 0;
}
