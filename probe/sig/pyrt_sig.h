/* SPDX-License-Identifier: MIT */
/* Async-signal-safe reading of Python frames (probe-internal), for the CPU sampler's signal
 * handler (prof_sig.c) and crash capture: no malloc, no locks, no GIL, no CPython call except
 * PyGILState_GetThisThreadState (a thread-local read), every read of interpreter memory that
 * may go away fault-proof (process_vm_readv(2) on our own pid: a bad pointer gives EFAULT,
 * never SIGSEGV), every loop bounded. The one exception, sig_pyrt_frames_own, copies directly
 * what is proven live (the calling thread's own state while it holds the GIL, its chunk). The
 * frames come from the walker that the GIL-free snapshot shares (pyrt/frames.h); this file adds
 * the thread list and bounded descriptions. Built per CPython version (3.8-3.15).
 * Stack use: the frame functions use < 1 KiB; sig_pyrt_describe about 5 KiB (a 4 KiB slice of
 * the line table), so a handler on a small sigaltstack should keep SIGSTKSZ * 2 or more.
 * Where process_vm_readv is refused (seccomp) every function returns 0 / -1 cleanly. */
#ifndef PROBE_PYRT_SIG_H
#define PROBE_PYRT_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "pyrt/frames.h" /* struct pyrt_sig_frame, pyrt_read (read.h) */

/* Optional, outside any handler (the sampler calls it at start): makes the fault-proof reads
 * ready and, before 3.11, enables native thread ids in sig_pyrt_threads (they are -1 until
 * then). Idempotent. Returns 0, or -1 when no signal-safe read is available. */
int sig_pyrt_prepare(void);

/* The calling thread's Python frames, innermost first (its thread state from
 * PyGILState_GetThisThreadState, or the thread-local current tstate), at most max. Returns the
 * count, 0 when the thread has no Python frames or no thread state. Signal-handler safe. */
int sig_pyrt_frames_self(struct pyrt_sig_frame *out, int max);
/* The same for a given PyThreadState address. */
int sig_pyrt_frames_tstate(uintptr_t tstate, struct pyrt_sig_frame *out, int max);
/* The Python frames of every thread state of OS thread tid (the calling thread, from its
 * handler), innermost first: a thread running code in a subinterpreter has a thread state
 * there above its own (the main interpreter's, blocked in the call that runs it): the
 * subinterpreters' frames come first (the highest id first), then the main one's, so that
 * they line up with the native stack's eval-loop frames. Before 3.11 (no tid in the thread
 * state) and when none matches, self's. Signal-handler safe. */
int sig_pyrt_frames_thread(long tid, uintptr_t self, struct pyrt_sig_frame *out, int max);
/* The same from a list of every thread state (sig_pyrt_threads' n entries: addresses, native
 * ids, interpreter ids) read once by a caller that asks for many threads: one walk of the
 * thread states for all of them instead of one per thread; memo (NULL, or nmemo zeroed slots,
 * a power of two) keeps what the walks learnt of each code object across those threads.
 * Signal-handler safe. */
int sig_pyrt_frames_listed(long tid, const uintptr_t *ts, const long *ids, const long long *interps,
                           int n, uintptr_t self, struct pyrt_code_memo *memo, unsigned nmemo,
                           struct pyrt_sig_frame *out, int max);
/* For the sampler's handler, after sig_pyrt_frames_own(self): out[0..n) holds self's frames;
 * appends (up to max) those of the calling thread's (tid's) thread states in interpreters with
 * a lower id than self's, the highest first, with sig_pyrt_frames_fast: the frames that run the
 * subinterpreter call self's thread runs in. Returns the new count. With no subinterpreter (one
 * load: the runtime's list holds the main interpreter only) nothing is read. Signal-handler
 * safe. */
int sig_pyrt_frames_outer(uintptr_t self, long tid, struct pyrt_sig_frame *out, int n, int max);
/* The sampler's cheaper walk (one read per frame): like sig_pyrt_frames_tstate but on 3.11+
 * it reads no code object, so it keeps frames that are not yet complete (still in their
 * prologue) and, on 3.13, frames whose executable is not a code object; sig_pyrt_frame_skip
 * tells those apart later, outside the handler. Signal-handler safe. */
int sig_pyrt_frames_fast(uintptr_t tstate, struct pyrt_sig_frame *out, int max);
/* sig_pyrt_frames_fast for the calling thread's own thread state ts, from its signal handler:
 * on 3.11+ its frames are read from one copy of its data stack (win, the caller's: about 6 KiB,
 * kept off the signal stack), not one read per frame (pyrt/frames.h: struct pyrt_window);
 * [own_lo, own_hi) is the thread's own C stack from its sp (0, 0: unknown), read in place
 * (3.11/3.12: the current _PyCFrame lives there; 3.12+: eval loops' entry shims). While the
 * thread holds the GIL with ts, ts and the copy are read directly (no system call); else both
 * in one process_vm_readv, guessing the copy's range from the last sample. Signal-handler
 * safe. */
int sig_pyrt_frames_own(uintptr_t tstate, struct pyrt_window *win, uintptr_t own_lo,
                        uintptr_t own_hi, struct pyrt_sig_frame *out, int max);
/* 1 when f is not a complete frame of a code object (see sig_pyrt_frames_fast). */
int sig_pyrt_frame_skip(const struct pyrt_sig_frame *f);
/* The calling thread's thread state address (0 when it has none). Signal-handler safe. */
uintptr_t sig_pyrt_tstate_self(void);
/* 1 when thread state ts holds the main interpreter's GIL now (locked, ts its last holder), 0
 * when it does not, -1 when unknown (no ts, or the GIL not found). Plain atomic loads: a
 * signal handler's and any thread's. */
int sig_pyrt_holds_gil(uintptr_t ts);
/* Thread states of every interpreter (the main one's first, then each subinterpreter's):
 * addresses, native thread ids (-1 unknown) and interpreter ids (0: the main one; interp_ids
 * may be NULL), at most max. A thread running code in a subinterpreter has a thread state in
 * each: its native id appears twice. Returns the count. Signal-handler safe. */
int sig_pyrt_threads(uintptr_t *tstates, long *native_ids, long long *interp_ids, int max);
/* A frame's function (co_qualname on 3.11+, co_name before), file (co_filename) and line,
 * written into the caller's buffers (truncated, always NUL-terminated). Signal-handler safe.
 * Returns 0, or -1 when the code object cannot be read (func/file then "?"). */
/* UTF-8 of the compact str at obj into out (cap bytes, NUL-terminated), fault-proof: 0 or -1. */
int sig_pyrt_str(uintptr_t obj, char *out, size_t cap);
int sig_pyrt_describe(const struct pyrt_sig_frame *f, char *func, size_t funcn, char *file,
                      size_t filen, int *line);
/* sig_pyrt_describe in two halves, for a caller that describes many frames of one code object
 * (the sampler's drain: a loop's frames differ only in lasti): what the description needs of
 * the code object, read once, then the line of each lasti (pure). */
struct pyrt_sig_code {
    char func[256], file[1024]; /* "?" when unreadable (as sig_pyrt_describe's callers' buffers) */
    int firstlineno;
    int prologue; /* a frame with lasti below has not started (see struct pyrt_code) */
    uintptr_t name_obj, file_obj, table_obj; /* the objects read (sig_pyrt_code_same) */
    size_t tn;                               /* bytes of the line table in table (0: none) */
    unsigned char table[4096];
};
/* 0; 1 when code is readable but not a code object; -1 unreadable. Signal-handler safe. */
int sig_pyrt_code_get(uintptr_t code, struct pyrt_sig_code *c);
/* 1 when the code object at code still has the name, file and line table objects (and first
 * line) that c was read from: one read instead of sig_pyrt_code_get's seven, for a caller that
 * keeps c while the code may have been freed and its address reused. Signal-handler safe. */
int sig_pyrt_code_same(uintptr_t code, const struct pyrt_sig_code *c);
/* The line of byte offset lasti, -1 for none. Pure. */
int sig_pyrt_code_line(const struct pyrt_sig_code *c, int lasti);
#endif
