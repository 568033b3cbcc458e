/* SPDX-License-Identifier: MIT */
/* Memory figures for probing/memory: the process's from /proc/self/status (no GIL), and
 * Python's (objects by type, gc, tracemalloc, torch CUDA) gathered by the helper (pyhelper.c)
 * under the GIL. The helper returns plain dicts and lists; they are copied into cJSON here as
 * data (the DAP layer wraps them in a response), which is why cJSON appears in probe/. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "pyhelper.h"
#include "gil.h"

#define MAX_OBJECTS 5000000 /* objects looked at by the by-type census */

int gil_memory_proc(cJSON *into, struct pb_err *err)
{
    static const struct {
        const char *key, *json;
    } fields[] = {
        {"VmRSS", "rss"},         {"VmSize", "vms"},      {"VmHWM", "peakRss"},
        {"VmPeak", "peakVms"},    {"RssAnon", "rssAnon"}, {"RssFile", "rssFile"},
        {"RssShmem", "rssShmem"}, {"VmData", "data"},     {"VmSwap", "swap"},
    };
    char buf[8192];
    long n = pb_read_file("/proc/self/status", buf, sizeof buf);
    if (n < 0)
        return pb_err_set(err, (int)n, "/proc/self/status: %s", pb_strerror((int)n));
    cJSON *p = cJSON_AddObjectToObject(into, "process");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "\n%s:", fields[i].key);
        const char *at = strstr(buf, key);
        if (!at)
            continue;
        long long kb = strtoll(at + strlen(key), NULL, 10);
        cJSON_AddNumberToObject(p, fields[i].json, (double)kb * 1024);
    }
    return 0;
}

/* A copy of a helper result (dict, list, tuple, str, int, float, bool, None) as cJSON; NULL
 * for anything else. New cJSON root. Requires GIL; clears any exception it causes. */
static cJSON *to_json(PyObject *o, int depth)
{
    if (depth > 8)
        return NULL;
    if (o == Py_None)
        return cJSON_CreateNull();
    if (PyBool_Check(o))
        return cJSON_CreateBool(o == Py_True);
    if (PyLong_Check(o)) {
        double d = PyLong_AsDouble(o);
        PyErr_Clear();
        return cJSON_CreateNumber(d);
    }
    if (PyFloat_Check(o))
        return cJSON_CreateNumber(PyFloat_AS_DOUBLE(o));
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s) {
            PyErr_Clear();
            return cJSON_CreateString("?");
        }
        return cJSON_CreateString(s);
    }
    if (PyList_Check(o) || PyTuple_Check(o)) {
        cJSON *a = cJSON_CreateArray();
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++) {
            cJSON *item = to_json(PySequence_Fast_GET_ITEM(o, i), depth + 1);
            if (item)
                cJSON_AddItemToArray(a, item);
        }
        return a;
    }
    if (PyDict_Check(o)) {
        cJSON *obj = cJSON_CreateObject();
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
            const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
            cJSON *item = key ? to_json(v, depth + 1) : NULL;
            PyErr_Clear();
            if (item)
                cJSON_AddItemToObject(obj, key, item);
        }
        return obj;
    }
    return NULL;
}

int gil_memory_python(cJSON *into, int top, const char *trace, const char *snapshot,
                      struct pb_err *err)
{
    PyObject *fn = gil_pyhelper_get("memory"); /* borrowed */
    PyObject *res =
        fn ? PyObject_CallFunction(fn, "iziz", top, trace, MAX_OBJECTS, snapshot) : NULL;
    if (!res || !PyDict_Check(res)) {
        PyObject *s = NULL;
        if (PyErr_Occurred()) {
#if PY_VERSION_HEX >= 0x030C0000
            PyObject *e = PyErr_GetRaisedException();
#else
            PyObject *t, *e, *tb;
            PyErr_Fetch(&t, &e, &tb);
            Py_XDECREF(t);
            Py_XDECREF(tb);
#endif
            s = e ? PyObject_Str(e) : NULL;
            Py_XDECREF(e);
        }
        const char *m = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
        pb_err_set(err, PB_EUNKNOWN, "reading Python's memory figures: %s", m ? m : "failed");
        Py_XDECREF(s);
        Py_XDECREF(res);
        PyErr_Clear();
        return PB_EUNKNOWN;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(res, &pos, &k, &v)) {
        const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        cJSON *item = key ? to_json(v, 0) : NULL;
        if (item)
            cJSON_AddItemToObject(into, key, item);
    }
    Py_DECREF(res);
    PyErr_Clear();
    return 0;
}
