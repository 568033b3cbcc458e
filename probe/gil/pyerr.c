/* SPDX-License-Identifier: MIT */
/* Small conversions at the CPython boundary shared by the probe's files that hold the GIL:
 * a str as malloc'd UTF-8, and the pending exception as pb_err text. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "pyhelper.h"

char *gil_py_strdup(PyObject *o)
{
    Py_ssize_t n;
    const char *s = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return NULL;
    }
    char *d = malloc((size_t)n + 1);
    if (d) {
        memcpy(d, s, (size_t)n);
        d[n] = 0;
    }
    return d;
}

int gil_py_fail(struct pb_err *err, const char *what)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *t = NULL, *tb = NULL, *v = PyErr_GetRaisedException();
#else
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
#endif
    PyObject *s = v ? PyObject_Str(v) : NULL;
    char *m = gil_py_strdup(s);
    pb_err_set(err, PB_EUNKNOWN, "%s: %s", what, m ? m : "unknown Python error");
    free(m);
    Py_XDECREF(s);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
    return PB_EUNKNOWN;
}
