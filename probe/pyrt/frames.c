/* SPDX-License-Identifier: MIT */
/* The per-version frame walker (frames.h): the only place that knows how CPython lays out the
 * thread list, a thread's frames and a code object. Built once per CPython minor against its
 * internal headers. Per version: thread states hang from interp->tstate_head (3.8-3.10) or
 * interp->threads.head (3.11+) and hold the kernel tid from 3.11 on; the GIL is
 * _PyRuntime.ceval.gil (3.8-3.11) or interp->ceval.gil (3.12+); the innermost frame is
 * tstate->frame (PyFrameObject, 3.8-3.10), tstate->cframe->current_frame (_PyInterpreterFrame,
 * 3.11-3.12) or tstate->current_frame (3.13); 3.8-3.10 frames are objects of their own, each
 * run by its own eval-loop call; 3.11 marks the first frame of an eval-loop call with is_entry;
 * 3.12/3.13 put a C-stack shim frame (FRAME_OWNED_BY_CSTACK) below it; 3.13 frames hold
 * f_executable (a code object, or e.g. None in a C entry frame). Frames still running their
 * prologue (before _co_firsttraceable) are skipped, as CPython does. Async-signal-safe: no
 * allocation, no lock, reads through rd only, every loop bounded. Adding a CPython version
 * means adding its branches here. */
#include "internal.h"
#include "frames.h"

#define MIN_STEPS 4096 /* frames visited (kept or skipped) per walk, at least */

/* The owner of the C-stack shim frame below an eval-loop call's first frame (3.12+). */
#if PY_VERSION_HEX >= 0x030E0000
#define PYRT_OWNER_SHIM FRAME_OWNED_BY_INTERPRETER
#elif PY_VERSION_HEX >= 0x030C0000
#define PYRT_OWNER_SHIM FRAME_OWNED_BY_CSTACK
#endif

int pyrt_threads_head(uintptr_t *interp, uintptr_t *head, pyrt_read_fn rd)
{
#if PY_VERSION_HEX >= 0x030B0000
    size_t head_off = offsetof(PyInterpreterState, threads.head);
#else
    size_t head_off = offsetof(PyInterpreterState, tstate_head);
#endif
    *interp = *head = 0;
    if (rd((uintptr_t)&PYRT_RUNTIME->interpreters.main, interp, sizeof *interp) != 0 ||
        !pyrt_ptr_ok((const void *)*interp, sizeof(void *))) {
        *interp = 0;
        return -1;
    }
    return rd(*interp + head_off, head, sizeof *head) == 0 ? 0 : -2;
}

#if PY_VERSION_HEX >= 0x030B0000
#define PYRT_HEAD_OFF offsetof(PyInterpreterState, threads.head)
#else
#define PYRT_HEAD_OFF offsetof(PyInterpreterState, tstate_head)
#endif

int pyrt_interp_first(struct pyrt_interp_iter *it, pyrt_read_fn rd)
{
    uintptr_t head;
    int rc = pyrt_threads_head(&it->main, &head, rd);
    it->cur = 0;
    it->steps = 0;
    if (rc != 0)
        it->main = 0;
    return rc;
}

/* Reads interpreter state at addr into out: its id, next and thread list head. 0, or -1. */
static int interp_read(uintptr_t addr, struct pyrt_interp *out, uintptr_t *next, pyrt_read_fn rd)
{
    int64_t id;
    if (!pyrt_ptr_ok((const void *)addr, sizeof(void *)) ||
        rd(addr + offsetof(PyInterpreterState, id), &id, sizeof id) != 0 ||
        rd(addr + offsetof(PyInterpreterState, next), next, sizeof *next) != 0 ||
        rd(addr + PYRT_HEAD_OFF, &out->head, sizeof out->head) != 0)
        return -1;
    out->addr = addr;
    out->id = (long long)id;
    return 0;
}

int pyrt_interp_next(struct pyrt_interp_iter *it, struct pyrt_interp *out, pyrt_read_fn rd)
{
    uintptr_t next;
    if (!it->main)
        return 0;
    if (it->steps == 0) {
        /* The main interpreter first; then the list from its head. */
        it->steps = 1;
        if (interp_read(it->main, out, &next, rd) != 0) {
            it->main = 0;
            return 0;
        }
        if (rd((uintptr_t)&PYRT_RUNTIME->interpreters.head, &it->cur, sizeof it->cur) != 0)
            it->cur = 0;
        out->id = 0; /* the main interpreter's id is 0 on every version */
        return 1;
    }
    while (it->cur && it->steps++ < PYRT_MAX_INTERPS) {
        uintptr_t at = it->cur;
        if (interp_read(at, out, &next, rd) != 0) {
            it->cur = 0;
            return 0;
        }
        it->cur = next == at ? 0 : next;
        if (at != it->main)
            return 1; /* the main one was listed first */
    }
    return 0;
}

_Static_assert(sizeof(PyThreadState) <= PYRT_TSTATE_BYTES, "struct pyrt_window: ts too small");

int pyrt_tstate_read(uintptr_t ts, struct pyrt_tstate *t, pyrt_read_fn rd)
{
    return pyrt_tstate_read_own(ts, t, rd, NULL, 0, 0);
}

int pyrt_tstate_read_own(uintptr_t ts, struct pyrt_tstate *t, pyrt_read_fn rd, const void *copy,
                         uintptr_t lo, uintptr_t hi)
{
    PyThreadState c;
    (void)lo; /* used on 3.11/3.12 only */
    (void)hi;
    if (!pyrt_ptr_ok((const void *)ts, sizeof(void *)))
        return -1;
    if (copy)
        memcpy(&c, copy, sizeof c);
    else if (rd(ts, &c, sizeof c) != 0)
        return -1;
    t->top = 0;
#if PY_VERSION_HEX >= 0x030D0000
    t->top = (uintptr_t)c.current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    uintptr_t at = (uintptr_t)c.cframe + offsetof(_PyCFrame, current_frame);
    if (lo && at >= lo && at < hi && hi - at >= sizeof t->top)
        memcpy(&t->top, (const void *)at, sizeof t->top); /* the eval loop's local, on our stack */
    else if (pyrt_ptr_ok(c.cframe, sizeof(void *)) && rd(at, &t->top, sizeof t->top) != 0)
        t->top = 0;
#else
    t->top = (uintptr_t)c.frame;
#endif
    t->stack_lo = t->stack_hi = 0;
#if PY_VERSION_HEX >= 0x030B0000
    if (c.datastack_chunk && (uintptr_t)c.datastack_top > (uintptr_t)c.datastack_chunk) {
        t->stack_lo = (uintptr_t)c.datastack_chunk + offsetof(_PyStackChunk, data);
        t->stack_hi = (uintptr_t)c.datastack_top;
    }
#endif
    t->interp = (uintptr_t)c.interp;
    t->next = (uintptr_t)c.next;
    t->ident = c.thread_id;
#if PY_VERSION_HEX >= 0x030B0000
    t->native_id = c.native_thread_id > 0 ? (long)c.native_thread_id : -1;
#else
    t->native_id = -1;
#endif
    return 0;
}

uintptr_t pyrt_gil_addr(uintptr_t interp, pyrt_read_fn rd)
{
    uintptr_t gil;
#if PY_VERSION_HEX >= 0x030C0000
    if (rd(interp + offsetof(PyInterpreterState, ceval.gil), &gil, sizeof gil) != 0)
        return 0;
#else
    (void)interp;
    (void)rd;
    gil = (uintptr_t)&PYRT_RUNTIME->ceval.gil;
#endif
    return pyrt_ptr_ok((const void *)gil, sizeof(void *)) ? gil : 0;
}

void pyrt_gil_read(uintptr_t interp, int *locked, uintptr_t *holder, pyrt_read_fn rd)
{
    uintptr_t gil = pyrt_gil_addr(interp, rd), last = 0;
    int lk = 0;
    *locked = 0;
    *holder = 0;
    if (!gil)
        return;
    /* The fields are atomics before 3.13 (struct wrappers of the same size): copied as bytes. */
    if (rd(gil + offsetof(struct _gil_runtime_state, locked), &lk, sizeof lk) != 0 ||
        rd(gil + offsetof(struct _gil_runtime_state, last_holder), &last, sizeof last) != 0)
        return;
    *locked = lk != 0;
    *holder = last;
}

uintptr_t pyrt_gil_interval_addr(uintptr_t interp, pyrt_read_fn rd)
{
    uintptr_t gil = pyrt_gil_addr(interp, rd);
    return gil ? gil + offsetof(struct _gil_runtime_state, interval) : 0;
}

uintptr_t pyrt_frames_top(uintptr_t ts, pyrt_read_fn rd)
{
    struct pyrt_tstate t;
    return pyrt_tstate_read(ts, &t, rd) == 0 ? t.top : 0;
}

#if PY_VERSION_HEX >= 0x030B0000
/* 1 when a code object of units code units has a prologue of ft code units that fits in it,
 * with the bytes of both in an int: values read from a code object being built or freed can be
 * anything, and ft * sizeof(_Py_CODEUNIT) must not overflow. */
static int prologue_ok(long long ft, long long units)
{
    return units >= 0 && units <= INT_MAX / (long long)sizeof(_Py_CODEUNIT) && ft >= 0 &&
           ft <= units;
}

/* 1 when code is a code object (*firsttraceable: code units of its prologue), 0 when it is a
 * readable object of another type, -1 when unreadable or inconsistent (a prologue longer than
 * its code). */
static int code_check(uintptr_t code, int *firsttraceable, pyrt_read_fn rd)
{
    PyVarObject head; /* a code object's size is its count of code units */
    if (!pyrt_ptr_ok((const void *)code, sizeof(void *)) || rd(code, &head, sizeof head) != 0)
        return -1;
    if (Py_TYPE(&head) != PYRT_CODE_TYPE)
        return 0;
    if (rd(code + offsetof(PyCodeObject, _co_firsttraceable), firsttraceable,
           sizeof *firsttraceable) != 0)
        return -1;
    if (!prologue_ok(*firsttraceable, head.ob_size)) {
        *firsttraceable = 0;
        return -1;
    }
    return 1;
}

/* code_check through the walk's memo, if it has one. */
static int code_check_memo(struct pyrt_walk *w, uintptr_t code, int *firsttraceable)
{
    struct pyrt_code_memo *m;
    if (!w->memo)
        return code_check(code, firsttraceable, w->rd);
    m = &w->memo[((code >> 4) ^ (code >> 12)) & (w->nmemo - 1)];
    if (m->code != code || !code) {
        m->code = code;
        m->firsttraceable = 0;
        m->kind = code_check(code, &m->firsttraceable, w->rd);
    }
    *firsttraceable = m->firsttraceable;
    return m->kind;
}
#endif

void pyrt_window_fill(struct pyrt_window *win, const struct pyrt_tstate *t, pyrt_read_fn rd)
{
    uintptr_t lo = t->stack_lo, hi = t->stack_hi;
    win->chunk_lo = win->lo = win->hi = 0;
    if (!lo || hi <= lo || hi - lo > ((uintptr_t)1 << 30))
        return;
    if (hi - lo > PYRT_WINDOW_BYTES)
        lo = hi - PYRT_WINDOW_BYTES;
    if (rd(lo, win->buf, hi - lo) != 0)
        return;
    win->chunk_lo = t->stack_lo;
    win->lo = lo;
    win->hi = hi;
}

/* n bytes of the frame at fp: from the walk's window where it holds them (refilled for a frame
 * below it in its chunk), in place from the thread's own stack, else one read. */
static int frame_read(struct pyrt_walk *w, uintptr_t fp, void *dst, size_t n)
{
    struct pyrt_window *win = w->win;
    if (win && fp >= win->own_lo && fp < win->own_hi && n <= win->own_hi - fp) {
        pyrt_own_copy(dst, fp, n);
        return 0;
    }
    if (win && win->lo < win->hi && fp >= win->chunk_lo && fp + n <= win->lo) {
        uintptr_t hi = fp + n, lo = hi - win->chunk_lo > PYRT_WINDOW_BYTES ? hi - PYRT_WINDOW_BYTES
                                                                           : win->chunk_lo;
        if (w->rd(lo, win->buf, hi - lo) != 0)
            return w->rd(fp, dst, n);
        win->lo = lo;
        win->hi = hi;
    }
    if (win && fp >= win->lo && fp < win->hi && n <= win->hi - fp) {
        memcpy(dst, win->buf + (fp - win->lo), n);
        return 0;
    }
    return w->rd(fp, dst, n);
}

int pyrt_frames_walk(struct pyrt_walk *w, uintptr_t fp)
{
    struct pyrt_sig_frame *out = w->out;
    int n = 0, steps = 0, max = w->max;
    int limit = max > (MIN_STEPS - 16) / 4 ? 4 * max + 16 : MIN_STEPS;
    w->truncated = 0;
    if (max <= 0)
        return 0;
    /* steps also bounds skipped (shim, incomplete) frames: a cycle cannot spin forever. */
    while (fp && n < max && steps++ < limit) {
        uintptr_t next;
        int line = PYRT_NO_LINE;
        if (!pyrt_ptr_ok((const void *)fp, sizeof(void *)))
            break;
#if PY_VERSION_HEX < 0x030B0000
        PyFrameObject f;
        if (frame_read(w, fp, &f, offsetof(PyFrameObject, f_localsplus)) != 0 ||
            Py_TYPE((PyObject *)&f) != PYRT_FRAME_TYPE)
            break;
        out[n].code = (uintptr_t)f.f_code;
#if PY_VERSION_HEX >= 0x030A0000
        out[n].lasti = f.f_lasti < 0 ? -2 : f.f_lasti * 2; /* 3.10 counts code units */
        if (f.f_lineno != 0)                               /* set (non-zero) only while tracing */
            line = f.f_lineno;
#else
        out[n].lasti = f.f_lasti;
        if (f.f_trace) /* f_lineno is authoritative only while a trace function is set */
            line = f.f_lineno;
#endif
        out[n].entry = 1;
        next = (uintptr_t)f.f_back;
#else
        _PyInterpreterFrame f;
        uintptr_t code, ip, start;
        if (frame_read(w, fp, &f, offsetof(_PyInterpreterFrame, localsplus)) != 0)
            break;
        next = (uintptr_t)f.previous;
#if PY_VERSION_HEX >= 0x030C0000
        if (f.owner == PYRT_OWNER_SHIM) {
            /* The shim below an eval-loop call's first frame: that frame was its entry. */
            if (n > 0)
                out[n - 1].entry = 1;
            fp = next;
            continue;
        }
#endif
#if PY_VERSION_HEX >= 0x030E0000
        code = pyrt_ref_addr(f.f_executable);
        ip = (uintptr_t)f.instr_ptr;
#elif PY_VERSION_HEX >= 0x030D0000
        code = (uintptr_t)f.f_executable;
        ip = (uintptr_t)f.instr_ptr; /* the current instruction */
#else
        code = (uintptr_t)f.f_code;
        ip = (uintptr_t)f.prev_instr; /* the code unit before the next one */
#endif
        /* Remote addresses: compared as integers, never dereferenced. */
        start = code + offsetof(PyCodeObject, co_code_adaptive);
        if (w->flags & PYRT_WALK_CHECK) {
            int firsttraceable = 0, k = code_check_memo(w, code, &firsttraceable);
            if (k < 0 && code == 0) {
                /* No executable (3.14 leaves a NULL reference in a frame being pushed or
                 * popped): not a Python frame now, its link still holds. */
                fp = next;
                continue;
            }
            if (k < 0)
                break;
            if (k == 0 || (f.owner != FRAME_OWNED_BY_GENERATOR &&
                           ip < start + (uintptr_t)firsttraceable * sizeof(_Py_CODEUNIT))) {
                fp = next; /* not code, or incomplete: not yet a Python frame */
                continue;
            }
        }
        out[n].code = code;
        out[n].lasti = ip >= start && ip - start < (uintptr_t)1 << 30 ? (int)(ip - start) : -2;
#if PY_VERSION_HEX >= 0x030C0000
        out[n].entry = 0; /* set when its shim frame follows */
#else
        out[n].entry = f.is_entry ? 1 : 0;
#endif
#endif
        if (w->ext) {
            w->ext[n].frame = fp;
            w->ext[n].line = line;
        }
        n++;
        fp = next;
    }
    w->truncated = fp != 0;
    return n;
}

int pyrt_frame_skip(const struct pyrt_sig_frame *f, pyrt_read_fn rd)
{
#if PY_VERSION_HEX >= 0x030B0000
    int firsttraceable = 0;
    return code_check(f->code, &firsttraceable, rd) <= 0 ||
           f->lasti < firsttraceable * (int)sizeof(_Py_CODEUNIT);
#else
    PyObject head;
    return rd(f->code, &head, sizeof head) != 0 || Py_TYPE(&head) != PYRT_CODE_TYPE;
#endif
}

int pyrt_code_read(uintptr_t code, struct pyrt_code *c, pyrt_read_fn rd)
{
    PyCodeObject co;
    memset(c, 0, sizeof *c);
    if (!pyrt_ptr_ok((const void *)code, sizeof(void *)) || rd(code, &co, sizeof co) != 0)
        return -1;
    if (Py_TYPE((PyObject *)&co) != PYRT_CODE_TYPE)
        return 1;
#if PY_VERSION_HEX >= 0x030B0000
    c->name = (uintptr_t)co.co_qualname;
    c->table = (uintptr_t)co.co_linetable;
#elif PY_VERSION_HEX >= 0x030A0000
    c->name = (uintptr_t)co.co_name;
    c->table = (uintptr_t)co.co_linetable;
#else
    c->name = (uintptr_t)co.co_name;
    c->table = (uintptr_t)co.co_lnotab;
#endif
    c->file = (uintptr_t)co.co_filename;
    c->firstlineno = co.co_firstlineno;
#if PY_VERSION_HEX >= 0x030B0000
    /* ob_size read as a field: 3.12+'s Py_SIZE asserts the type is not int or bool, and with
     * assertions on (the ASan build) the reader then needs PyLong_Type, which it cannot link */
    if (!prologue_ok(co._co_firsttraceable, co.ob_base.ob_size)) {
        memset(c, 0, sizeof *c);
        return -1; /* torn (being built or freed): no trusted line or prologue */
    }
    c->prologue = co._co_firsttraceable * (int)sizeof(_Py_CODEUNIT);
#else
    c->prologue = INT_MIN;
#endif
    return 0;
}

int pyrt_code_line(const unsigned char *t, size_t n, int firstlineno, int lasti)
{
#if PY_VERSION_HEX >= 0x030B0000
    return pyrt_line_loc(t, n, firstlineno, lasti);
#elif PY_VERSION_HEX >= 0x030A0000
    return pyrt_line_310(t, n, firstlineno, lasti);
#else
    return pyrt_line_lnotab(t, n, firstlineno, lasti);
#endif
}

int pyrt_code_loc(const unsigned char *t, size_t n, int firstlineno, int lasti,
                  struct pyrt_loc *loc)
{
#if PY_VERSION_HEX >= 0x030B0000
    return pyrt_loc_311(t, n, firstlineno, lasti, loc);
#else
    loc->end_line = loc->col = loc->end_col = -1;
    return loc->line = pyrt_code_line(t, n, firstlineno, lasti);
#endif
}

int pyrt_gc_collecting(uintptr_t interp, pyrt_read_fn rd)
{
    int v = 0;
#if PY_VERSION_HEX < 0x03090000
    uintptr_t a = (uintptr_t)&PYRT_RUNTIME->gc.collecting;
    (void)interp;
#else
    uintptr_t a = interp + offsetof(PyInterpreterState, gc.collecting);
#endif
    return interp && rd(a, &v, sizeof v) == 0 ? v != 0 : -1;
}
