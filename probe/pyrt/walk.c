/* SPDX-License-Identifier: MIT */
/* The interpreter reader (pyrt.h): walks the main interpreter's thread states and each
 * thread's frames without the GIL, every read through probe_mem_read() and every loop bounded.
 * Per version: threads from interp->tstate_head (3.8-3.10) or interp->threads.head (3.11+);
 * frames from tstate->frame (PyFrameObject, 3.8-3.10), tstate->cframe->current_frame
 * (_PyInterpreterFrame, 3.11-3.12) or tstate->current_frame (3.13); the GIL from
 * _PyRuntime.ceval.gil (3.8-3.11) or interp->ceval.gil (3.12+). Names/locals: locals.c. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_FRAMES 256
#define MAX_FRAMES 10000
#define CACHE_SLOTS 512 /* code objects remembered during one snapshot (power of two) */

/* What one snapshot learned about a code object; strings are copied into each frame. */
struct code_info {
    const void *addr;
    char *func;
    char *file;
    unsigned char *table;
    size_t tablen;
    int firstlineno;
    int firsttraceable; /* 3.11+: code units before the first traceable instruction */
    int ok;
    int not_code; /* readable, but not a code object */
};

struct walk {
    struct code_info cache[CACHE_SLOTS];
    int max_frames;
    int want_raw;
};

static int initialised;

/* Requires nothing; may be called again. */
int probe_pyrt_init(struct pb_err *err)
{
    int rc = probe_mem_init();
    if (rc < 0)
        return pb_err_set(err, rc, "no fault-proof read available (process_vm_readv and pipe)");
#if PY_VERSION_HEX < 0x030B0000
    /* Without a tid offset native ids are -1; not fatal for the rest of the probe. */
    if (probe_tid_calibrate(err) < 0)
        PB_LOG(PB_LOG_WARN, "pyrt: %s; native thread ids unknown", err ? err->msg : "");
    pb_err_clear(err);
#endif
    initialised = 1;
    return 0;
}

static void code_info_clear(struct code_info *ci)
{
    free(ci->func);
    free(ci->file);
    free(ci->table);
    memset(ci, 0, sizeof *ci);
}

/* Looks code object addr up in the cache, reading it on a miss. Returns NULL when addr is not
 * a readable code object; *not_code (if not NULL) then tells a readable object of another type
 * from unreadable memory. No GIL needed. */
static struct code_info *code_get(struct walk *w, const void *addr, int *not_code)
{
    size_t h = ((uintptr_t)addr >> 4) & (CACHE_SLOTS - 1);
    struct code_info *ci = NULL;
    PyCodeObject co;
    const void *tab;

    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        struct code_info *c = &w->cache[(h + i) & (CACHE_SLOTS - 1)];
        if (c->addr == addr) {
            if (not_code)
                *not_code = c->not_code;
            return c->ok ? c : NULL;
        }
        if (!c->addr) {
            ci = c;
            break;
        }
    }
    if (!ci) { /* full: recycle the home slot */
        ci = &w->cache[h];
        code_info_clear(ci);
    }
    ci->addr = addr;
    if (not_code)
        *not_code = 0;
    if (!probe_ptr_ok(addr, sizeof(void *)) || probe_mem_read(addr, &co, sizeof co) != 0)
        return NULL;
    if (Py_TYPE((PyObject *)&co) != &PyCode_Type) {
        ci->not_code = 1;
        if (not_code)
            *not_code = 1;
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030B0000
    ci->func = probe_str_read(co.co_qualname, PYRT_MAX_STR);
    tab = co.co_linetable;
    ci->firsttraceable = co._co_firsttraceable;
#else
    ci->func = probe_str_read(co.co_name, PYRT_MAX_STR);
#if PY_VERSION_HEX >= 0x030A0000
    tab = co.co_linetable;
#else
    tab = co.co_lnotab;
#endif
#endif
    ci->file = probe_str_read(co.co_filename, PYRT_MAX_STR);
    ci->firstlineno = co.co_firstlineno;
    ci->table = probe_bytes_read(tab, PYRT_MAX_TABLE, &ci->tablen);
    if (!ci->func || !ci->file) {
        code_info_clear(ci);
        ci->addr = addr; /* remember the failure */
        return NULL;
    }
    ci->ok = 1;
    return ci;
}

/* Appends one frame to t. Returns 0, or -ENOMEM. */
static int frame_add(struct probe_thread *t, struct pyrt_rawframe **raw,
                     const struct code_info *ci, int line, const void *fp)
{
    struct probe_frame *f = &t->frames[t->nframes];
    memset(f, 0, sizeof *f);
    f->func = strdup(ci->func);
    f->file = strdup(ci->file);
    f->line = line;
    f->nlocals = -1;
    if (!f->func || !f->file) {
        free(f->func);
        free(f->file);
        return -ENOMEM;
    }
    if (*raw) {
        (*raw)[t->nframes].frame = fp;
        (*raw)[t->nframes].code = ci->addr;
    }
    t->nframes++;
    return 0;
}

/* Walks one thread's frames from the innermost one (fp) outwards. No GIL needed. */
static int frames_walk(struct walk *w, struct probe_thread *t, const void *fp,
                       struct pyrt_rawframe **raw)
{
    int steps = 0;
    int cap = w->max_frames;

    t->frames = calloc((size_t)cap, sizeof *t->frames);
    if (!t->frames)
        return -ENOMEM;
    if (w->want_raw) {
        *raw = calloc((size_t)cap, sizeof **raw);
        if (!*raw)
            return -ENOMEM;
    }
    /* steps also bounds skipped (incomplete/shim) frames, so a cycle cannot spin forever. */
    while (fp && steps++ < 4 * cap + 16) {
        const struct code_info *ci;
        int line;
        if (t->nframes >= cap) {
            t->truncated = 1; /* more frames follow (possibly only skipped shim frames) */
            break;
        }
#if PY_VERSION_HEX < 0x030B0000
        PyFrameObject f;
        if (!probe_ptr_ok(fp, sizeof(void *)) ||
            probe_mem_read(fp, &f, offsetof(PyFrameObject, f_localsplus)) != 0 ||
            Py_TYPE((PyObject *)&f) != &PyFrame_Type || !(ci = code_get(w, f.f_code, NULL))) {
            t->truncated = 1;
            break;
        }
#if PY_VERSION_HEX >= 0x030A0000
        /* 3.10: f_lineno is set (non-zero) only while tracing; else the table decides. */
        line = f.f_lineno != 0 ? f.f_lineno
                               : probe_line_310(ci->table, ci->tablen, ci->firstlineno,
                                                f.f_lasti < 0 ? -1 : f.f_lasti * 2);
#else
        /* 3.8/3.9: f_lineno is authoritative only while a trace function is set. */
        line = f.f_trace ? f.f_lineno
                         : probe_line_lnotab(ci->table, ci->tablen, ci->firstlineno, f.f_lasti);
#endif
        if (frame_add(t, raw, ci, line, fp) < 0)
            return -ENOMEM;
        fp = f.f_back;
#else
        _PyInterpreterFrame f;
        const void *code;
        uintptr_t start, ip;
        if (!probe_ptr_ok(fp, sizeof(void *)) ||
            probe_mem_read(fp, &f, offsetof(_PyInterpreterFrame, localsplus)) != 0) {
            t->truncated = 1;
            break;
        }
#if PY_VERSION_HEX >= 0x030C0000
        if (f.owner == FRAME_OWNED_BY_CSTACK) { /* shim frame of a C-to-Python call */
            fp = f.previous;
            continue;
        }
#endif
#if PY_VERSION_HEX >= 0x030D0000
        code = f.f_executable; /* a code object, or e.g. None in a C entry frame */
        ip = (uintptr_t)f.instr_ptr; /* the current instruction */
#else
        code = f.f_code;
        ip = (uintptr_t)f.prev_instr; /* 3.11/3.12: the code unit before the next one */
#endif
        int not_code = 0;
        if (!(ci = code_get(w, code, &not_code))) {
            if (not_code && PY_VERSION_HEX >= 0x030D0000) {
                fp = f.previous;
                continue;
            }
            t->truncated = 1;
            break;
        }
        /* Remote addresses: compared as integers, never dereferenced. */
        start = (uintptr_t)code + offsetof(PyCodeObject, co_code_adaptive);
        /* Incomplete frames (still running their prologue) are skipped, as CPython does. */
        if (f.owner != FRAME_OWNED_BY_GENERATOR &&
            ip < start + (uintptr_t)ci->firsttraceable * sizeof(_Py_CODEUNIT)) {
            fp = f.previous;
            continue;
        }
        line = probe_line_loc(ci->table, ci->tablen, ci->firstlineno,
                              ip - start < PYRT_MAX_TABLE * 64 ? (int)(ip - start) : -1);
        if (frame_add(t, raw, ci, line, fp) < 0)
            return -ENOMEM;
        fp = f.previous;
#endif
    }
    if (fp && t->nframes < cap && steps > 4 * cap + 16)
        t->truncated = 1;
    return 0;
}

/* Innermost frame pointer of a thread state copy. No GIL needed. */
static const void *frame_top(const PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    _PyCFrame cf;
    if (!probe_ptr_ok(ts->cframe, sizeof(void *)) ||
        probe_mem_read(ts->cframe, &cf, sizeof cf) != 0)
        return NULL;
    return cf.current_frame;
#else
    return ts->frame;
#endif
}

/* Reads the GIL's state: *locked and the holder's thread state. No GIL needed. */
static void gil_read(const void *interp, int *locked, const void **holder)
{
    const void *gil;
    int lk = 0;
    uintptr_t last = 0;
    *locked = 0;
    *holder = NULL;
#if PY_VERSION_HEX >= 0x030C0000
    if (probe_mem_read((const char *)interp + offsetof(PyInterpreterState, ceval.gil), &gil,
                       sizeof gil) != 0)
        return;
#else
    (void)interp;
    gil = &_PyRuntime.ceval.gil;
#endif
    if (!probe_ptr_ok(gil, sizeof(void *)))
        return;
    /* The fields are atomics before 3.13 (struct wrappers of the same size): copied as bytes. */
    if (probe_mem_read((const char *)gil + offsetof(struct _gil_runtime_state, locked), &lk,
                       sizeof lk) != 0 ||
        probe_mem_read((const char *)gil + offsetof(struct _gil_runtime_state, last_holder),
                       &last, sizeof last) != 0)
        return;
    *locked = lk != 0;
    *holder = (const void *)last;
}

static void version_read(char *out, size_t n)
{
    const char *v = Py_GetVersion(); /* static string, no GIL needed */
    size_t i = 0;
    while (i + 1 < n && v[i] && v[i] != ' ')
        i++;
    memcpy(out, v, i);
    out[i] = '\0';
}

static char *comm_read(long tid)
{
    char path[64];
    char buf[64];
    long n;
    if (tid > 0) {
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
        n = pb_read_file(path, buf, sizeof buf);
        if (n > 0) {
            if (buf[n - 1] == '\n')
                buf[n - 1] = '\0';
            return strdup(buf);
        }
    }
    return strdup("");
}

/* Saves and restores the caller's pending exception around the GIL passes. Requires GIL. */
struct exc_saved {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *tb;
#endif
};

static void exc_save(struct exc_saved *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    e->exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e->type, &e->value, &e->tb);
#endif
}

static void exc_restore(struct exc_saved *e)
{
    PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e->exc);
#else
    PyErr_Restore(e->type, e->value, e->tb);
#endif
}

/* The thread list: reads every thread state, walks its frames. No GIL needed. */
static int threads_walk(struct walk *w, struct probe_snapshot *s, struct pyrt_rawframe ***raws,
                        struct pb_err *err)
{
    const void *interp = NULL, *head = NULL, *ts_addr, *holder;
    unsigned long main_ident = 0;
    int locked, cap = 0;

    if (probe_mem_read(&_PyRuntime.interpreters.main, &interp, sizeof interp) != 0 ||
        !probe_ptr_ok(interp, sizeof(void *)))
        return pb_err_set(err, PB_ENOPYTHON, "Python is not initialised (no main interpreter)");
#if PY_VERSION_HEX >= 0x030B0000
    size_t head_off = offsetof(PyInterpreterState, threads.head);
#else
    size_t head_off = offsetof(PyInterpreterState, tstate_head);
#endif
    if (probe_mem_read((const char *)interp + head_off, &head, sizeof head) != 0)
        return pb_err_set(err, -EFAULT, "unreadable main interpreter state");
    probe_mem_read(&_PyRuntime.main_thread, &main_ident, sizeof main_ident);
    gil_read(interp, &locked, &holder);

    ts_addr = head;
    while (ts_addr && s->nthreads < PYRT_MAX_THREADS) {
        PyThreadState ts;
        struct probe_thread *t;
        if (!probe_ptr_ok(ts_addr, sizeof(void *)) ||
            probe_mem_read(ts_addr, &ts, sizeof ts) != 0 || ts.interp != interp)
            break; /* freed under us: report what we have */
        if (s->nthreads == cap) {
            int ncap = cap ? cap * 2 : 16;
            void *nt = realloc(s->threads, (size_t)ncap * sizeof *s->threads);
            void *nr = nt ? realloc(*raws, (size_t)ncap * sizeof **raws) : NULL;
            if (nt)
                s->threads = nt;
            if (!nr)
                return pb_err_set(err, -ENOMEM, "out of memory");
            *raws = nr;
            cap = ncap;
        }
        t = &s->threads[s->nthreads];
        memset(t, 0, sizeof *t);
        (*raws)[s->nthreads] = NULL;
        s->nthreads++;
        t->ident = ts.thread_id;
#if PY_VERSION_HEX >= 0x030B0000
        t->native_id = ts.native_thread_id > 0 ? (long)ts.native_thread_id : -1;
#else
        t->native_id = probe_tid_from_pthread(ts.thread_id);
#endif
        t->is_main = ts.thread_id == main_ident;
        t->daemon = -1;
        t->holds_gil = locked && holder == ts_addr;
        if (t->holds_gil)
            s->gil_holder_native_id = t->native_id;
        t->name = comm_read(t->native_id);
        if (!t->name || frames_walk(w, t, frame_top(&ts), &(*raws)[s->nthreads - 1]) < 0)
            return pb_err_set(err, -ENOMEM, "out of memory");
        ts_addr = ts.next;
        if (ts_addr == head)
            break;
    }
    return 0;
}

/* No GIL needed without flags; with PROBE_SNAP_* flags Requires GIL. */
int probe_pyrt_snapshot(struct probe_snapshot *s, int flags, int max_frames, struct pb_err *err)
{
    struct walk *w;
    struct pyrt_rawframe **raws = NULL;
    int rc;

    memset(s, 0, sizeof *s);
    s->gil_holder_native_id = -1;
    version_read(s->version, sizeof s->version);
    if (!initialised && (rc = probe_pyrt_init(err)) < 0)
        return rc;
    if (flags && !PyGILState_Check())
        return pb_err_set(err, PB_ENOGIL, "names/locals need the GIL held by the caller");
    w = calloc(1, sizeof *w);
    if (!w)
        return pb_err_set(err, -ENOMEM, "out of memory");
    w->max_frames = max_frames <= 0 ? DEFAULT_FRAMES : max_frames > MAX_FRAMES ? MAX_FRAMES : max_frames;
    w->want_raw = (flags & PROBE_SNAP_LOCALS) != 0;

    rc = threads_walk(w, s, &raws, err);
    if (rc == 0 && flags) {
        struct exc_saved saved;
        exc_save(&saved);
        for (int i = 0; i < s->nthreads; i++) {
            struct probe_thread *t = &s->threads[i];
            if (flags & PROBE_SNAP_NAMES)
                t->name_from_threading = probe_names_read(t);
            if ((flags & PROBE_SNAP_LOCALS) && raws[i])
                for (int j = 0; j < t->nframes; j++)
                    probe_locals_read(&t->frames[j], &raws[i][j]);
        }
        exc_restore(&saved);
    }
    for (int i = 0; i < s->nthreads; i++)
        free(raws ? raws[i] : NULL);
    free(raws);
    for (int i = 0; i < CACHE_SLOTS; i++)
        code_info_clear(&w->cache[i]);
    free(w);
    if (rc < 0)
        probe_snapshot_free(s);
    return rc;
}
