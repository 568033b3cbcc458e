/* SPDX-License-Identifier: MIT */
/* The one per-version frame walker (probe-internal) that every reader of Python stacks shares:
 * the GIL-free snapshot (walk.c), the sampler's signal handler and crash capture
 * (sig/pyrt_sig.c). It knows the CPython layouts, each in one place in frames.c: the main
 * interpreter's thread list, the GIL's holder, thread state -> innermost frame, the frame chain
 * (3.8-3.10 PyFrameObject, 3.11 _PyInterpreterFrame with is_entry, 3.12/3.13 with C-stack shim
 * frames, 3.13's f_executable), incomplete frames, and a code object's name, file and line
 * table. Async-signal-safe: no allocation, no lock, no stdio, every read through the caller's
 * fault-proof read (pyrt_read in a handler, safe.c's with its pipe fallback elsewhere),
 * every loop bounded. Callers decorate the frames (names, lines, locals) afterwards. No CPython
 * header here: plain files may include it. */
#ifndef PROBE_PYRT_FRAMES_H
#define PROBE_PYRT_FRAMES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "read.h"

/* One Python frame as the walker keeps it. */
struct pyrt_sig_frame {
    uintptr_t code; /* the code object's address */
    int lasti;      /* instruction offset in bytes into co_code / the code's bytecode
                       (-2 for a frame that has not run its first instruction) */
    int entry;      /* 1 when this frame was the first one run by its C-level call of the
                       eval loop (3.8-3.10: every frame; 3.11+: entry frames), so native and
                       Python stacks can be merged: one eval-loop native frame per entry run */
};

/* What the snapshot also wants of a frame (optional, in a parallel array). */
#define PYRT_NO_LINE INT_MIN
struct pyrt_frame_ext {
    uintptr_t frame; /* PyFrameObject* (3.8-3.10) or _PyInterpreterFrame* (3.11+) */
    int line;        /* the frame's own line where it is authoritative (3.8-3.10 while
                        tracing), else PYRT_NO_LINE: the line table decides */
};

enum {
    /* Read each frame's code object (3.11+): skip frames that have not finished their
     * prologue and, on 3.13, frames whose executable is not a code object; stop at an
     * unreadable one. Without it one read per frame, and pyrt_frame_skip tells those apart
     * later. (3.8-3.10 frames are always complete: no extra read.) */
    PYRT_WALK_CHECK = 1,
};

/* What PYRT_WALK_CHECK learnt of a code object, remembered by a caller that walks often. */
struct pyrt_code_memo {
    uintptr_t code;
    int kind;           /* 1 code object, 0 another type, -1 unreadable */
    int firsttraceable; /* code units of its prologue */
};

/* A copy of a thread's frame memory that a walk reads frames from: on 3.11+ the top of the
 * thread's current data stack chunk, where its frames are pushed (up to datastack_top), read at
 * once instead of one read per frame. Only for the thread itself, from its own signal handler:
 * an interrupted thread's frames cannot change under the copy (another thread's can). A frame
 * outside it (a generator's, a C-stack shim, an older chunk) is read alone; one below it in the
 * same chunk (a deep stack) refills it. Kept out of the signal stack (about 4 KiB). */
#define PYRT_WINDOW_BYTES 4096
#define PYRT_WINDOW_SLACK 1024 /* read above the last top, where the next top may be */
#define PYRT_TSTATE_BYTES 1024 /* room for a PyThreadState (checked per version) */
struct pyrt_window {
    uintptr_t chunk_lo; /* the chunk's first frame byte (0: no window) */
    uintptr_t lo, hi;   /* the copy of [lo, hi) (lo == hi: empty) */
    unsigned char buf[PYRT_WINDOW_BYTES + PYRT_WINDOW_SLACK];
    unsigned char ts[PYRT_TSTATE_BYTES]; /* the thread state read with the window (one call) */
    /* The thread's own C stack from its sp (0, 0: unknown): a frame there (3.12+: the shim
     * an eval loop's entry pushes) is copied in place. */
    uintptr_t own_lo, own_hi;
};

/* One walk: the caller fills the inputs, the walker the outputs. */
struct pyrt_walk {
    pyrt_read_fn rd;             /* the fault-proof read to use */
    int flags;                   /* PYRT_WALK_* */
    int max;                     /* room in out[] (and ext[]) */
    struct pyrt_sig_frame *out;  /* the frames, innermost first */
    struct pyrt_frame_ext *ext;  /* NULL, or a parallel array */
    struct pyrt_code_memo *memo; /* NULL, or nmemo slots (a power of two) zeroed before use */
    unsigned nmemo;
    struct pyrt_window *win; /* NULL, or the calling thread's frame memory (3.11+) */
    int truncated;           /* out: frames were left (max reached, an unreadable frame,
                                    or the step bound: a cycle) */
};

/* ---- thread states ---- */

/* What the readers need of one thread state. */
struct pyrt_tstate {
    uintptr_t interp;    /* its interpreter */
    uintptr_t next;      /* the next thread state of the list, 0 at the end */
    unsigned long ident; /* threading.get_ident(): the pthread_t */
    long native_id;      /* the kernel tid where the thread state holds it (3.11+), else -1 */
    uintptr_t top;       /* its innermost frame, 0 when none */
    uintptr_t stack_lo;  /* 3.11+: its current data stack chunk's first frame byte, else 0 */
    uintptr_t stack_hi;  /* 3.11+: datastack_top (the chunk's frames end there), else 0 */
};
/* The main interpreter (*interp) and the head of its thread list (*head, 0 when empty).
 * Returns 0; -1 when Python is not initialised (no main interpreter); -2 when the
 * interpreter state is unreadable. */
int pyrt_threads_head(uintptr_t *interp, uintptr_t *head, pyrt_read_fn rd);
/* Every interpreter (subinterpreters too: 3.12+'s per-interpreter GIL, 3.14's
 * concurrent.interpreters): the main one first, then the others along the runtime's list
 * (_PyRuntime.interpreters.head -> next, newest first), every read through rd, at most
 * PYRT_MAX_INTERPS visited. The iterator lives on the caller's stack (signal-safe). */
#define PYRT_MAX_INTERPS 256
struct pyrt_interp {
    uintptr_t addr; /* its PyInterpreterState */
    long long id;   /* its id (0: the main interpreter) */
    uintptr_t head; /* the first thread state of its list, 0 when none */
};
struct pyrt_interp_iter {
    uintptr_t main, cur;
    int steps;
};
/* Starts the iteration. 0; -1 when Python is not initialised (no main interpreter); -2 when
 * the main interpreter's state is unreadable. */
int pyrt_interp_first(struct pyrt_interp_iter *it, pyrt_read_fn rd);
/* The next interpreter into *out: 1, or 0 at the end (the list ends, an interpreter state is
 * unreadable, or the bound). */
int pyrt_interp_next(struct pyrt_interp_iter *it, struct pyrt_interp *out, pyrt_read_fn rd);

/* Reads the thread state at ts (one read; two on 3.11/3.12 for the innermost frame). 0, or
 * -1. */
int pyrt_tstate_read(uintptr_t ts, struct pyrt_tstate *t, pyrt_read_fn rd);
/* pyrt_tstate_read for the calling thread, from its signal handler: the thread state's bytes
 * are copy (the caller read them already; NULL: read through rd), what lies in [lo, hi) of its
 * own stack (mapped while it runs) is copied in place, the rest read through rd. */
int pyrt_tstate_read_own(uintptr_t ts, struct pyrt_tstate *t, pyrt_read_fn rd, const void *copy,
                         uintptr_t lo, uintptr_t hi);

/* The address of interpreter interp's GIL state (struct _gil_runtime_state), 0 when
 * unreadable. */
uintptr_t pyrt_gil_addr(uintptr_t interp, pyrt_read_fn rd);
/* Whether the GIL of interpreter interp is held (*locked) and by which thread state
 * (*holder, its last holder). Both 0 when unreadable. */
void pyrt_gil_read(uintptr_t interp, int *locked, uintptr_t *holder, pyrt_read_fn rd);
/* The address of the switch interval (`interval`, unsigned long microseconds) in interpreter
 * interp's GIL state: _PyRuntime.ceval.gil (3.8-3.11) or *interp->ceval.gil (3.12+); 0 when
 * unreadable. */
uintptr_t pyrt_gil_interval_addr(uintptr_t interp, pyrt_read_fn rd);

/* Whether the gc module of interpreter interp is collecting now (its state's `collecting`:
 * _PyRuntime.gc on 3.8, interp->gc from 3.9): 1 or 0, -1 when unreadable. */
int pyrt_gc_collecting(uintptr_t interp, pyrt_read_fn rd);

/* ---- frames ---- */

/* The innermost frame of the thread state at tstate, 0 when none or unreadable. */
uintptr_t pyrt_frames_top(uintptr_t tstate, pyrt_read_fn rd);
/* Walks the frame chain from fp outwards into w->out (and w->ext), innermost first, at most
 * w->max. Returns the count. Async-signal-safe. */
/* Fills win with the top of t's data stack chunk (one read; 3.11+, else it stays empty), for
 * a walk of the calling thread's own frames (pyrt_walk.win). Async-signal-safe. */
void pyrt_window_fill(struct pyrt_window *win, const struct pyrt_tstate *t, pyrt_read_fn rd);
int pyrt_frames_walk(struct pyrt_walk *w, uintptr_t fp);
/* 1 when f (from a walk without PYRT_WALK_CHECK) is not a complete frame of a code object. */
int pyrt_frame_skip(const struct pyrt_sig_frame *f, pyrt_read_fn rd);

/* Where an instruction is in its source (3.11+ co_positions()): -1 for each part unknown. Lines
 * 1-based, columns 0-based UTF-8 byte offsets, end_col exclusive. */
struct pyrt_loc {
    int line, end_line, col, end_col;
};

/* What a snapshot or a report needs of a code object (remote addresses, read with rd). */
struct pyrt_code {
    uintptr_t name;  /* str: co_qualname on 3.11+, co_name before */
    uintptr_t file;  /* str: co_filename */
    uintptr_t table; /* bytes: the line table (co_lnotab, co_linetable) */
    int firstlineno;
    int prologue; /* 3.11+: bytes of code before _co_firsttraceable (a frame whose lasti is
                        below has not started: pyrt_frame_skip); INT_MIN before 3.11 */
};
/* Reads the code object at code. 0; 1 when it is readable but not a code object; -1. */
int pyrt_code_read(uintptr_t code, struct pyrt_code *c, pyrt_read_fn rd);
/* The line of byte offset lasti (pyrt_sig_frame.lasti) from this version's line table
 * (copied bytes t, n of them); -1 for "no line". Pure. */
int pyrt_code_line(const unsigned char *t, size_t n, int firstlineno, int lasti);
/* pyrt_code_line with the columns and end line where this version's table has them (3.11+);
 * before 3.11 loc holds the line only (the rest -1). Returns loc->line. Pure. */
int pyrt_code_loc(const unsigned char *t, size_t n, int firstlineno, int lasti,
                  struct pyrt_loc *loc);

/* ---- lines.c: the line table decoders of every version (pure, so the tests check all) ---- */

/* 3.8/3.9 co_lnotab; addr is the byte offset of the instruction (f_lasti). */
int pyrt_line_lnotab(const unsigned char *t, size_t n, int firstlineno, int addr);
/* 3.10 co_linetable (PEP 626, 3.10 format); addr is the byte offset (2 * f_lasti). */
int pyrt_line_310(const unsigned char *t, size_t n, int firstlineno, int addr);
/* 3.11+ location table; addr is the byte offset (2 * code-unit index). -1 for "no line". */
int pyrt_line_loc(const unsigned char *t, size_t n, int firstlineno, int addr);
/* pyrt_line_loc with the whole position into *loc (all -1 when the table has none; a
 * negative addr gives the first line only). Returns loc->line. */
int pyrt_loc_311(const unsigned char *t, size_t n, int firstlineno, int addr, struct pyrt_loc *loc);

#endif
