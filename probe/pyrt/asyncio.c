/* SPDX-License-Identifier: MIT */
/* Every asyncio task of the main interpreter, with the GIL (pyrt.h, pyrt_asyncio_tasks), for
 * `debug --dump --tasks` and python.asyncio_tasks.
 *
 * Where the tasks are: asyncio keeps a registry that asyncio.all_tasks() reads, of every loop:
 * asyncio.tasks._all_tasks (a WeakSet, 3.8-3.11: the C tasks register there too),
 * _scheduled_tasks (a WeakSet) and _eager_tasks (a set) on 3.12+; on 3.14+ the C tasks
 * (asyncio.Task and its subclasses) are instead on a list of each thread state that created them
 * (_PyThreadStateImpl.asyncio_tasks_head) and, once that thread is gone, of the interpreter
 * (interp->asyncio_tasks_head), through a node inside the task object whose offset is found by
 * looking for the task's header before it. asyncio is never imported, nothing of the program's
 * or of asyncio's Python code runs (no all_tasks(), no loop method, no __getattr__ or property:
 * attributes come from C getters and instance dicts only, as locals.c reads threading's names),
 * and no object of ours outlives the call: the coroutines' frames are read from memory through
 * the frame walker (frames.c) rather than through cr_frame, which would create a frame object
 * that stays with the coroutine. One trace stays: on 3.13+ a task named by its number keeps the
 * "Task-N" string Task.get_name() makes of it, as any repr() or log line of the task does.
 *
 * For each task: its name (Task.get_name(), the C method; _name of a Python task), state,
 * coroutine chain (cr_await / gi_yieldfrom / ag_await, innermost first), the future it is
 * blocked on (_fut_waiter) and the tasks that is (a task, or a gather's children), and the
 * thread running its loop (loop._thread_id, as set by BaseEventLoop.run_forever). Requires GIL
 * throughout; no exception is left set. */
#include "internal.h"
#include "repr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TASKS 10000
#define MAX_CHAIN 64     /* coroutines followed from a task's own */
#define MAX_CHILDREN 256 /* a gather's children looked at */

/* Attribute name of o without running Python code: refused when o's type has its own
 * __getattribute__/__getattr__ or when the name is a descriptor other than a C getter or member
 * (a property, a descriptor written in Python). Instance dict values and plain class values
 * pass. A new reference, or NULL (no exception left). */
static PyObject *attr_c(PyObject *o, const char *name)
{
    PyTypeObject *tp = Py_TYPE(o);
    PyObject *key, *d, *r;
    if (tp->tp_getattro != PyObject_GenericGetAttr || !(key = pyrt_name(name)))
        return NULL;
    d = _PyType_Lookup(tp, key); /* borrowed */
    if (d && Py_TYPE(d)->tp_descr_get && Py_TYPE(d) != &PyGetSetDescr_Type &&
        Py_TYPE(d) != &PyMemberDescr_Type)
        return NULL;
    r = PyObject_GenericGetAttr(o, key);
    if (!r)
        PyErr_Clear();
    return r;
}

/* sys.modules[name] when imported (never imports). Borrowed, or NULL. */
static PyObject *module_get(const char *name)
{
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    PyObject *m = modules && PyDict_Check(modules) ? PyDict_GetItemString(modules, name) : NULL;
    return m && PyModule_Check(m) ? m : NULL;
}

/* A module's global. Borrowed, or NULL. */
static PyObject *module_attr(PyObject *m, const char *name)
{
    PyObject *d = m ? PyModule_GetDict(m) : NULL; /* borrowed */
    return d ? PyDict_GetItemString(d, name) : NULL;
}

/* The classes that make a task or a future: asyncio's (C or Python) and the C module's. */
struct kinds {
    PyObject *task[3], *future[3];
};

static void kinds_get(struct kinds *k)
{
    PyObject *tasks = module_get("asyncio.tasks"), *futures = module_get("asyncio.futures");
    PyObject *c = module_get("_asyncio");
    const char *tn[3] = {"Task", "_PyTask", "Task"}, *fn[3] = {"Future", "_PyFuture", "Future"};
    PyObject *tm[3] = {tasks, tasks, c}, *fm[3] = {futures, futures, c};
    for (int i = 0; i < 3; i++) {
        PyObject *t = module_attr(tm[i], tn[i]), *f = module_attr(fm[i], fn[i]);
        k->task[i] = t && PyType_Check(t) ? t : NULL;
        k->future[i] = f && PyType_Check(f) ? f : NULL;
    }
}

static int is_kind(PyObject *const *types, PyObject *o)
{
    for (int i = 0; i < 3; i++)
        if (types[i] && PyObject_TypeCheck(o, (PyTypeObject *)types[i]))
            return 1;
    return 0;
}

/* The tasks found, each held by a reference while they are read. */
struct found {
    PyObject **v;
    int n, cap, truncated;
};

static void found_add(struct found *f, PyObject *o, const struct kinds *k)
{
    if (!is_kind(k->task, o))
        return;
    if (f->n >= MAX_TASKS) {
        f->truncated = 1;
        return;
    }
    if (f->n == f->cap) {
        int ncap = f->cap ? f->cap * 2 : 64;
        void *nv;
        if (!(nv = realloc(f->v, (size_t)ncap * sizeof *f->v))) {
            f->truncated = 1;
            return;
        }
        f->v = nv;
        f->cap = ncap;
    }
    Py_INCREF(o);
    f->v[f->n++] = o;
}

/* Every element of an exact set (no Python code runs when iterating one); a WeakSet's set of
 * references gives the objects still alive. */
static void set_collect(struct found *f, PyObject *set, int weak, const struct kinds *k)
{
    PyObject *it, *e;
    if (!set || !PyAnySet_CheckExact(set) || !(it = PyObject_GetIter(set))) {
        PyErr_Clear();
        return;
    }
    while ((e = PyIter_Next(it)) != NULL && !f->truncated) {
        if (!weak) {
            found_add(f, e, k);
        } else if (PyWeakref_CheckRef(e)) {
#if PY_VERSION_HEX >= 0x030D0000
            PyObject *o = NULL;
            if (PyWeakref_GetRef(e, &o) > 0) {
                found_add(f, o, k);
                Py_DECREF(o);
            }
#else
            PyObject *o = PyWeakref_GetObject(e); /* borrowed; Py_None when dead */
            if (o && o != Py_None)
                found_add(f, o, k);
#endif
        }
        Py_DECREF(e);
    }
    Py_XDECREF(e);
    Py_DECREF(it);
    PyErr_Clear();
}

static void weakset_collect(struct found *f, PyObject *ws, const struct kinds *k)
{
    PyObject *data = ws ? attr_c(ws, "data") : NULL;
    set_collect(f, data, 1, k);
    Py_XDECREF(data);
}

#if PY_VERSION_HEX >= 0x030E0000
/* 3.14+: the C tasks on a list of llist_node inside each task. The node's offset in the task is
 * found once: the nearest address before a node where a header names the C Task type. */
#define NODE_SCAN 1024
static size_t node_offset(uintptr_t node, PyTypeObject *task_type)
{
    for (size_t off = sizeof(PyObject); off <= NODE_SCAN; off += sizeof(void *)) {
        uintptr_t tp = 0;
        if (pyrt_mem_read_at(node - off + offsetof(PyObject, ob_type), &tp, sizeof tp) == 0 &&
            tp == (uintptr_t)task_type)
            return off;
    }
    return 0;
}

static void llist_collect(struct found *f, struct llist_node *head, PyTypeObject *task_type,
                          size_t *off, const struct kinds *k)
{
    uintptr_t n = 0;
    int steps = 0;
    if (pyrt_mem_read_at((uintptr_t)&head->next, &n, sizeof n) != 0)
        return;
    while (n && n != (uintptr_t)head && steps++ < MAX_TASKS && !f->truncated) {
        uintptr_t next = 0;
        if (pyrt_mem_read_at(n, &next, sizeof next) != 0) /* node->next */
            next = 0;
        /* a first task that is a subclass's may not tell the offset: the next node is tried */
        if (*off || (*off = node_offset(n, task_type)) != 0) {
            PyObject *obj = (PyObject *)(n - *off);
            if (pyrt_obj_ok(obj))
                found_add(f, obj, k);
        }
        n = next;
    }
}

static void thread_lists_collect(struct found *f, const struct kinds *k)
{
    PyInterpreterState *interp = PyInterpreterState_Main();
    PyTypeObject *task_type = (PyTypeObject *)k->task[2];
    size_t off = 0;
    int n = 0;
    if (!task_type)
        return;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts && n < PYRT_MAX_THREADS;
         ts = PyThreadState_Next(ts), n++)
        llist_collect(f, &((_PyThreadStateImpl *)ts)->asyncio_tasks_head, task_type, &off, k);
    llist_collect(f, &interp->asyncio_tasks_head, task_type, &off, k);
}
#endif

static int addr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (PyObject *const *)a, y = (uintptr_t) * (PyObject *const *)b;
    return x < y ? -1 : x > y;
}

static void found_dedup(struct found *f)
{
    int j = 0;
    if (f->n < 2)
        return; /* and f->v may be NULL, which qsort must not be given */
    qsort(f->v, (size_t)f->n, sizeof *f->v, addr_cmp);
    for (int i = 0; i < f->n; i++) {
        if (j > 0 && f->v[j - 1] == f->v[i])
            Py_DECREF(f->v[i]);
        else
            f->v[j++] = f->v[i];
    }
    f->n = j;
}

static int found_index(const struct found *f, PyObject *o)
{
    if (f->n == 0)
        return -1;
    PyObject **hit = bsearch(&o, f->v, (size_t)f->n, sizeof *f->v, addr_cmp);
    return hit ? (int)(hit - f->v) : -1;
}

/* A str object's UTF-8 copy (at most PYRT_MAX_STR bytes), NULL when o is not a str. Through the
 * C API (a task's name is a live str we hold): an ASCII str's own bytes, else a temporary UTF-8
 * bytes object, never the str's UTF-8 cache (PyUnicode_AsUTF8 would leave one in the heap). */
static char *str_dup(PyObject *o)
{
    const char *p;
    Py_ssize_t n;
    PyObject *b = NULL;
    char *r;
    if (!o || !PyUnicode_Check(o) || PyUnicode_READY(o) < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (PyUnicode_IS_ASCII(o)) {
        p = (const char *)PyUnicode_DATA(o);
        n = PyUnicode_GET_LENGTH(o);
    } else if ((b = PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape")) != NULL) {
        p = PyBytes_AS_STRING(b);
        n = PyBytes_GET_SIZE(b);
    } else {
        PyErr_Clear();
        return NULL;
    }
    if (n > PYRT_MAX_STR) { /* cut at a character's start */
        n = PYRT_MAX_STR;
        while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
            n--;
    }
    if ((r = malloc((size_t)n + 1)) != NULL) {
        memcpy(r, p, (size_t)n);
        r[n] = '\0';
    }
    Py_XDECREF(b);
    return r;
}

static char *task_name(PyObject *t)
{
    PyObject *key = pyrt_name("get_name");
    PyObject *d = key ? _PyType_Lookup(Py_TYPE(t), key) : NULL, *n = NULL;
    char *s;
    if (d && Py_TYPE(d) == &PyMethodDescr_Type) /* the C Task's own method */
        n = PyObject_CallFunctionObjArgs(d, t, NULL);
    else
        n = attr_c(t, "_name");
    PyErr_Clear();
    s = str_dup(n);
    Py_XDECREF(n);
    return s;
}

static const char *task_state(PyObject *t)
{
    PyObject *st = attr_c(t, "_state");
    const char *r = "pending";
    if (st && PyUnicode_Check(st)) {
        if (PyUnicode_CompareWithASCIIString(st, "CANCELLED") == 0)
            r = "cancelled";
        else if (PyUnicode_CompareWithASCIIString(st, "FINISHED") == 0)
            r = "done";
    }
    Py_XDECREF(st);
    return r;
}

/* What one read learned of a code object, for every frame of it (a server's thousands of tasks
 * share a few coroutines: each code object is read once), and of the last loop. */
#define CODE_SLOTS 256 /* power of two */
struct code_info {
    uintptr_t addr;
    int ok, firstlineno;
    char *func, *file;
    unsigned char *table;
    size_t tablen;
};
struct code_cache {
    struct code_info slot[CODE_SLOTS];
    struct pyrt_code_memo memo[CODE_SLOTS]; /* the frame walker's */
    uintptr_t last_loop;                    /* the thread of the last loop looked up */
    unsigned long last_ident;
    long last_tid;
};

static void code_info_clear(struct code_info *c)
{
    free(c->func);
    free(c->file);
    free(c->table);
    memset(c, 0, sizeof *c);
}

static const struct code_info *code_get(struct code_cache *cc, uintptr_t addr)
{
    struct code_info *c = &cc->slot[(addr >> 4) & (CODE_SLOTS - 1)];
    struct pyrt_code co;
    if (c->addr == addr)
        return c->ok ? c : NULL;
    code_info_clear(c);
    c->addr = addr;
    if (pyrt_code_read(addr, &co, pyrt_mem_read_at) != 0)
        return NULL;
    c->func = pyrt_str_read((const void *)co.name, PYRT_MAX_STR);
    c->file = pyrt_str_read((const void *)co.file, PYRT_MAX_STR);
    c->table = pyrt_bytes_read((const void *)co.table, PYRT_MAX_TABLE, &c->tablen);
    c->firstlineno = co.firstlineno;
    c->ok = c->func && c->file;
    return c->ok ? c : NULL;
}

/* The frame of generator or coroutine g where it is suspended (or runs): its code and line read
 * through the frame walker, as a thread's frames are. 0; 1 when it has finished (no frame); -1
 * when the frame cannot be read or has not started (code_frame then names it). */
/* The frame walker's read of a frame we hold: the frame of a coroutine we hold a reference to
 * (inside it on 3.11+, its frame object before), which cannot change or go while the GIL is held,
 * and of the code object that frame holds. Read as the C calls on the coroutine read it (its
 * cr_await reads the same frame): a plain copy, about ten times cheaper than the fault-proof read
 * with thousands of tasks. */
static int held_read(uintptr_t addr, void *dst, size_t n)
{
    if (!addr)
        return -1;
    memcpy(dst, (const void *)addr, n);
    return 0;
}

static int gen_frame(PyObject *g, struct probe_aframe *out, struct code_cache *cc)
{
    uintptr_t fp;
#if PY_VERSION_HEX >= 0x030B0000
    PyGenObject *gen = (PyGenObject *)g;
#ifdef FRAME_STATE_FINISHED
    if (FRAME_STATE_FINISHED(gen->gi_frame_state))
#else
    if (gen->gi_frame_state >= FRAME_COMPLETED)
#endif
        return 1;
    fp = (uintptr_t)(void *)&gen->gi_iframe;
#else
    fp = (uintptr_t)((PyGenObject *)g)->gi_frame;
    if (!fp)
        return 1;
#endif
    struct pyrt_sig_frame pos;
    struct pyrt_frame_ext ext;
    struct pyrt_walk w = {.rd = held_read,
                          .flags = PYRT_WALK_CHECK,
                          .max = 1,
                          .out = &pos,
                          .ext = &ext,
                          .memo = cc->memo,
                          .nmemo = CODE_SLOTS};
    const struct code_info *c;
    if (pyrt_frames_walk(&w, fp) != 1 || !(c = code_get(cc, pos.code)))
        return -1;
    out->func = strdup(c->func);
    out->file = strdup(c->file);
    out->line = ext.line != PYRT_NO_LINE
                    ? ext.line
                    : pyrt_code_line(c->table, c->tablen, c->firstlineno, pos.lasti);
    return 0;
}

/* A coroutine that has not started (or whose frame cannot be read): its code's name, file and
 * first line. */
static int code_frame(PyObject *g, struct probe_aframe *out)
{
    const char *name = PyCoro_CheckExact(g)  ? "cr_code"
                       : PyGen_CheckExact(g) ? "gi_code"
                                             : "ag_code";
    PyObject *code = attr_c(g, name);
    int rc = -1;
    if (code && PyCode_Check(code)) {
        PyCodeObject *co = (PyCodeObject *)code;
#if PY_VERSION_HEX >= 0x030B0000
        out->func = str_dup(co->co_qualname);
#else
        out->func = str_dup(co->co_name);
#endif
        out->file = str_dup(co->co_filename);
        out->line = co->co_firstlineno;
        rc = 0;
    }
    Py_XDECREF(code);
    return rc;
}

/* The chain of coroutines from t's own, innermost first. */
static int chain_read(struct probe_atask *a, PyObject *coro, struct code_cache *cc)
{
    struct probe_aframe fr[MAX_CHAIN];
    int n = 0;
    PyObject *c = coro;
    Py_XINCREF(c);
    while (c && c != Py_None) {
        const char *next, *running;
        if (PyCoro_CheckExact(c))
            next = "cr_await", running = "cr_running";
        else if (PyGen_CheckExact(c))
            next = "gi_yieldfrom", running = "gi_running";
        else if (PyAsyncGen_CheckExact(c))
            next = "ag_await", running = "ag_running";
        else
            break; /* a future's iterator, or another awaitable: the chain ends */
        if (n == MAX_CHAIN) {
            a->truncated = 1;
            break;
        }
        memset(&fr[n], 0, sizeof fr[n]);
        int got = gen_frame(c, &fr[n], cc);
        if (got == 1)
            break; /* finished: no frame, nothing awaited */
        if (got == 0 || code_frame(c, &fr[n]) == 0) {
            if (!fr[n].func || !fr[n].file) {
                free(fr[n].func);
                free(fr[n].file);
            } else {
                n++;
            }
        }
        /* What a running coroutine awaits is on its frame's stack, which only a suspended frame
         * has saved: its frames are in its thread's stack instead (the dump's). */
        PyObject *run = attr_c(c, running);
        PyObject *nx = run == Py_True ? NULL : attr_c(c, next);
        Py_XDECREF(run);
        Py_DECREF(c);
        c = nx;
    }
    Py_XDECREF(c);
    return pyrt_atask_take_frames(a, fr, n);
}

static char *type_name(PyObject *o)
{
    const char *n = Py_TYPE(o)->tp_name;
    return strdup(n ? n : "?");
}

/* The tasks t waits for: its waiter when that is a task, or a gather's children. */
static int awaits_read(struct probe_atask *a, PyObject *t, const struct found *f,
                       const struct kinds *k)
{
    PyObject *w = attr_c(t, "_fut_waiter"), *children = NULL;
    int rc = 0;
    if (!w || w == Py_None) {
        Py_XDECREF(w);
        return 0;
    }
    a->waiter = (uintptr_t)w;
    if (!(a->waiter_type = type_name(w)))
        rc = -ENOMEM;
    int idx = is_kind(k->task, w) ? found_index(f, w) : -1;
    if (idx < 0 && is_kind(k->future, w))
        children = attr_c(w, "_children"); /* _GatheringFuture's, in its instance dict */
    Py_ssize_t nc = children && PyList_CheckExact(children) ? PyList_GET_SIZE(children) : 0;
    if (nc > MAX_CHILDREN)
        nc = MAX_CHILDREN;
    if (rc == 0 && (idx >= 0 || nc > 0) &&
        !(a->awaits = calloc((size_t)(idx >= 0 ? 1 : nc), sizeof *a->awaits)))
        rc = -ENOMEM;
    if (rc == 0 && idx >= 0)
        a->awaits[a->nawaits++] = idx;
    for (Py_ssize_t i = 0; rc == 0 && idx < 0 && i < nc; i++) {
        int ci = found_index(f, PyList_GET_ITEM(children, i));
        if (ci >= 0)
            a->awaits[a->nawaits++] = ci;
    }
    Py_XDECREF(children);
    Py_DECREF(w);
    return rc;
}

/* The thread running loop: loop._thread_id (BaseEventLoop, while run_forever runs), its id as
 * python.threads gives it. */
static void loop_thread(struct probe_atask *a, PyObject *loop, struct code_cache *cc)
{
    if (cc->last_loop == (uintptr_t)loop) { /* most tasks share a loop */
        a->ident = cc->last_ident;
        a->thread_id = cc->last_tid;
        return;
    }
    PyObject *tid = attr_c(loop, "_thread_id");
    if (tid && PyLong_Check(tid)) {
        unsigned long ident = PyLong_AsUnsignedLong(tid);
        if (!PyErr_Occurred()) {
            a->ident = ident;
            int n = 0;
            for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
                 ts && n < PYRT_MAX_THREADS; ts = PyThreadState_Next(ts), n++) {
                if (ts->thread_id != ident)
                    continue;
#if PY_VERSION_HEX >= 0x030B0000
                a->thread_id = ts->native_thread_id > 0 ? (long)ts->native_thread_id : 0;
#endif
                if (a->thread_id <= 0)
                    a->thread_id = pyrt_tid_from_pthread(ident);
                if (a->thread_id <= 0)
                    a->thread_id = (long)(ident & 0x7fffffff);
                break;
            }
        }
    }
    PyErr_Clear();
    Py_XDECREF(tid);
    cc->last_loop = (uintptr_t)loop;
    cc->last_ident = a->ident;
    cc->last_tid = a->thread_id;
}

static int task_read(struct probe_atask *a, PyObject *t, const struct found *f,
                     const struct kinds *k, struct code_cache *cc)
{
    PyObject *coro = attr_c(t, "_coro"), *loop = attr_c(t, "_loop");
    int rc = 0;
    a->addr = (uintptr_t)t;
    a->name = task_name(t);
    a->state = task_state(t);
    if (coro && coro != Py_None) {
        PyObject *q = attr_c(coro, "__qualname__"), *running = NULL;
        a->coro = str_dup(q);
        Py_XDECREF(q);
        running = attr_c(coro, PyGen_CheckExact(coro) ? "gi_running" : "cr_running");
        a->running = running == Py_True;
        Py_XDECREF(running);
    }
    rc = chain_read(a, coro, cc);
    if (rc == 0)
        rc = awaits_read(a, t, f, k);
    if (loop && loop != Py_None) {
        a->loop = (uintptr_t)loop;
        loop_thread(a, loop, cc);
    }
    Py_XDECREF(coro);
    Py_XDECREF(loop);
    PyErr_Clear();
    return rc;
}

int pyrt_asyncio_tasks(struct probe_atasks *out, struct pb_err *err)
{
    struct kinds k;
    struct found f = {0};
    int rc = 0;
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(out, 0, sizeof *out);
    if (!PyGILState_Check())
        return pb_err_set(err, PB_ENOGIL, "asyncio tasks need the GIL held by the caller");
    pyrt_obj_cache(1); /* no code of the program's runs until it is off */
    kinds_get(&k);
    PyObject *tasks = module_get("asyncio.tasks");
    if (tasks) {
        weakset_collect(&f, module_attr(tasks, "_all_tasks"), &k);       /* 3.8-3.11 */
        weakset_collect(&f, module_attr(tasks, "_scheduled_tasks"), &k); /* 3.12+ */
        set_collect(&f, module_attr(tasks, "_eager_tasks"), 0, &k);      /* 3.12+ */
#if PY_VERSION_HEX >= 0x030E0000
        thread_lists_collect(&f, &k);
#endif
    }
    found_dedup(&f);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->read = 1;
    out->truncated = f.truncated;
    if (f.n && !(out->tasks = calloc((size_t)f.n, sizeof *out->tasks)))
        rc = pb_err_set(err, -ENOMEM, "out of memory");
    struct code_cache *cc = calloc(1, sizeof *cc);
    if (rc == 0 && !cc)
        rc = pb_err_set(err, -ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < f.n; i++) {
        out->ntasks++;
        if (task_read(&out->tasks[i], f.v[i], &f, &k, cc) < 0)
            rc = pb_err_set(err, -ENOMEM, "out of memory");
    }
    for (int i = 0; cc && i < CODE_SLOTS; i++)
        code_info_clear(&cc->slot[i]);
    free(cc);
    if (rc == 0 && pyrt_atasks_link(out) < 0)
        rc = pb_err_set(err, -ENOMEM, "out of memory");
    for (int i = 0; i < f.n; i++)
        Py_DECREF(f.v[i]);
    free(f.v);
    pyrt_obj_cache(0);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    PB_LOG(PB_LOG_DEBUG, "asyncio: %d tasks: found in %.1f ms, read in %.1f ms", out->ntasks,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
           (double)(t2.tv_sec - t1.tv_sec) * 1e3 + (double)(t2.tv_nsec - t1.tv_nsec) / 1e6);
    PyErr_Clear();
    if (rc < 0)
        pyrt_atasks_free(out);
    return rc;
}
