/* SPDX-License-Identifier: MIT */
/* perf --comm: the collectives recorder. Compiles its Python half (comm_py.c) into a private
 * namespace and gives it two C functions, begin() and end(), that write the ring of
 * core/comm.c; the live table torch.collectives reads that ring without the GIL. start, stop and
 * status run on the worker under the GIL; begin/end run in the job's threads at every
 * torch.distributed call. Design: docs/torch.md "perf --comm". */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cJSON.h>

#include "core/comm.h"
#include "core/core.h"
#include "core/settings.h"
#include "gil/pyhelper.h"
#include "internal.h"
#include "torch.h"

static const char *text_arg(PyObject *v)
{
    const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!s)
        PyErr_Clear();
    return s ? s : "";
}

static long long int_arg(PyObject *v)
{
    long long x = PyLong_Check(v) ? PyLong_AsLongLong(v) : 0;
    if (x == -1 && PyErr_Occurred())
        PyErr_Clear();
    return x;
}

/* begin(op, pg, ranks, seq_source, sizes, dtype, file, func, seq, bytes, rank, group_size, peer,
 * line, async): the record's id (0 when no ring is open). Called by the wrappers in the job's
 * threads at each call; fast call, no tuple. Requires GIL. */
static PyObject *begin(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    (void)self;
    if (n != 15)
        return PyLong_FromLong(0);
    struct probe_comm_call c = {
        .op = text_arg(a[0]),
        .pg = text_arg(a[1]),
        .ranks = text_arg(a[2]),
        .seq_source = text_arg(a[3]),
        .sizes = text_arg(a[4]),
        .dtype = text_arg(a[5]),
        .file = text_arg(a[6]),
        .func = text_arg(a[7]),
        .seq = int_arg(a[8]),
        .bytes = int_arg(a[9]),
        .rank = (int)int_arg(a[10]),
        .group_size = (int)int_arg(a[11]),
        .peer = (int)int_arg(a[12]),
        .line = (int)int_arg(a[13]),
        .async = (int)int_arg(a[14]),
    };
    return PyLong_FromUnsignedLongLong(core_comm_begin(&c));
}

/* end(id, ok): the call ended (ok true) or raised. Requires GIL. */
static PyObject *end(PyObject *self, PyObject *const *a, Py_ssize_t n)
{
    (void)self;
    if (n == 2) {
        unsigned long long id = PyLong_Check(a[0]) ? PyLong_AsUnsignedLongLong(a[0]) : 0;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            id = 0;
        }
        core_comm_end(id, PyObject_IsTrue(a[1]) == 1);
    }
    Py_RETURN_NONE;
}

static PyMethodDef begin_def = {"begin", (PyCFunction)(void (*)(void))begin, METH_FASTCALL,
                                "record the start of a torch.distributed call"};
static PyMethodDef end_def = {"end", (PyCFunction)(void (*)(void))end, METH_FASTCALL,
                              "record its end"};

/* The recorder: its functions get begin() and end(). */
static struct probe_torch_ns recorder = {
    probe_comm_src, "<probing-comm>", "probing._comm", {&begin_def, &end_def}, NULL, {NULL, NULL}};

/* Each process group's sequence number (comm_py.c sequence()), whether the recorder ever ran or
 * not: what a job that is already hung still tells. Requires GIL. */
static int sequence(cJSON *out, struct pb_err *err)
{
    PyObject *fn = torch_ns_fn(&recorder, "sequence");
    PyObject *res = fn ? PyObject_CallObject(fn, NULL) : NULL;
    if (!res)
        return gil_py_fail(err, "reading torch's sequence numbers");
    if (res == Py_None) {
        Py_DECREF(res);
        return pb_err_set(err, PB_ESTATE,
                          "torch.distributed is not imported in process %d: "
                          "no process group to read",
                          core_info_get()->pid);
    }
    if (PyDict_Check(res))
        torch_copy_dict(res, out);
    Py_DECREF(res);
    PyErr_Clear();
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(out, "groups");
    if (cJSON_IsString(groups)) {
        cJSON *g = cJSON_Parse(groups->valuestring);
        if (g)
            cJSON_ReplaceItemInObjectCaseSensitive(out, "groups", g);
        else
            cJSON_DeleteItemFromObjectCaseSensitive(out, "groups");
    }
    return 0;
}

int torch_comm_run(int action, int ddp, cJSON *out, struct pb_err *err)
{
    static const char *const names[] = {"start", "stop", "status", "status"};
    if (action == PROBE_COMM_SEQUENCE)
        return sequence(out, err);
    if (action < PROBE_TORCH_START || action > PROBE_COMM_FLIGHT_RECORDER)
        return pb_err_set(err, PB_EBADARG, "unknown comm action %d", action);
    if (action == PROBE_TORCH_START) {
        PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
        if (!mods || !PyDict_GetItemString(mods, "torch.distributed"))
            return pb_err_set(err, PB_ESTATE,
                              "torch.distributed is not imported in process "
                              "%d: start the recorder once the job has imported it",
                              core_info_get()->pid);
        int rc = core_comm_open((int)core_setting_int("comm.max_records"), err);
        if (rc < 0)
            return rc;
    }
    if (action != PROBE_TORCH_START && !recorder.ns) {
        cJSON_AddBoolToObject(out, "running", 0);
        if (action == PROBE_TORCH_STOP)
            cJSON_AddBoolToObject(out, "stopped", 0);
        return 0;
    }
    PyObject *fn = torch_ns_fn(&recorder, names[action]);
    PyObject *res = NULL;
    if (fn)
        res = action == PROBE_TORCH_START
                  ? PyObject_CallFunctionObjArgs(fn, recorder.fns[0], recorder.fns[1],
                                                 ddp ? Py_True : Py_False, NULL)
              : action == PROBE_COMM_FLIGHT_RECORDER
                  ? PyObject_CallFunctionObjArgs(fn, Py_True, NULL)
                  : PyObject_CallObject(fn, NULL);
    if (!res)
        return gil_py_fail(err, action == PROBE_TORCH_START ? "starting the collectives "
                                                              "recorder"
                                : action == PROBE_TORCH_STOP
                                    ? "stopping the collectives "
                                      "recorder"
                                    : "reading the collectives recorder's state");
    if (res == Py_None) {
        Py_DECREF(res);
        return pb_err_set(err, PB_ESTATE,
                          "torch.distributed is not available in process %d "
                          "(torch built without it): nothing to record",
                          core_info_get()->pid);
    }
    if (PyDict_Check(res))
        torch_copy_dict(res, out);
    /* The flight recorder's entries come as JSON text (lists of lists). */
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(out, "flightRecorderEntries");
    if (cJSON_IsString(fr)) {
        cJSON *entries = cJSON_Parse(fr->valuestring);
        if (entries)
            cJSON_ReplaceItemInObjectCaseSensitive(out, "flightRecorderEntries", entries);
    }
    Py_DECREF(res);
    PyErr_Clear();
    unsigned long long made;
    int size;
    core_comm_counts(&made, &size);
    cJSON_AddNumberToObject(out, "records", (double)made);
    cJSON_AddNumberToObject(out, "maxRecords", size);
    return 0;
}
