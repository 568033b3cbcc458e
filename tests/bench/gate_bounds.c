/* SPDX-License-Identifier: MIT */
/* make bench, what bounds the debugger's breakpoint gate on CPython 3.8-3.11 (bench_gate.py):
 * a Python extension, built by the bench per interpreter, with
 * - eval_install()/eval_remove(): a frame-evaluation function (PEP 523) that only calls the
 *   default one, the least any PEP 523 gate can do;
 * - vc_hook(f)/vc_count(): a function's vectorcall replaced by one that counts its calls (and
 *   its func_version cleared), the per-function hook a gate could use instead. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE 1
#include "internal/pycore_frame.h"
typedef struct _PyInterpreterFrame eval_frame_t;
#else
typedef PyFrameObject eval_frame_t;
#endif

static PyObject *pass_through(PyThreadState *ts, eval_frame_t *f, int throwflag)
{
    return _PyEval_EvalFrameDefault(ts, f, throwflag);
}

static PyObject *eval_install(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), pass_through);
    Py_RETURN_NONE;
}

static PyObject *eval_remove(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), _PyEval_EvalFrameDefault);
    Py_RETURN_NONE;
}

static long long vc_calls;

static PyObject *counting(PyObject *f, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    vc_calls++;
    return _PyFunction_Vectorcall(f, args, nargsf, kw);
}

static PyObject *vc_hook(PyObject *self, PyObject *f)
{
    (void)self;
    if (!PyFunction_Check(f)) {
        PyErr_SetString(PyExc_TypeError, "a function");
        return NULL;
    }
    ((PyFunctionObject *)f)->vectorcall = counting;
#if PY_VERSION_HEX >= 0x030B0000
    ((PyFunctionObject *)f)->func_version = 0;
#endif
    Py_RETURN_NONE;
}

static PyObject *vc_count(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyLong_FromLongLong(vc_calls);
}

static PyMethodDef methods[] = {{"eval_install", eval_install, METH_NOARGS, NULL},
                                {"eval_remove", eval_remove, METH_NOARGS, NULL},
                                {"vc_hook", vc_hook, METH_O, NULL},
                                {"vc_count", vc_count, METH_NOARGS, NULL},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gate_bounds", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_gate_bounds(void)
{
    return PyModule_Create(&module);
}
