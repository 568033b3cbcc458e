/* SPDX-License-Identifier: MIT */
/* Async-signal-safe frame reading (pyrt_sig.h): the shared per-version walker (pyrt/frames.c)
 * over pyrt_read (process_vm_readv(2) directly: the pipe fallback of pyrt/safe.c takes a
 * mutex, which a signal handler must not), every interpreter's thread list, and
 * descriptions into caller buffers. A frame is kept as (code address, instruction offset,
 * entry flag) and described later (sig_pyrt_describe); line numbers use the pure decoders of
 * pyrt/lines.c on a bounded stack copy of the line table. */
#include "pyrt/internal.h"
#include "pyrt_sig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIG_TABLE 4096 /* bytes of a line table read by describe */

#ifndef PYRT_REMOTE
static volatile int sig_tids_allowed; /* sig_pyrt_prepare ran with the syscall read */
static uintptr_t sig_gil; /* the main interpreter's GIL state (sig_pyrt_prepare), 0: unknown */
#endif

#ifndef PYRT_REMOTE /* the out-of-process reader (probe/reader/) runs in the CLI */
int sig_pyrt_prepare(void)
{
    struct pb_err err = {0};
    uintptr_t interp, head, gil;
    if (pyrt_read_prepare() < 0)
        return -1;
    if (pyrt_init(&err) == 0) {
        const char *force = getenv("PROBING_PYRT_READ");
        /* pyrt_tid_from_pthread reads through pyrt/safe.c: signal-safe only in its syscall
         * mode (the pipe mode locks). */
        sig_tids_allowed = !(force && strcmp(force, "pipe") == 0);
    }
    /* The main interpreter's GIL, for own_live: only where it is static memory of the
     * runtime (always mapped), as on every supported version. */
    if (!sig_gil && pyrt_threads_head(&interp, &head, pyrt_read) == 0 &&
        (gil = pyrt_gil_addr(interp, pyrt_read)) >= (uintptr_t)PYRT_RUNTIME &&
        gil + sizeof(struct _gil_runtime_state) <= (uintptr_t)(PYRT_RUNTIME + 1))
        sig_gil = gil;
    return 0;
}

/* 1 when thread state ts, the calling thread's own (from its signal handler), is certainly
 * live, so that it and its current data stack chunk can be copied directly instead of through
 * process_vm_readv (whose first call in a handler costs 10-15 us with cold caches, most of a
 * sample's cost). That is when the thread holds the main interpreter's GIL with ts: a thread
 * state is freed only by its own thread (which is inside this handler) or by a thread holding
 * the GIL (finalization, clearing other threads' states), and a thread drops the GIL before it
 * frees its own. The last holder can be stale while another thread is between setting
 * `locked` and `last_holder` in take_gil: ts is then a state that dropped the GIL, live unless
 * the runtime is finalizing, which is checked last (a static flag). Plain loads of static
 * memory: no lock, no call that can take one. */
static int own_live(uintptr_t ts)
{
    const char *g = (const char *)sig_gil;
    if (!g || !ts)
        return 0;
    if (!__atomic_load_n((const int *)(g + offsetof(struct _gil_runtime_state, locked)),
                         __ATOMIC_ACQUIRE) ||
        __atomic_load_n((const uintptr_t *)(g + offsetof(struct _gil_runtime_state, last_holder)),
                        __ATOMIC_ACQUIRE) != ts)
        return 0;
        /* _finalizing: an atomic pointer (a struct of one before 3.13), set before any thread
     * state of another thread is freed */
#if PY_VERSION_HEX >= 0x03090000
    const void *fin = &PYRT_RUNTIME->_finalizing;
#else
    const void *fin = &PYRT_RUNTIME->finalizing;
#endif
    return __atomic_load_n((const uintptr_t *)fin, __ATOMIC_ACQUIRE) == 0;
}

int sig_pyrt_holds_gil(uintptr_t ts)
{
    const char *g = (const char *)sig_gil;
    if (!g || !ts)
        return -1;
    return __atomic_load_n((const int *)(g + offsetof(struct _gil_runtime_state, locked)),
                           __ATOMIC_ACQUIRE) &&
           __atomic_load_n(
               (const uintptr_t *)(g + offsetof(struct _gil_runtime_state, last_holder)),
               __ATOMIC_ACQUIRE) == ts;
}

#if PY_VERSION_HEX >= 0x030B0000
/* pyrt_own_copy as a pyrt_read_fn. */
static int own_read(uintptr_t addr, void *dst, size_t n)
{
    pyrt_own_copy(dst, addr, n);
    return 0;
}
#endif

/* pyrt_window_fill by direct copy, for a live own thread state (own_live): its current chunk
 * is mapped (CPython switches the chunk pointer only to a chunk that exists: a new one after
 * allocating it, the previous one before freeing the old), but datastack_top is stored apart
 * from it, so the range is checked against the chunk's own size first; anything odd goes
 * through the fault-proof read instead. */
static void window_own(struct pyrt_window *win, const struct pyrt_tstate *t)
{
#if PY_VERSION_HEX >= 0x030B0000
    uintptr_t chunk = t->stack_lo - offsetof(_PyStackChunk, data);
    size_t size = 0;
    if (t->stack_lo && t->stack_hi > t->stack_lo &&
        pyrt_ptr_ok((const void *)chunk, sizeof(void *))) {
        pyrt_own_copy(&size, chunk + offsetof(_PyStackChunk, size), sizeof size);
    }
    if (size && size <= ((size_t)1 << 30) && t->stack_hi <= chunk + size) {
        pyrt_window_fill(win, t, own_read);
        return;
    }
#endif
    pyrt_window_fill(win, t, pyrt_read);
}

uintptr_t sig_pyrt_tstate_self(void)
{
    /* A thread-local lookup (pthread_getspecific on the gilstate key): no lock, no GIL. */
    return (uintptr_t)PyGILState_GetThisThreadState();
}
#endif

#ifndef PYRT_REMOTE
int sig_pyrt_frames_self(struct pyrt_sig_frame *out, int max)
{
    uintptr_t ts = sig_pyrt_tstate_self();
    return ts ? sig_pyrt_frames_tstate(ts, out, max) : 0;
}
#endif

/* The calling thread's walk over pyrt_read (memo: NULL, or nmemo zeroed slots kept across
 * walks by the caller). */
static int frames_of(uintptr_t ts, int flags, struct pyrt_sig_frame *out, int max,
                     struct pyrt_code_memo *memo, unsigned nmemo)
{
    struct pyrt_walk w = {
        .rd = pyrt_read, .flags = flags, .max = max, .out = out, .memo = memo, .nmemo = nmemo};
    if (!ts || max <= 0)
        return 0;
    return pyrt_frames_walk(&w, pyrt_frames_top(ts, pyrt_read));
}

int sig_pyrt_frames_tstate(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
    return frames_of(ts, PYRT_WALK_CHECK, out, max, NULL, 0);
}

#define THREAD_STATES 8 /* thread states of one OS thread (nested subinterpreters) */
#define WALK_TRIES 3    /* walks of the thread lists, when one met a state being freed */

/* The thread states of OS thread tid in every interpreter but `skip`, by interpreter id,
 * highest first (ts, ids: THREAD_STATES each); *self_id: the id of the interpreter at `self_in`
 * (-1: not listed). Another thread's exit unlinks its state, then frees it, without a lock we
 * could take: a walk that reads a state after its free meets a foreign interpreter pointer or
 * an unreadable next and stops there, before the states behind it (the main interpreter's of a
 * thread running a subinterpreter, a list's oldest). Such a walk starts again from the heads
 * (the unlink came first: they no longer name it), WALK_TRIES walks at most. Returns the
 * count. */
static int states_of(long tid, uintptr_t skip, uintptr_t self_in, uintptr_t *ts, long long *ids,
                     long long *self_id)
{
    int n = 0;
    for (int tries = 0; tries < WALK_TRIES; tries++) {
        struct pyrt_interp_iter it;
        struct pyrt_interp in;
        int visited = 0, broken = 0;
        n = 0;
        *self_id = -1;
        if (tid <= 0 || pyrt_interp_first(&it, pyrt_read) != 0)
            return 0;
        while (n < THREAD_STATES && pyrt_interp_next(&it, &in, pyrt_read) == 1) {
            uintptr_t at = in.head;
            if (self_in && in.addr == self_in)
                *self_id = in.id;
            while (at && n < THREAD_STATES && visited++ < PYRT_MAX_THREADS) {
                struct pyrt_tstate t;
                if (pyrt_tstate_read(at, &t, pyrt_read) != 0 || t.interp != in.addr) {
                    broken = 1;
                    break;
                }
                if (t.native_id == tid && at != skip) { /* insertion by id, highest first */
                    int k = n++;
                    for (; k > 0 && ids[k - 1] < in.id; k--) {
                        ts[k] = ts[k - 1];
                        ids[k] = ids[k - 1];
                    }
                    ts[k] = at;
                    ids[k] = in.id;
                }
                at = t.next;
                if (at == in.head)
                    break;
            }
        }
        if (!broken)
            break;
    }
    return n;
}

int sig_pyrt_frames_thread(long tid, uintptr_t self, struct pyrt_sig_frame *out, int max)
{
    uintptr_t ts[THREAD_STATES];
    long long ids[THREAD_STATES], none;
    int n, got = 0;
    if (max <= 0)
        return 0;
    n = states_of(tid, 0, 0, ts, ids, &none);
    if (n == 0)
        return sig_pyrt_frames_tstate(self, out, max);
    for (int i = 0; i < n && got < max; i++)
        got += sig_pyrt_frames_tstate(ts[i], out + got, max - got);
    return got;
}

int sig_pyrt_frames_listed(long tid, const uintptr_t *ts, const long *ids, const long long *interps,
                           int n, uintptr_t self, struct pyrt_code_memo *memo, unsigned nmemo,
                           struct pyrt_sig_frame *out, int max)
{
    uintptr_t mine[THREAD_STATES];
    long long mine_ids[THREAD_STATES];
    int k = 0, got = 0;
    if (max <= 0)
        return 0;
    for (int i = 0; tid > 0 && i < n && k < THREAD_STATES; i++) {
        if (ids[i] != tid)
            continue;
        int j = k++; /* by interpreter id, highest first (as sig_pyrt_frames_thread) */
        for (; j > 0 && mine_ids[j - 1] < interps[i]; j--) {
            mine[j] = mine[j - 1];
            mine_ids[j] = mine_ids[j - 1];
        }
        mine[j] = ts[i];
        mine_ids[j] = interps[i];
    }
    if (k == 0)
        return frames_of(self, PYRT_WALK_CHECK, out, max, memo, nmemo);
    for (int i = 0; i < k && got < max; i++)
        got += frames_of(mine[i], PYRT_WALK_CHECK, out + got, max - got, memo, nmemo);
    return got;
}

int sig_pyrt_frames_outer(uintptr_t self, long tid, struct pyrt_sig_frame *out, int n, int max)
{
    struct pyrt_tstate st;
    uintptr_t ts[THREAD_STATES], head = 0, main = 0;
    long long ids[THREAD_STATES], self_id;
    int k;
    if (!self || tid <= 0 || n >= max ||
        pyrt_read((uintptr_t)&PYRT_RUNTIME->interpreters.head, &head, sizeof head) != 0 ||
        pyrt_read((uintptr_t)&PYRT_RUNTIME->interpreters.main, &main, sizeof main) != 0 ||
        head == main || pyrt_tstate_read(self, &st, pyrt_read) != 0)
        return n; /* the main interpreter alone: nothing more */
    k = states_of(tid, self, st.interp, ts, ids, &self_id);
    for (int i = 0; i < k && n < max; i++)
        if (self_id >= 0 && ids[i] < self_id)
            n += sig_pyrt_frames_fast(ts[i], out + n, max - n);
    return n;
}

int sig_pyrt_frames_fast(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
    return frames_of(ts, 0, out, max, NULL, 0);
}

#ifndef PYRT_REMOTE
/* Not live: the thread state and, in the same system call, the frame memory the last sample
 * needed (plus PYRT_WINDOW_SLACK above: the top moves a little between samples; a thread
 * sampled in the same C call again needs exactly the same). Fills t and, when the thread state
 * names the same chunk and the range needed now lies inside what was read, the window; else
 * the window is read on its own (pyrt_window_fill). Returns 0, or -1 when the thread state is
 * unreadable. */
static int read_guessing(uintptr_t ts, struct pyrt_window *win, uintptr_t own_lo, uintptr_t own_hi,
                         struct pyrt_tstate *t)
{
    uintptr_t glo = win->lo, ghi = win->hi, chunk = win->chunk_lo, need_lo;
    long got;
    if (chunk && glo < ghi) {
        ghi += PYRT_WINDOW_SLACK;
        if (ghi - glo > sizeof win->buf)
            ghi = glo + sizeof win->buf;
    } else {
        glo = ghi = 0;
    }
    win->chunk_lo = win->lo = win->hi = 0; /* the buffer is overwritten */
    got = pyrt_read_pair(ts, win->ts, sizeof(PyThreadState), glo, win->buf, ghi - glo);
    if (got < 0 || pyrt_tstate_read_own(ts, t, pyrt_read, win->ts, own_lo, own_hi) != 0)
        return -1;
    need_lo = t->stack_hi - t->stack_lo > PYRT_WINDOW_BYTES ? t->stack_hi - PYRT_WINDOW_BYTES
                                                            : t->stack_lo;
    if (t->stack_lo && t->stack_lo == chunk && t->stack_hi > t->stack_lo && need_lo >= glo &&
        t->stack_hi <= glo + (uintptr_t)got) {
        win->chunk_lo = chunk;
        win->lo = glo;
        win->hi = t->stack_hi;
    } else {
        pyrt_window_fill(win, t, pyrt_read);
    }
    return 0;
}
#endif

int sig_pyrt_frames_own(uintptr_t ts, struct pyrt_window *win, uintptr_t own_lo, uintptr_t own_hi,
                        struct pyrt_sig_frame *out, int max)
{
    struct pyrt_tstate t;
    struct pyrt_walk w = {.rd = pyrt_read, .max = max, .out = out, .win = win};
    if (!ts || max <= 0 || !pyrt_ptr_ok((const void *)ts, sizeof(void *)))
        return 0;
    win->own_lo = own_lo < own_hi ? own_lo : 0;
    win->own_hi = own_lo < own_hi ? own_hi : 0;
#ifndef PYRT_REMOTE
    if (own_live(ts)) {
        /* No system call: the thread state (live: parsed from its own memory) and the window
         * copied directly. */
        if (pyrt_tstate_read_own(ts, &t, pyrt_read, (const void *)ts, own_lo, own_hi) != 0)
            return 0;
        window_own(win, &t);
    } else if (read_guessing(ts, win, own_lo, own_hi, &t) != 0) {
        return 0;
    }
#else
    if (pyrt_tstate_read_own(ts, &t, pyrt_read, NULL, own_lo, own_hi) != 0)
        return 0;
    pyrt_window_fill(win, &t, pyrt_read);
#endif
    /* Frames outside the window (a generator's, an older chunk's, one whose chunk was just
     * freed while the current frame pointer still names it) are read fault-proof. */
    return pyrt_frames_walk(&w, t.top);
}

int sig_pyrt_frame_skip(const struct pyrt_sig_frame *f)
{
    return pyrt_frame_skip(f, pyrt_read);
}

int sig_pyrt_threads(uintptr_t *tstates, long *native_ids, long long *interp_ids, int max)
{
    int n = 0;
    for (int tries = 0; tries < WALK_TRIES; tries++) { /* as states_of: a state being freed */
        struct pyrt_interp_iter it;
        struct pyrt_interp in;
        int broken = 0;
        n = 0;
        if (max <= 0 || pyrt_interp_first(&it, pyrt_read) != 0)
            return 0;
        while (n < max && pyrt_interp_next(&it, &in, pyrt_read) == 1) {
            uintptr_t ts = in.head;
            for (int steps = 0; ts && n < max && steps < PYRT_MAX_THREADS; steps++) {
                struct pyrt_tstate t;
                if (pyrt_tstate_read(ts, &t, pyrt_read) != 0 || t.interp != in.addr) {
                    broken = 1;
                    break;
                }
                tstates[n] = ts;
                if (interp_ids)
                    interp_ids[n] = in.id;
#ifdef PYRT_REMOTE
                if (native_ids) /* before 3.11 the CLI finds them (the pthread_t's tid) */
                    native_ids[n] = t.native_id;
#else
                if (native_ids) /* before 3.11 from the pthread_t, signal-safe in syscall mode */
                    native_ids[n] = t.native_id > 0    ? t.native_id
                                    : sig_tids_allowed ? pyrt_tid_from_pthread(t.ident)
                                                       : -1;
#endif
                n++;
                ts = t.next;
                if (ts == in.head)
                    break;
            }
        }
        if (!broken)
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
    if (cap == 0 || pyrt_read(obj, &h, sizeof h.a) != 0 ||
        Py_TYPE((PyObject *)&h.a) != PYRT_UNICODE_TYPE || h.a.length < 0 || !h.a.state.compact)
        return -1;
    kind = h.a.state.kind;
    if (kind != 1 && kind != 2 && kind != 4)
        return -1;
    hdr = h.a.state.ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject);
    nchars = (size_t)h.a.length;
    if (nchars * kind > sizeof data)
        nchars = sizeof data / kind;
    if (nchars && pyrt_read(obj + hdr, data, nchars * kind) != 0)
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

int sig_pyrt_str(uintptr_t obj, char *out, size_t cap)
{
    return str_get(obj, out, cap);
}

/* The first bytes (at most cap) of co's line table into table; their count, 0 if unreadable. */
static size_t table_get(const struct pyrt_code *co, unsigned char *table, size_t cap)
{
    PyVarObject th;
    size_t tn;
    if (pyrt_read(co->table, &th, sizeof th) != 0 || Py_TYPE((PyObject *)&th) != PYRT_BYTES_TYPE ||
        th.ob_size < 0)
        return 0;
    tn = (size_t)th.ob_size < cap ? (size_t)th.ob_size : cap;
    if (tn && pyrt_read(co->table + offsetof(PyBytesObject, ob_sval), table, tn) != 0)
        return 0;
    return tn;
}

int sig_pyrt_code_get(uintptr_t code, struct pyrt_sig_code *c)
{
    struct pyrt_code co;
    int rc = pyrt_code_read(code, &co, pyrt_read);
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

int sig_pyrt_code_same(uintptr_t code, const struct pyrt_sig_code *c)
{
    struct pyrt_code co;
    return pyrt_code_read(code, &co, pyrt_read) == 0 && co.name == c->name_obj &&
           co.file == c->file_obj && co.table == c->table_obj && co.firstlineno == c->firstlineno &&
           co.prologue == c->prologue;
}

int sig_pyrt_code_line(const struct pyrt_sig_code *c, int lasti)
{
    return c->tn ? pyrt_code_line(c->table, c->tn, c->firstlineno, lasti) : -1;
}

int sig_pyrt_describe(const struct pyrt_sig_frame *f, char *func, size_t funcn, char *file,
                      size_t filen, int *line)
{
    struct pyrt_code co;
    unsigned char table[SIG_TABLE];
    size_t tn;

    put(func, funcn, "?");
    put(file, filen, "?");
    if (line)
        *line = -1;
    if (!f || pyrt_code_read(f->code, &co, pyrt_read) != 0)
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
