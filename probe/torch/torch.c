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

static int statm_fd = -1;   /* GIL-protected */
static int tables_defined;  /* GIL-protected */

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
        out->s = (char *)s; /* probe_history_append copies it */
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
    return probe_history_append(table, v, ncols);
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

static PyMethodDef emit_def = {"emit", emit, METH_VARARGS, "rows into the history tables"};
static PyMethodDef rss_def = {"rss", rss, METH_NOARGS, "resident set size in bytes"};

PyObject *probe_torch_compile(const char *src, const char *filename, const char *modname)
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

PyObject *probe_torch_ns_fn(struct probe_torch_ns *n, const char *name)
{
    if (!n->ns) {
        PyObject *d = probe_torch_compile(n->src, n->filename, n->modname);
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
static struct probe_torch_ns tracer = {probe_torch_src, "<probing-torch>", "probing._torch",
                                       {&emit_def, &rss_def}, NULL, {NULL, NULL}};

static int define_tables(struct pb_err *err)
{
    if (tables_defined)
        return 0;
    int rc = probe_torch_tables_define(err);
    if (rc == 0)
        rc = probe_history_index(TRACE_TABLE, "step,module", err);
    if (rc == 0)
        rc = probe_history_index(STEPS_TABLE, "step", err);
    if (rc == 0)
        tables_defined = 1;
    return rc;
}

/* A copy of the tracer's answer (a dict of str, int, float, bool, None and lists of str) into
 * out. Requires GIL; leaves no exception set. */
void probe_torch_copy_dict(PyObject *d, cJSON *out)
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

int probe_torch_run(int action, int every, cJSON *out, struct pb_err *err)
{
    static const char *const names[] = {"start", "stop", "status"};
    if (action < PROBE_TORCH_START || action > PROBE_TORCH_STATUS)
        return pb_err_set(err, PB_EBADARG, "unknown torch action %d", action);
    if (action == PROBE_TORCH_START) {
        PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
        if (!mods || !PyDict_GetItemString(mods, "torch"))
            return pb_err_set(err, PB_ESTATE, "torch is not imported in process %d: start "
                              "tracing once the job has imported torch",
                              probe_info_get()->pid);
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
    PyObject *fn = probe_torch_ns_fn(&tracer, names[action]);
    PyObject *res = NULL;
    if (fn)
        res = action == PROBE_TORCH_START ? PyObject_CallFunction(fn, "iOO", every, tracer.fns[0],
                                                                  tracer.fns[1])
                                          : PyObject_CallObject(fn, NULL);
    if (!res)
        return probe_py_fail(err, action == PROBE_TORCH_START ? "starting the torch tracer"
                             : action == PROBE_TORCH_STOP ? "stopping the torch tracer"
                             : "reading the torch tracer's state");
    if (res == Py_None) {
        Py_DECREF(res);
        return pb_err_set(err, PB_ESTATE, "torch in process %d has no torch.nn (is it still "
                          "being imported?): nothing to trace", probe_info_get()->pid);
    }
    if (PyDict_Check(res))
        probe_torch_copy_dict(res, out);
    Py_DECREF(res);
    PyErr_Clear();
    return 0;
}
