/* SPDX-License-Identifier: MIT */
/* Async-signal-safe frame reading (pyrt_sig.h): the shared per-version walker (pyrt/frames.c)
 * over pyrt_sig_read (process_vm_readv(2) directly: the pipe fallback of pyrt/safe.c takes a
 * mutex, which a signal handler must not), the main interpreter's thread list, and
 * descriptions into caller buffers. A frame is kept as (code address, instruction offset,
 * entry flag) and described later (pyrt_sig_describe); line numbers use the pure decoders of
 * pyrt/lines.c on a bounded stack copy of the line table. */
#include "pyrt/internal.h"
#include "pyrt_sig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIG_TABLE 4096     /* bytes of a line table read by describe */

#ifndef PYRT_REMOTE
static volatile int sig_tids_allowed; /* pyrt_sig_prepare ran with the syscall read */
#endif

#ifndef PYRT_REMOTE /* the out-of-process reader (sig/pyrt_remote.c) runs in the CLI */
int pyrt_sig_prepare(void)
{
    struct pb_err err = {0};
    if (pyrt_sig_read_prepare() < 0)
        return -1;
    if (probe_pyrt_init(&err) == 0) {
        const char *force = getenv("PROBING_PYRT_READ");
        /* probe_tid_from_pthread reads through pyrt/safe.c: signal-safe only in its syscall
         * mode (the pipe mode locks). */
        sig_tids_allowed = !(force && strcmp(force, "pipe") == 0);
    }
    return 0;
}

uintptr_t pyrt_sig_tstate_self(void)
{
    /* A thread-local lookup (pthread_getspecific on the gilstate key): no lock, no GIL. */
    return (uintptr_t)PyGILState_GetThisThreadState();
}
#endif

#ifndef PYRT_REMOTE
int pyrt_sig_frames_self(struct pyrt_sig_frame *out, int max)
{
    uintptr_t ts = pyrt_sig_tstate_self();
    return ts ? pyrt_sig_frames_tstate(ts, out, max) : 0;
}
#endif

/* The calling thread's walk over pyrt_sig_read. */
static int frames_of(uintptr_t ts, int flags, struct pyrt_sig_frame *out, int max)
{
    struct pyrt_walk w = {.rd = pyrt_sig_read, .flags = flags, .max = max, .out = out};
    if (!ts || max <= 0)
        return 0;
    return pyrt_frames_walk(&w, pyrt_frames_top(ts, pyrt_sig_read));
}

int pyrt_sig_frames_tstate(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
    return frames_of(ts, PYRT_WALK_CHECK, out, max);
}

int pyrt_sig_frames_fast(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
    return frames_of(ts, 0, out, max);
}

int pyrt_sig_frames_own(uintptr_t ts, struct pyrt_window *win, uintptr_t own_lo,
                        uintptr_t own_hi, struct pyrt_sig_frame *out, int max)
{
    struct pyrt_tstate t;
    struct pyrt_walk w = {.rd = pyrt_sig_read, .max = max, .out = out, .win = win};
    if (!ts || max <= 0 ||
        pyrt_tstate_read_own(ts, &t, pyrt_sig_read, own_lo, own_hi) != 0)
        return 0;
    pyrt_window_fill(win, &t, pyrt_sig_read);
    return pyrt_frames_walk(&w, t.top);
}

int pyrt_sig_frame_skip(const struct pyrt_sig_frame *f)
{
    return pyrt_frame_skip(f, pyrt_sig_read);
}

int pyrt_sig_threads(uintptr_t *tstates, long *native_ids, int max)
{
    uintptr_t interp, head, ts;
    int n = 0;
    if (max <= 0 || pyrt_threads_head(&interp, &head, pyrt_sig_read) != 0)
        return 0;
    ts = head;
    for (int steps = 0; ts && n < max && steps < PYRT_MAX_THREADS; steps++) {
        struct pyrt_tstate t;
        if (pyrt_tstate_read(ts, &t, pyrt_sig_read) != 0 || t.interp != interp)
            break;
        tstates[n] = ts;
#ifdef PYRT_REMOTE
        if (native_ids) /* before 3.11 the CLI finds them (the pthread_t's tid) */
            native_ids[n] = t.native_id;
#else
        if (native_ids) /* before 3.11 from the pthread_t, signal-safe in syscall mode only */
            native_ids[n] = t.native_id > 0 ? t.native_id
                            : sig_tids_allowed ? probe_tid_from_pthread(t.ident) : -1;
#endif
        n++;
        ts = t.next;
        if (ts == head)
            break;
    }
    return n;
}

static void put(char *out, size_t n, const char *s)
{
    size_t i = 0;
    if (n == 0)
        return;
    for (; s[i] && i + 1 < n; i++)
        out[i] = s[i];
    out[i] = '\0';
}

/* UTF-8 of the compact str object at obj into out (cap bytes, NUL-terminated). Returns 0 or
 * -1. */
static int str_get(uintptr_t obj, char *out, size_t cap)
{
    union {
        PyASCIIObject a;
        PyCompactUnicodeObject c;
    } h;
    unsigned char data[512];
    size_t nchars, len = 0, hdr;
    unsigned int kind;
    if (cap == 0 || pyrt_sig_read(obj, &h, sizeof h.a) != 0 ||
        Py_TYPE((PyObject *)&h.a) != PYRT_UNICODE_TYPE || h.a.length < 0 || !h.a.state.compact)
        return -1;
    kind = h.a.state.kind;
    if (kind != 1 && kind != 2 && kind != 4)
        return -1;
    hdr = h.a.state.ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject);
    nchars = (size_t)h.a.length;
    if (nchars * kind > sizeof data)
        nchars = sizeof data / kind;
    if (nchars && pyrt_sig_read(obj + hdr, data, nchars * kind) != 0)
        return -1;
    for (size_t i = 0; i < nchars; i++) {
        size_t nl = pyrt_utf8_put(out, len, cap - 1, pyrt_ucs_at(data, kind, i)); /* room for NUL */
        if (nl == len)
            break;
        len = nl;
    }
    out[len] = '\0';
    return 0;
}

/* The first bytes (at most cap) of co's line table into table; their count, 0 if unreadable. */
static size_t table_get(const struct pyrt_code *co, unsigned char *table, size_t cap)
{
    PyVarObject th;
    size_t tn;
    if (pyrt_sig_read(co->table, &th, sizeof th) != 0 ||
        Py_TYPE((PyObject *)&th) != PYRT_BYTES_TYPE || th.ob_size < 0)
        return 0;
    tn = (size_t)th.ob_size < cap ? (size_t)th.ob_size : cap;
    if (tn && pyrt_sig_read(co->table + offsetof(PyBytesObject, ob_sval), table, tn) != 0)
        return 0;
    return tn;
}

int pyrt_sig_code_get(uintptr_t code, struct pyrt_sig_code *c)
{
    struct pyrt_code co;
    int rc = pyrt_code_read(code, &co, pyrt_sig_read);
    put(c->func, sizeof c->func, "?");
    put(c->file, sizeof c->file, "?");
    c->tn = 0;
    c->name_obj = c->file_obj = c->table_obj = 0;
    if (rc != 0)
        return rc;
    if (str_get(co.name, c->func, sizeof c->func) != 0)
        put(c->func, sizeof c->func, "?");
    if (str_get(co.file, c->file, sizeof c->file) != 0)
        put(c->file, sizeof c->file, "?");
    c->firstlineno = co.firstlineno;
    c->prologue = co.prologue;
    c->name_obj = co.name;
    c->file_obj = co.file;
    c->table_obj = co.table;
    c->tn = table_get(&co, c->table, sizeof c->table);
    return 0;
}

int pyrt_sig_code_same(uintptr_t code, const struct pyrt_sig_code *c)
{
    struct pyrt_code co;
    return pyrt_code_read(code, &co, pyrt_sig_read) == 0 && co.name == c->name_obj &&
           co.file == c->file_obj && co.table == c->table_obj &&
           co.firstlineno == c->firstlineno && co.prologue == c->prologue;
}

int pyrt_sig_code_line(const struct pyrt_sig_code *c, int lasti)
{
    return c->tn ? pyrt_code_line(c->table, c->tn, c->firstlineno, lasti) : -1;
}

int pyrt_sig_describe(const struct pyrt_sig_frame *f, char *func, size_t funcn, char *file,
                      size_t filen, int *line)
{
    struct pyrt_code co;
    unsigned char table[SIG_TABLE];
    size_t tn;

    put(func, funcn, "?");
    put(file, filen, "?");
    if (line)
        *line = -1;
    if (!f || pyrt_code_read(f->code, &co, pyrt_sig_read) != 0)
        return -1;
    if (str_get(co.name, func, funcn) != 0)
        put(func, funcn, "?");
    if (str_get(co.file, file, filen) != 0)
        put(file, filen, "?");
    if (!line)
        return 0;
    tn = table_get(&co, table, sizeof table);
    if (tn == 0)
        return 0;
    *line = pyrt_code_line(table, tn, co.firstlineno, f->lasti);
    return 0;
}
