/* SPDX-License-Identifier: MIT */
/* Async-signal-safe frame reading (pyrt_sig.h). Same walk as pyrt/walk.c but allocation-free: a
 * frame is kept as (code address, instruction offset, entry flag) and described later
 * (pyrt_sig_describe) into caller buffers. Reads go through process_vm_readv(2) directly (the
 * pipe fallback of pyrt/safe.c takes a mutex, which a signal handler must not). Per version:
 * 3.8-3.10 PyFrameObject chain from tstate->frame, every frame its own eval-loop call;
 * 3.11 _PyInterpreterFrame chain with is_entry; 3.12/3.13 the chain with a C-stack shim frame
 * (FRAME_OWNED_BY_CSTACK) below the first frame of each eval-loop call. Incomplete frames (in
 * their prologue) are skipped as CPython does. Line numbers use pyrt/decode.c's pure decoders
 * on a bounded stack copy of the line table. */
#include "pyrt/internal.h"
#include "pyrt_sig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIG_MAX_STEPS 4096 /* frames visited (kept or skipped) per walk */
#define SIG_TABLE 4096     /* bytes of a line table read by describe */

static volatile int sig_vm_state;     /* 0 untested, 1 works, -1 refused */
static volatile int sig_tids_allowed; /* pyrt_sig_prepare ran with the syscall read */

int pyrt_sig_read(uintptr_t addr, void *dst, size_t n)
{
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)addr, n};
    int saved = errno;
    ssize_t r;
    if (n == 0)
        return 0;
    if (!probe_ptr_ok((const void *)addr, 1) || sig_vm_state < 0)
        return -1;
    /* One element: a page-crossing range either copies whole or comes back short. */
    do {
        r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == ENOSYS || errno == EPERM))
        sig_vm_state = -1;
    errno = saved;
    return r == (ssize_t)n ? 0 : -1;
}

int pyrt_sig_prepare(void)
{
    static const char marker[8] = "pyrt-sg";
    char buf[8];
    struct pb_err err = {0};
    sig_vm_state = 0;
    if (pyrt_sig_read((uintptr_t)marker, buf, sizeof buf) != 0 || memcmp(buf, marker, 8) != 0) {
        sig_vm_state = -1;
        return -1;
    }
    sig_vm_state = 1;
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

int pyrt_sig_frames_self(struct pyrt_sig_frame *out, int max)
{
    uintptr_t ts = pyrt_sig_tstate_self();
    return ts ? pyrt_sig_frames_tstate(ts, out, max) : 0;
}

/* Innermost frame address of thread state ts, 0 if unreadable. */
static uintptr_t top_frame(uintptr_t ts)
{
    uintptr_t fp = 0;
#if PY_VERSION_HEX >= 0x030D0000
    pyrt_sig_read(ts + offsetof(PyThreadState, current_frame), &fp, sizeof fp);
#elif PY_VERSION_HEX >= 0x030B0000
    uintptr_t cf = 0;
    if (pyrt_sig_read(ts + offsetof(PyThreadState, cframe), &cf, sizeof cf) == 0)
        pyrt_sig_read(cf + offsetof(_PyCFrame, current_frame), &fp, sizeof fp);
#else
    pyrt_sig_read(ts + offsetof(PyThreadState, frame), &fp, sizeof fp);
#endif
    return fp;
}

int pyrt_sig_frames_tstate(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
    int n = 0;
    uintptr_t fp;
    if (!ts || max <= 0)
        return 0;
    fp = top_frame(ts);
    for (int steps = 0; fp && n < max && steps < SIG_MAX_STEPS; steps++) {
#if PY_VERSION_HEX < 0x030B0000
        PyFrameObject f;
        if (pyrt_sig_read(fp, &f, offsetof(PyFrameObject, f_localsplus)) != 0 ||
            Py_TYPE((PyObject *)&f) != &PyFrame_Type)
            break;
        out[n].code = (uintptr_t)f.f_code;
#if PY_VERSION_HEX >= 0x030A0000
        out[n].lasti = f.f_lasti < 0 ? -2 : f.f_lasti * 2; /* 3.10 counts code units */
#else
        out[n].lasti = f.f_lasti;
#endif
        out[n].entry = 1;
        n++;
        fp = (uintptr_t)f.f_back;
#else
        _PyInterpreterFrame f;
        uintptr_t code, ip, start;
        int firsttraceable = 0;
        if (pyrt_sig_read(fp, &f, offsetof(_PyInterpreterFrame, localsplus)) != 0)
            break;
#if PY_VERSION_HEX >= 0x030C0000
        if (f.owner == FRAME_OWNED_BY_CSTACK) {
            /* The shim below an eval-loop call's first frame: that frame was its entry. */
            if (n > 0)
                out[n - 1].entry = 1;
            fp = (uintptr_t)f.previous;
            continue;
        }
#endif
#if PY_VERSION_HEX >= 0x030D0000
        code = (uintptr_t)f.f_executable;
        ip = (uintptr_t)f.instr_ptr;
#else
        code = (uintptr_t)f.f_code;
        ip = (uintptr_t)f.prev_instr;
#endif
        if (!probe_ptr_ok((const void *)code, sizeof(void *)))
            break;
        {
            PyObject head;
            if (pyrt_sig_read(code, &head, sizeof head) != 0)
                break;
            if (Py_TYPE(&head) != &PyCode_Type) { /* 3.13: None in C entry frames */
                fp = (uintptr_t)f.previous;
                continue;
            }
        }
        if (pyrt_sig_read(code + offsetof(PyCodeObject, _co_firsttraceable), &firsttraceable,
                          sizeof firsttraceable) != 0)
            break;
        start = code + offsetof(PyCodeObject, co_code_adaptive);
        if (f.owner != FRAME_OWNED_BY_GENERATOR &&
            ip < start + (uintptr_t)firsttraceable * sizeof(_Py_CODEUNIT)) {
            fp = (uintptr_t)f.previous; /* incomplete: not yet a Python frame */
            continue;
        }
        out[n].code = code;
        out[n].lasti = ip - start < (uintptr_t)1 << 30 ? (int)(ip - start) : -2;
        if (ip < start)
            out[n].lasti = -2;
#if PY_VERSION_HEX < 0x030C0000
        out[n].entry = f.is_entry ? 1 : 0;
#else
        out[n].entry = 0; /* set when its shim frame follows */
#endif
        n++;
        fp = (uintptr_t)f.previous;
#endif
    }
    return n;
}

int pyrt_sig_frames_fast(uintptr_t ts, struct pyrt_sig_frame *out, int max)
{
#if PY_VERSION_HEX < 0x030B0000
    return pyrt_sig_frames_tstate(ts, out, max); /* already one read per frame */
#else
    int n = 0;
    uintptr_t fp;
    if (!ts || max <= 0)
        return 0;
    fp = top_frame(ts);
    for (int steps = 0; fp && n < max && steps < SIG_MAX_STEPS; steps++) {
        _PyInterpreterFrame f;
        uintptr_t code, ip, start;
        if (pyrt_sig_read(fp, &f, offsetof(_PyInterpreterFrame, localsplus)) != 0)
            break;
#if PY_VERSION_HEX >= 0x030C0000
        if (f.owner == FRAME_OWNED_BY_CSTACK) {
            if (n > 0)
                out[n - 1].entry = 1;
            fp = (uintptr_t)f.previous;
            continue;
        }
        code = (uintptr_t)
#if PY_VERSION_HEX >= 0x030D0000
            f.f_executable;
        ip = (uintptr_t)f.instr_ptr;
#else
            f.f_code;
        ip = (uintptr_t)f.prev_instr;
#endif
        out[n].entry = 0;
#else
        code = (uintptr_t)f.f_code;
        ip = (uintptr_t)f.prev_instr;
        out[n].entry = f.is_entry ? 1 : 0;
#endif
        start = code + offsetof(PyCodeObject, co_code_adaptive);
        out[n].code = code;
        out[n].lasti = ip >= start && ip - start < (uintptr_t)1 << 30 ? (int)(ip - start) : -2;
        n++;
        fp = (uintptr_t)f.previous;
    }
    return n;
#endif
}

int pyrt_sig_frame_skip(const struct pyrt_sig_frame *f)
{
    PyObject head;
    if (pyrt_sig_read(f->code, &head, sizeof head) != 0 || Py_TYPE(&head) != &PyCode_Type)
        return 1;
#if PY_VERSION_HEX >= 0x030B0000
    int firsttraceable = 0;
    if (pyrt_sig_read(f->code + offsetof(PyCodeObject, _co_firsttraceable), &firsttraceable,
                      sizeof firsttraceable) != 0)
        return 1;
    return f->lasti < firsttraceable * (int)sizeof(_Py_CODEUNIT);
#else
    return 0;
#endif
}

int pyrt_sig_threads(uintptr_t *tstates, long *native_ids, int max)
{
    uintptr_t interp = 0, head = 0, ts;
    int n = 0;
    if (max <= 0 || pyrt_sig_read((uintptr_t)&_PyRuntime.interpreters.main, &interp,
                                  sizeof interp) != 0 || !interp)
        return 0;
#if PY_VERSION_HEX >= 0x030B0000
    size_t head_off = offsetof(PyInterpreterState, threads.head);
#else
    size_t head_off = offsetof(PyInterpreterState, tstate_head);
#endif
    if (pyrt_sig_read(interp + head_off, &head, sizeof head) != 0)
        return 0;
    ts = head;
    for (int steps = 0; ts && n < max && steps < PYRT_MAX_THREADS; steps++) {
        uintptr_t next = 0, tinterp = 0;
        if (pyrt_sig_read(ts + offsetof(PyThreadState, interp), &tinterp, sizeof tinterp) != 0 ||
            tinterp != interp ||
            pyrt_sig_read(ts + offsetof(PyThreadState, next), &next, sizeof next) != 0)
            break;
        tstates[n] = ts;
        if (native_ids) {
            long id = -1;
#if PY_VERSION_HEX >= 0x030B0000
            unsigned long nid = 0;
            if (pyrt_sig_read(ts + offsetof(PyThreadState, native_thread_id), &nid,
                              sizeof nid) == 0 && nid > 0)
                id = (long)nid;
#else
            unsigned long ident = 0;
            if (sig_tids_allowed &&
                pyrt_sig_read(ts + offsetof(PyThreadState, thread_id), &ident, sizeof ident) == 0)
                id = probe_tid_from_pthread(ident);
#endif
            native_ids[n] = id;
        }
        n++;
        ts = next;
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
        Py_TYPE((PyObject *)&h.a) != &PyUnicode_Type || h.a.length < 0 || !h.a.state.compact)
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

int pyrt_sig_describe(const struct pyrt_sig_frame *f, char *func, size_t funcn, char *file,
                      size_t filen, int *line)
{
    PyCodeObject co;
    uintptr_t fobj, tab;
    unsigned char table[SIG_TABLE];
    PyVarObject th;
    size_t tn;
    int ln = -1;

    put(func, funcn, "?");
    put(file, filen, "?");
    if (line)
        *line = -1;
    if (!f || pyrt_sig_read(f->code, &co, sizeof co) != 0 ||
        Py_TYPE((PyObject *)&co) != &PyCode_Type)
        return -1;
#if PY_VERSION_HEX >= 0x030B0000
    fobj = (uintptr_t)co.co_qualname;
    tab = (uintptr_t)co.co_linetable;
#else
    fobj = (uintptr_t)co.co_name;
#if PY_VERSION_HEX >= 0x030A0000
    tab = (uintptr_t)co.co_linetable;
#else
    tab = (uintptr_t)co.co_lnotab;
#endif
#endif
    if (str_get(fobj, func, funcn) != 0)
        put(func, funcn, "?");
    if (str_get((uintptr_t)co.co_filename, file, filen) != 0)
        put(file, filen, "?");
    if (!line)
        return 0;
    if (pyrt_sig_read(tab, &th, sizeof th) != 0 || Py_TYPE((PyObject *)&th) != &PyBytes_Type ||
        th.ob_size < 0)
        return 0;
    tn = (size_t)th.ob_size < sizeof table ? (size_t)th.ob_size : sizeof table;
    if (tn && pyrt_sig_read(tab + offsetof(PyBytesObject, ob_sval), table, tn) != 0)
        return 0;
#if PY_VERSION_HEX >= 0x030B0000
    ln = probe_line_loc(table, tn, co.co_firstlineno, f->lasti);
#elif PY_VERSION_HEX >= 0x030A0000
    ln = probe_line_310(table, tn, co.co_firstlineno, f->lasti);
#else
    ln = probe_line_lnotab(table, tn, co.co_firstlineno, f->lasti);
#endif
    *line = ln;
    return 0;
}
