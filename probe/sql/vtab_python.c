/* SPDX-License-Identifier: MIT */
/* The python.* live tables. Stacks and threads are read without the GIL (pyrt), so
 * python.backtrace and python.threads answer even when a thread holds the GIL forever (locals
 * NULL, names from the OS). python.objects, python.modules, python.gc and python.asyncio_tasks
 * need the GIL: they run
 * on the worker through gil_call and, when the GIL cannot be had in time, fail with a
 * message naming the table and the GIL holder. Task thread only. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyrt/pyrt.h"
#include "vtab.h"
#include "gil/gil.h"
#include "gil/pyhelper.h"
#include "core/settings.h"
#include "prof/prof.h"

#define MAX_FRAMES 1024
#define MAX_OBJECTS 20000000 /* python.objects stops counting here */

static long thread_id(const struct probe_thread *t)
{
    return pyrt_thread_id(t);
}

struct snapcall {
    struct probe_snapshot snap;
    int flags, rc;
    struct pb_err err;
};

/* Worker, GIL held. */
static void snap_with_gil(void *arg)
{
    struct snapcall *s = arg;
    s->rc = pyrt_snapshot(&s->snap, s->flags, MAX_FRAMES, &s->err);
}

/* A worker has a thread state while it runs a job or waits for the GIL: leave them out. */
static void drop_worker(struct probe_snapshot *snap)
{
    for (int i = 0; i < snap->nthreads; i++)
        if (gil_worker_owns(snap->threads[i].ident)) {
            pyrt_thread_free(&snap->threads[i]);
            memmove(&snap->threads[i], &snap->threads[i + 1],
                    (size_t)(snap->nthreads - i - 1) * sizeof snap->threads[0]);
            snap->nthreads--;
            i--;
        }
}

/* A snapshot with flags (under the GIL) when it can be had in time, else without the GIL.
 * Returns the GIL outcome in *gil_rc (0 when flags were honoured). */
static int snapshot(struct snapcall *s, int flags, int *gil_rc)
{
    memset(s, 0, sizeof *s);
    s->flags = flags;
    *gil_rc = flags ? gil_call(snap_with_gil, s, core_setting_gil_timeout_ms()) : -1;
    if (*gil_rc == 0 && s->rc == 0) {
        drop_worker(&s->snap);
        return 0;
    }
    if (*gil_rc == 0) {
        pyrt_snapshot_free(&s->snap);
        *gil_rc = s->rc;
    }
    pb_err_clear(&s->err);
    int rc = pyrt_snapshot(&s->snap, 0, MAX_FRAMES, &s->err);
    if (rc == 0)
        drop_worker(&s->snap);
    return rc;
}

static char *locals_json(const struct probe_frame *f)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < f->nlocals; i++)
        if (f->locals[i].value)
            cJSON_AddStringToObject(o, f->locals[i].name, f->locals[i].value);
        else
            cJSON_AddNullToObject(o, f->locals[i].name);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

int sql_vtab_backtrace_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    struct snapcall s;
    int gil_rc;
    int rc = snapshot(&s, a->want_lazy ? PROBE_SNAP_LOCALS : 0, &gil_rc);
    if (rc < 0) {
        pb_err_set(err, rc, "python.backtrace: %s", s.err.msg);
        pyrt_snapshot_free(&s.snap);
        return rc;
    }
    for (int i = 0; !core_rows_error(r) && i < s.snap.nthreads; i++) {
        const struct probe_thread *t = &s.snap.threads[i];
        if (a->has_thread ? thread_id(t) != a->thread_id : !t->is_main)
            continue;
        for (int d = 0; !core_rows_error(r) && d < t->nframes; d++) {
            const struct probe_frame *f = &t->frames[d];
            core_rows_add_text(r, f->func ? f->func : "?");
            core_rows_add_text(r, f->file ? f->file : "?");
            core_rows_add_int(r, f->line);
            core_rows_add_int(r, d);
            core_rows_add_int(r, thread_id(t));
            core_rows_add_text(r, "python");
            if (gil_rc == 0 && f->nlocals >= 0) {
                char *j = locals_json(f);
                core_rows_add_text(r, j);
                cJSON_free(j);
            } else {
                core_rows_add_null(r);
            }
        }
    }
    pyrt_snapshot_free(&s.snap);
    return core_rows_error(r);
}

static int nframe_row(struct probe_rows *r, long tid, int depth, const struct prof_nframe *f,
                      const char *stack)
{
    int py = f->kind == PROF_NF_PYTHON;
    core_rows_add_int(r, tid);
    core_rows_add_int(r, depth);
    core_rows_add_text(r, py ? "python" : "native");
    f->name ? core_rows_add_text(r, f->name) : core_rows_add_null(r);
    py && f->file ? core_rows_add_text(r, f->file) : core_rows_add_null(r);
    py ? core_rows_add_int(r, f->line) : core_rows_add_null(r);
    !py && f->file ? core_rows_add_text(r, f->file) : core_rows_add_null(r);
    py ? core_rows_add_null(r) : core_rows_add_int(r, (long long)f->offset);
    py ? core_rows_add_null(r) : core_rows_add_int(r, (long long)f->pc);
    core_rows_add_text(r, stack);
    return core_rows_error(r);
}

int sql_vtab_native_bt_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    struct snapcall s;
    int gil_rc, n = 0;
    int rc = snapshot(&s, 0, &gil_rc);
    long *tids = NULL;
    struct prof_nstack *ns = NULL;
    if (rc < 0) {
        pb_err_set(err, rc, "python.native_backtrace: %s", s.err.msg);
        goto out;
    }
    size_t cap = 2 * (size_t)s.snap.nthreads + PROF_OTHERS_MAX + 1;
    tids = calloc(cap, sizeof *tids);
    ns = calloc(cap, sizeof *ns);
    if (!tids || !ns) {
        rc = pb_err_set(err, -ENOMEM, "python.native_backtrace: out of memory");
        goto out;
    }
    for (int i = 0; i < s.snap.nthreads; i++) {
        long tid = s.snap.threads[i].native_id;
        int seen = 0; /* one native stack per OS thread (one in a subinterpreter has two states) */
        for (int j = 0; j < n && !seen; j++)
            seen = tid > 0 && tids[j] == tid;
        if (!seen && (!a->has_thread || thread_id(&s.snap.threads[i]) == a->thread_id))
            tids[n++] = tid;
    }
    /* then the threads that run no Python, thread_id their kernel id (system.threads names
     * them) */
    int python = 0, more = 0, no = 0, np = s.snap.nthreads;
    long *skip = tids + cap - PROF_OTHERS_MAX - 1 - np, *others = skip + np;
    for (int i = 0; i < np; i++) {
        skip[i] = s.snap.threads[i].native_id;
        python |= a->has_thread && thread_id(&s.snap.threads[i]) == a->thread_id;
    }
    if (!python &&
        (no = prof_native_others(skip, np, others, NULL, PROF_OTHERS_MAX, &more, err)) < 0) {
        rc = no;
        goto out;
    }
    for (int i = 0; i < no; i++) /* n <= np + i: each write lands before its read */
        if (!a->has_thread || others[i] == a->thread_id)
            tids[n++] = others[i];
    if (n && (rc = prof_native_stacks(tids, n, 0, ns, err)) < 0)
        goto out;
    for (int i = 0; rc == 0 && i < n; i++) {
        const struct prof_nstack *t = &ns[i];
        for (int d = 0; rc == 0 && d < t->n; d++)
            rc = nframe_row(r, t->tid, d, &t->f[d], t->merged ? "merged" : "native");
        for (int d = 0; rc == 0 && d < t->npy; d++)
            rc = nframe_row(r, t->tid, d, &t->py[d], "python");
    }
out:
    for (int i = 0; ns && i < n; i++)
        prof_nstack_free(&ns[i]);
    free(ns);
    free(tids);
    pyrt_snapshot_free(&s.snap);
    return rc;
}

int sql_vtab_pythreads_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct snapcall s;
    int gil_rc;
    int rc = snapshot(&s, PROBE_SNAP_NAMES, &gil_rc);
    if (rc < 0) {
        pb_err_set(err, rc, "python.threads: %s", s.err.msg);
        pyrt_snapshot_free(&s.snap);
        return rc;
    }
    for (int i = 0; !core_rows_error(r) && i < s.snap.nthreads; i++) {
        const struct probe_thread *t = &s.snap.threads[i];
        core_rows_add_int(r, thread_id(t));
        core_rows_add_int(r, (long long)t->ident);
        core_rows_add_text(r, t->name ? t->name : "");
        t->native_id > 0 ? core_rows_add_int(r, t->native_id) : core_rows_add_null(r);
        core_rows_add_int(r, t->holds_gil);
        t->daemon >= 0 ? core_rows_add_int(r, t->daemon) : core_rows_add_null(r);
        core_rows_add_int(r, t->is_main);
        core_rows_add_text(r, sql_vtab_thread_state(t->native_id));
        core_rows_add_text(r, t->name_from_threading ? "threading" : "os");
        core_rows_add_int(r, t->interp_id);
    }
    pyrt_snapshot_free(&s.snap);
    return core_rows_error(r);
}

/* ---- tables that need the GIL ---- */

struct gilfill {
    struct probe_rows *r;
    int rc;
    struct pb_err err;
};

/* Run fn under the GIL; on failure name the table and who holds the GIL. */
static int with_gil(const char *table, probe_gil_fn fn, struct gilfill *g, struct pb_err *err)
{
    int timeout = core_setting_gil_timeout_ms();
    int rc = gil_call(fn, g, timeout);
    if (rc == 0 && g->rc == 0)
        return 0;
    if (rc == 0)
        return pb_err_set(err, g->rc, "%s: %s", table, g->err.msg);
    if (rc == PB_ENOGIL)
        return pb_err_set(err, rc,
                          "%s: the interpreter is not running Python code now "
                          "(starting or finalising)",
                          table);
    struct probe_snapshot s = {0};
    struct pb_err e2 = {0};
    const struct probe_thread *h = NULL;
    char busy[256];
    if (pyrt_snapshot(&s, 0, 1, &e2) == 0)
        for (int i = 0; i < s.nthreads && !h; i++)
            if (s.threads[i].holds_gil)
                h = &s.threads[i];
    if (gil_worker_busy_text(h ? h->ident : 0, busy, sizeof busy))
        pb_err_set(err, rc,
                   "%s needs the GIL: %s: interrupt it with 'probing -p PID eval "
                   "--interrupt'",
                   table, busy);
    else if (h)
        pb_err_set(err, rc,
                   "%s needs the GIL: it is held by thread %ld (%s) and was not "
                   "released within %d ms (gil_timeout_ms)",
                   table, thread_id(h), h->name ? h->name : "?", timeout);
    else
        pb_err_set(err, rc,
                   "%s needs the GIL: it could not be had within %d ms "
                   "(gil_timeout_ms)",
                   table, timeout);
    pyrt_snapshot_free(&s);
    return rc;
}

/* Turn the pending Python exception into g->err and clear it. Requires GIL. */
static void py_error(struct gilfill *g, const char *what)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    g->rc = pb_err_set(&g->err, PB_EUNKNOWN, "%s: %s", what, msg ? msg : "error");
    Py_XDECREF(s);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
}

struct typecount {
    PyTypeObject *type;
    long long count, size;
};

/* Requires GIL. */
static void objects_with_gil(void *arg)
{
    struct gilfill *g = arg;
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *all = gc ? PyObject_CallMethod(gc, "get_objects", NULL) : NULL;
    if (!all || !PyList_Check(all)) {
        py_error(g, "gc.get_objects()");
        Py_XDECREF(all);
        Py_XDECREF(gc);
        return;
    }
    size_t cap = 1024, used = 0;
    struct typecount *tab = calloc(cap, sizeof *tab);
    Py_ssize_t n = PyList_GET_SIZE(all);
    for (Py_ssize_t i = 0; tab && i < n && i < MAX_OBJECTS; i++) {
        PyObject *o = PyList_GET_ITEM(all, i);
        PyTypeObject *tp = Py_TYPE(o);
        if (used * 2 >= cap) { /* grow and rehash */
            struct typecount *nt = calloc(cap * 2, sizeof *nt);
            if (!nt) {
                free(tab);
                tab = NULL;
                break;
            }
            for (size_t k = 0; k < cap; k++)
                if (tab[k].type) {
                    size_t h = ((uintptr_t)tab[k].type >> 4) & (cap * 2 - 1);
                    while (nt[h].type)
                        h = (h + 1) & (cap * 2 - 1);
                    nt[h] = tab[k];
                }
            free(tab);
            tab = nt;
            cap *= 2;
        }
        size_t h = ((uintptr_t)tp >> 4) & (cap - 1);
        while (tab[h].type && tab[h].type != tp)
            h = (h + 1) & (cap - 1);
        if (!tab[h].type) {
            tab[h].type = tp;
            used++;
        }
        tab[h].count++;
        long long sz = tp->tp_basicsize;
        if (tp->tp_itemsize) {
            Py_ssize_t items = Py_SIZE(o);
            sz += (long long)(items < 0 ? -items : items) * tp->tp_itemsize;
        }
        tab[h].size += sz;
    }
    for (size_t k = 0; tab && !core_rows_error(g->r) && k < cap; k++) {
        if (!tab[k].type)
            continue;
        core_rows_add_text(g->r, tab[k].type->tp_name);
        core_rows_add_int(g->r, tab[k].count);
        core_rows_add_int(g->r, tab[k].size);
    }
    int rc = tab ? core_rows_error(g->r) : -ENOMEM;
    if (rc < 0)
        g->rc = pb_err_set(&g->err, rc, "out of memory");
    free(tab);
    Py_DECREF(all);
    Py_DECREF(gc);
}

int sql_vtab_objects_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    return with_gil("python.objects", objects_with_gil, &g, err);
}

/* A string attribute from a module's __dict__ without running code (no __getattr__). */
static const char *dict_str(PyObject *m, const char *key)
{
    if (!PyModule_Check(m))
        return NULL;
    PyObject *d = PyModule_GetDict(m);                     /* borrowed */
    PyObject *v = d ? PyDict_GetItemString(d, key) : NULL; /* borrowed */
    return v && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
}

/* Requires GIL. */
static void modules_with_gil(void *arg)
{
    struct gilfill *g = arg;
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    PyObject *copy = mods ? PyDict_Copy(mods) : NULL;
    if (!copy) {
        py_error(g, "sys.modules");
        return;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (!core_rows_error(g->r) && PyDict_Next(copy, &pos, &k, &v)) {
        const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!name) {
            PyErr_Clear();
            continue;
        }
        const char *file = dict_str(v, "__file__");
        if (!file)
            PyErr_Clear();
        core_rows_add_text(g->r, name);
        core_rows_add_text(g->r, file);
        const char *ver = dict_str(v, "__version__");
        if (!ver)
            PyErr_Clear();
        core_rows_add_text(g->r, ver);
    }
    int rc = core_rows_error(g->r);
    if (rc < 0)
        g->rc = pb_err_set(&g->err, rc, "out of memory");
    Py_DECREF(copy);
}

/* python.asyncio_tasks: every asyncio task (pyrt/asyncio.c), its rows built while the GIL is
 * held (no Python call among them). */
static int ids_text(const struct probe_atasks *at, const int *idx, int n, char **out)
{
    size_t cap = (size_t)n * 20 + 1;
    char *s = malloc(cap), *p = s;
    if (!s)
        return -ENOMEM;
    *p = '\0';
    for (int i = 0; i < n; i++)
        p += snprintf(p, cap - (size_t)(p - s), "%s0x%lx", i ? "," : "",
                      (unsigned long)at->tasks[idx[i]].addr);
    *out = s;
    return 0;
}

static int atask_row(struct probe_rows *r, const struct probe_atasks *at,
                     const struct probe_atask *t)
{
    char id[32], loop[32], *awaits = NULL, *by = NULL, *stack = NULL;
    size_t cap = 1;
    for (int i = 0; i < t->nframes; i++)
        cap += strlen(t->frames[i].func) + strlen(t->frames[i].file) + 32;
    const struct probe_aframe *f = t->nframes ? &t->frames[0] : NULL;
    int rc = -ENOMEM;
    if (!(stack = malloc(cap)) || ids_text(at, t->awaits, t->nawaits, &awaits) < 0 ||
        ids_text(at, t->by, t->nby, &by) < 0)
        goto out;
    char *p = stack;
    *p = '\0';
    for (int i = 0; i < t->nframes; i++)
        p += snprintf(p, cap - (size_t)(p - stack), "%s%s (%s:%d)", i ? ";" : "", t->frames[i].func,
                      t->frames[i].file, t->frames[i].line);
    snprintf(id, sizeof id, "0x%lx", (unsigned long)t->addr);
    snprintf(loop, sizeof loop, "0x%lx", (unsigned long)t->loop);
    t->thread_id > 0 ? core_rows_add_int(r, t->thread_id) : core_rows_add_null(r);
    core_rows_add_text(r, id);
    core_rows_add_text(r, t->name ? t->name : "?");
    core_rows_add_text(r, t->state);
    core_rows_add_int(r, t->running);
    t->coro ? core_rows_add_text(r, t->coro) : core_rows_add_null(r);
    f ? core_rows_add_text(r, f->func) : core_rows_add_null(r);
    f ? core_rows_add_text(r, f->file) : core_rows_add_null(r);
    f ? core_rows_add_int(r, f->line) : core_rows_add_null(r);
    core_rows_add_text(r, stack);
    t->waiter_type ? core_rows_add_text(r, t->waiter_type) : core_rows_add_null(r);
    core_rows_add_text(r, awaits);
    core_rows_add_text(r, by);
    t->cycle ? core_rows_add_int(r, t->cycle) : core_rows_add_null(r);
    t->loop ? core_rows_add_text(r, loop) : core_rows_add_null(r);
    rc = core_rows_error(r);
out:
    free(stack);
    free(awaits);
    free(by);
    return rc;
}

/* Requires GIL. */
static void atasks_with_gil(void *arg)
{
    struct gilfill *g = arg;
    struct probe_atasks at;
    if ((g->rc = pyrt_asyncio_tasks(&at, &g->err)) < 0)
        return;
    int rc = 0;
    for (int i = 0; rc == 0 && i < at.ntasks; i++)
        rc = atask_row(g->r, &at, &at.tasks[i]);
    if (rc < 0)
        g->rc = pb_err_set(&g->err, rc, "out of memory");
    pyrt_atasks_free(&at);
}

/* Without the GIL (it could not be had in time): 3.14+ keeps the pending C tasks on per-thread
 * lists that are read from memory (pyrt/asyncio_mem.c), as `debug --dump --tasks` does; before
 * 3.14, or when they cannot be read, the GIL's error stands. */
int sql_vtab_atasks_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    int rc = with_gil("python.asyncio_tasks", atasks_with_gil, &g, err);
    if (rc == 0 || rc == PB_ENOGIL || g.rc < 0 || r->ncells > 0)
        return rc;
    struct probe_atasks at;
    struct pb_err e = {0};
    if (pyrt_asyncio_tasks_mem(&at, &e) < 0)
        return rc;
    int wr = 0;
    for (int i = 0; wr == 0 && i < at.ntasks; i++)
        wr = atask_row(r, &at, &at.tasks[i]);
    pyrt_atasks_free(&at);
    if (wr < 0)
        return pb_err_set(err, wr, "python.asyncio_tasks: out of memory");
    pb_err_clear(err);
    return 0;
}

int sql_vtab_modules_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    return with_gil("python.modules", modules_with_gil, &g, err);
}

static long long item_ll(PyObject *seq, Py_ssize_t i)
{
    PyObject *v = PySequence_GetItem(seq, i);
    long long x = v ? PyLong_AsLongLong(v) : -1;
    Py_XDECREF(v);
    if (PyErr_Occurred())
        PyErr_Clear();
    return x;
}

static long long dict_ll(PyObject *d, const char *key)
{
    PyObject *v = PyDict_Check(d) ? PyDict_GetItemString(d, key) : NULL; /* borrowed */
    long long x = v ? PyLong_AsLongLong(v) : -1;
    if (PyErr_Occurred())
        PyErr_Clear();
    return x;
}

/* Requires GIL. */
static void gc_with_gil(void *arg)
{
    struct gilfill *g = arg;
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *count = gc ? PyObject_CallMethod(gc, "get_count", NULL) : NULL;
    PyObject *thr = count ? PyObject_CallMethod(gc, "get_threshold", NULL) : NULL;
    PyObject *stats = thr ? PyObject_CallMethod(gc, "get_stats", NULL) : NULL;
    PyObject *en = stats ? PyObject_CallMethod(gc, "isenabled", NULL) : NULL;
    if (!en) {
        py_error(g, "gc");
    } else {
        Py_ssize_t ngen = PySequence_Size(stats);
        for (Py_ssize_t i = 0; !core_rows_error(g->r) && i < ngen && i < 3; i++) {
            PyObject *st = PySequence_GetItem(stats, i);
            core_rows_add_int(g->r, i);
            core_rows_add_int(g->r, item_ll(count, i));
            core_rows_add_int(g->r, item_ll(thr, i));
            core_rows_add_int(g->r, dict_ll(st, "collections"));
            core_rows_add_int(g->r, dict_ll(st, "collected"));
            core_rows_add_int(g->r, dict_ll(st, "uncollectable"));
            core_rows_add_int(g->r, PyObject_IsTrue(en) == 1);
            Py_XDECREF(st);
        }
        if (PyErr_Occurred())
            PyErr_Clear();
        int rc = core_rows_error(g->r);
        if (rc < 0)
            g->rc = pb_err_set(&g->err, rc, "out of memory");
    }
    Py_XDECREF(en);
    Py_XDECREF(stats);
    Py_XDECREF(thr);
    Py_XDECREF(count);
    Py_XDECREF(gc);
}

int sql_vtab_gc_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    return with_gil("python.gc", gc_with_gil, &g, err);
}

/* ---- python.tracemalloc ---- */

#define MAX_TRACEMALLOC_ROWS 100000

/* tracemalloc's statistics by line, when the target is tracing (no rows otherwise; importing or
 * starting tracemalloc is `probing memory --trace start`'s job, not a query's). Requires GIL. */
static void tracemalloc_with_gil(void *arg)
{
    struct gilfill *g = arg;
    PyObject *mods = PyImport_GetModuleDict();                              /* borrowed */
    PyObject *tm = mods ? PyDict_GetItemString(mods, "tracemalloc") : NULL; /* borrowed */
    if (!tm)
        return;
    Py_INCREF(tm);
    PyObject *tracing = PyObject_CallMethod(tm, "is_tracing", NULL);
    PyObject *snap = NULL, *filt = NULL, *stats = NULL;
    if (!tracing) {
        py_error(g, "tracemalloc.is_tracing");
        goto out;
    }
    if (PyObject_IsTrue(tracing) != 1)
        goto out;
    snap = PyObject_CallMethod(tm, "take_snapshot", NULL);
    /* Leave out tracemalloc's own allocations, as `probing memory` does. */
    PyObject *file = snap ? PyObject_GetAttrString(tm, "__file__") : NULL;
    PyObject *f = file ? PyObject_CallMethod(tm, "Filter", "OO", Py_False, file) : NULL;
    filt = f ? PyObject_CallMethod(snap, "filter_traces", "((O))", f) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(file);
    stats = filt ? PyObject_CallMethod(filt, "statistics", "s", "lineno") : NULL;
    if (!stats) {
        py_error(g, "tracemalloc");
        goto out;
    }
    Py_ssize_t n = PySequence_Size(stats);
    for (Py_ssize_t i = 0; !core_rows_error(g->r) && i < n && i < MAX_TRACEMALLOC_ROWS; i++) {
        PyObject *st = PySequence_GetItem(stats, i);
        PyObject *tb = st ? PyObject_GetAttrString(st, "traceback") : NULL;
        PyObject *fr = tb ? PySequence_GetItem(tb, 0) : NULL;
        PyObject *fname = fr ? PyObject_GetAttrString(fr, "filename") : NULL;
        PyObject *line = fr ? PyObject_GetAttrString(fr, "lineno") : NULL;
        PyObject *size = st ? PyObject_GetAttrString(st, "size") : NULL;
        PyObject *count = st ? PyObject_GetAttrString(st, "count") : NULL;
        const char *fs = fname && PyUnicode_Check(fname) ? PyUnicode_AsUTF8(fname) : NULL;
        long long ln = line ? PyLong_AsLongLong(line) : -1;
        long long sz = size ? PyLong_AsLongLong(size) : -1;
        long long ct = count ? PyLong_AsLongLong(count) : -1;
        if (PyErr_Occurred())
            PyErr_Clear();
        core_rows_add_text(g->r, fs ? fs : "<unknown>");
        core_rows_add_int(g->r, ln);
        core_rows_add_int(g->r, sz);
        core_rows_add_int(g->r, ct);
        Py_XDECREF(count);
        Py_XDECREF(size);
        Py_XDECREF(line);
        Py_XDECREF(fname);
        Py_XDECREF(fr);
        Py_XDECREF(tb);
        Py_XDECREF(st);
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    if (core_rows_error(g->r) < 0)
        g->rc = pb_err_set(&g->err, core_rows_error(g->r), "out of memory");
out:
    Py_XDECREF(stats);
    Py_XDECREF(filt);
    Py_XDECREF(snap);
    Py_XDECREF(tracing);
    Py_DECREF(tm);
}

int sql_vtab_tracemalloc_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    return with_gil("python.tracemalloc", tracemalloc_with_gil, &g, err);
}

/* ---- python.cuda_memory ---- */

const struct probe_column vtab_cuda_memory_cols[11] = {
    {"device", "INTEGER", "CUDA device index (torch's, after CUDA_VISIBLE_DEVICES)"},
    {"name", "TEXT", "device name"},
    {"allocated", "INTEGER", "bytes in tensors now (allocated_bytes.all.current)"},
    {"max_allocated", "INTEGER", "peak of allocated (allocated_bytes.all.peak)"},
    {"reserved", "INTEGER",
     "bytes the caching allocator holds from CUDA (reserved_bytes.all.current)"},
    {"max_reserved", "INTEGER", "peak of reserved"},
    {"active", "INTEGER", "bytes in active blocks (active_bytes.all.current)"},
    {"inactive_split", "INTEGER",
     "bytes in inactive split blocks: fragmentation "
     "(inactive_split_bytes.all.current)"},
    {"inactive_split_blocks", "INTEGER", "inactive split blocks (inactive_split.all.current)"},
    {"alloc_retries", "INTEGER",
     "allocations that failed, freed the cache and retried "
     "(num_alloc_retries)"},
    {"ooms", "INTEGER", "out-of-memory errors raised (num_ooms)"},
};

/* Requires GIL. The helper's cuda_memory(): never initialises CUDA. */
static void cuda_memory_with_gil(void *arg)
{
    static const char *const keys[] = {"allocated",           "maxAllocated", "reserved",
                                       "maxReserved",         "active",       "inactiveSplit",
                                       "inactiveSplitBlocks", "allocRetries", "ooms"};
    struct gilfill *g = arg;
    PyObject *fn = gil_pyhelper_get("cuda_memory"); /* borrowed */
    PyObject *res = fn ? PyObject_CallObject(fn, NULL) : NULL;
    if (!res || !PyDict_Check(res)) {
        py_error(g, "torch.cuda.memory_stats()");
        Py_XDECREF(res);
        return;
    }
    PyObject *why = PyDict_GetItemString(res, "why"); /* borrowed */
    if (why && PyUnicode_Check(why))
        snprintf(probe_vtab_note, sizeof probe_vtab_note, "no CUDA memory: %s",
                 PyUnicode_AsUTF8(why));
    PyObject *devs = PyDict_GetItemString(res, "devices"); /* borrowed */
    for (Py_ssize_t i = 0;
         !core_rows_error(g->r) && devs && PyList_Check(devs) && i < PyList_GET_SIZE(devs); i++) {
        PyObject *d = PyList_GET_ITEM(devs, i);
        if (!PyDict_Check(d))
            continue;
        PyObject *idx = PyDict_GetItemString(d, "index"), *name = PyDict_GetItemString(d, "name");
        core_rows_add_int(g->r, idx ? PyLong_AsLongLong(idx) : -1);
        const char *ns = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        ns ? core_rows_add_text(g->r, ns) : core_rows_add_null(g->r);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            PyObject *v = PyDict_GetItemString(d, keys[k]);
            if (v && PyLong_Check(v))
                core_rows_add_int(g->r, PyLong_AsLongLong(v));
            else
                core_rows_add_null(g->r);
        }
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    int rc = core_rows_error(g->r);
    if (rc < 0)
        g->rc = pb_err_set(&g->err, rc, "out of memory");
    Py_DECREF(res);
}

int sql_vtab_cuda_memory_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct gilfill g = {r, 0, {0, ""}};
    return with_gil("python.cuda_memory", cuda_memory_with_gil, &g, err);
}
