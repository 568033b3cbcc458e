/* SPDX-License-Identifier: MIT */
/* The native and Python CPU sampler (probe-internal; `probing perf --cc`, docs/perf.md).
 * sampler.c: start/stop, the drain thread (finds threads in /proc/self/task, arms and deletes
 * their timers, drains their rings, wall-mode ticks, fork). sig/prof_sig.c: per-thread slots with
 * preallocated rings, the SIGPROF handler (async-signal-safe: no allocation, lock or
 * symbolisation) and the CPU-time timers. store.c: symbolisation, merging of native and
 * Python frames, stack dedup, the perf.samples / perf.stacks / perf.frames tables.
 * Threads: prof_start/prof_stop/prof_status_get from the loop thread (any one thread at a
 * time); fill functions from the task thread; the store has its own mutex. */
#ifndef PROBE_PROF_H
#define PROBE_PROF_H

#include <stdint.h>

#include "pb.h"
#include "sig/prof_sig.h"

enum { PROF_CPU = 0, PROF_WALL = 1 };

#define PROF_RATE_MIN 1
#define PROF_RATE_MAX 1000
#define PROF_RATE_DEFAULT 100

struct prof_opts {
    int rate;  /* samples per second per thread */
    int mode;  /* PROF_CPU or PROF_WALL */
    int clock; /* cpu mode: PROF_CLOCK_AUTO (events where allowed), _EVENTS or _TIMERS */
};

struct prof_status {
    int running;
    int mode;
    int rate;
    int forked;           /* stopped because the process forked (this is the child) */
    double started;       /* epoch s, 0 if never started */
    double stopped;       /* epoch s, 0 while running */
    long long samples;    /* in perf.samples */
    long long missed;     /* timer expirations never delivered (blocked signal, overruns) */
    long long lost;       /* recorded but dropped: full ring or perf.max_samples reached */
    long long stacks;     /* distinct stacks */
    int threads;          /* distinct threads with samples */
    int armed;            /* threads with a live timer (cpu) or slot (wall) now */
    double probe_cpu_s;   /* the sampler's own CPU time: drain thread + signal handlers */
    double handler_cpu_s; /* of which the signal handlers (in the sampled threads) */
    double drain_cpu_s;   /* of which the drain thread */
    int clock;            /* cpu mode: PROF_CLOCK_EVENTS or PROF_CLOCK_TIMERS; wall: 0 */
    int clock_user_only;  /* events counting user time only (kernel.perf_event_paranoid 2) */
    char clock_why[192];  /* auto chose timers: why events were not used ("" otherwise) */
};

/* Loop thread. Starts sampling, clearing the previous data. PB_ESTATE when already running,
 * PB_EBADARG for a rate/mode/clock out of range, PB_ENOPYTHON without an interpreter, -errno of
 * perf_event_open when clock PROF_CLOCK_EVENTS was asked and the kernel refuses it. */
int prof_start(const struct prof_opts *o, struct pb_err *err);
/* Loop thread. Stops: every timer deleted, the previous SIGPROF disposition back, the data
 * kept. Returns 1 if it was running, 0 if not; st (may be NULL) gets the final status. */
int prof_stop(struct prof_status *st);
/* Any thread. */
void prof_status_get(struct prof_status *st);

/* ---- native.c: native and Python stacks merged, on demand (debug --dump --native) ---- */
enum { PROF_NF_PYTHON, PROF_NF_NATIVE };
struct prof_nframe {
    int kind;     /* PROF_NF_* */
    int is_eval;  /* native: the eval loop */
    int internal; /* native: CPython's call machinery (left out unless asked) */
    int startup;  /* native: process/thread start-up (left out at the root unless asked) */
    uintptr_t pc, offset, bias; /* native: pc, pc - function start, the object's load bias */
    char *name;                 /* function (Python: co_qualname/co_name); NULL unknown */
    char *file;                 /* Python: co_filename; native: the object's path (NULL unknown) */
    int line;                   /* Python: the line; -1 */
};
struct prof_nstack {
    long tid;
    int answered;       /* 0: the thread did not take the signal in time (blocks SIGPROF) */
    int blocked;        /* 1: blocked in a system call, read without a signal (native.c);
                         * 2: the same, but it kept waking: Python frames only */
    int unasked;        /* 1: not asked: the call had waited NATIVE_TOTAL_MS (3 s) for others */
    int masked;         /* 1: not asked: it blocks SIGPROF and is not in a system call */
    int merged;         /* 1: f is the merged stack; 0: f native, py the Python frames */
    int evals, entries; /* eval-loop frames and Python entry frames (equal when merged) */
    int n, npy;
    struct prof_nframe *f, *py; /* innermost first */
};
/* Any thread but a handler. The stacks of the n threads tids (kernel tids; <= 0 skipped) into out[i] (the
 * caller's n entries; each freed with prof_nstack_free). all: keep CPython's internals. A
 * thread blocked in a system call is read without a signal; one that blocks SIGPROF is not asked
 * (masked); the others are signalled, each
 * thread once however often tids names it, each batch waiting at most 1 s and the call 3 s
 * in all (threads left then are not asked: unasked). 0, or a negative code with err. */
int prof_native_stacks(const long *tids, int n, int all, struct prof_nstack *out,
                       struct pb_err *err);
void prof_nstack_free(struct prof_nstack *s); /* accepts NULL */
/* In a fork child (an atfork handler): the lock native stacks and the sampler's start take
 * turns on made free again (its holder is not in the child); a batch being asked at the fork
 * forgotten (the child's copies of its events closed, a handler installed for it removed). */
void prof_native_fork_child(void);
void prof_native_fork_prepare(void); /* before a fork: no event of a dump half recorded */
void prof_native_fork_parent(void);
/* Any thread but a handler. The threads of this process that run no Python (native-only:
 * torch's autograd and gloo threads, a pthread a C extension started): every kernel thread in
 * /proc/self/task but those in skip[0..nskip) (the Python threads' native ids), the probe's own
 * (core_thread_is_ours) and the caller, ascending, at most max of them into tids, each one's
 * kernel name (/proc/self/task/TID/comm, PROF_COMM bytes with the NUL) into names unless NULL.
 * Returns the count, *more the threads left out past max, or a negative code with err. */
#define PROF_COMM 16
#define PROF_OTHERS_MAX 1024 /* the most a dump or a query shows (the rest: *more) */
int prof_native_others(const long *skip, int nskip, long *tids, char (*names)[PROF_COMM], int max,
                       int *more, struct pb_err *err);
/* Taken around installing and removing the SIGPROF handler (sampler.c, native.c). */
void prof_sig_lock(void);
void prof_sig_unlock(void);

/* ---- internals shared by prof/ (the signal side: sig/prof_sig.h) ---- */
/* symbols.c (any thread but a signal handler; one mutex): what a native pc is. */
struct prof_sym {
    char name[512];   /* its function (demangled), "" when unknown */
    char module[512]; /* the object's path, "" when none holds the pc */
    uintptr_t offset; /* pc - the function's start */
    uintptr_t fbase;  /* where the object is mapped (dladdr's dli_fbase) */
    uintptr_t bias;   /* its load bias: pc - bias is the link-time address */
    int is_eval;      /* CPython's eval loop (_PyEval_EvalFrameDefault) */
};
/* Names pc through dladdr1, else the object's .symtab (stripped objects: name ""). depth > 0:
 * pc is a return address, looked up at pc - 1. */
void prof_sym_describe(uintptr_t pc, int depth, struct prof_sym *s);
/* What a merged stack leaves out unless all frames are asked for (the same rule for
 * debug --dump --native, perf.stacks.folded and every profile output):
 * prof_sym_internal: the eval loop, or CPython's call machinery in the interpreter's own object
 * (pb_cpython_machinery: an unnamed function of it too); prof_sym_startup: that, or a function
 * that starts a process or thread (pb_startup_frame), or an unnamed function of libc or of the
 * executable: left out at the stack's root only. Not under prof_sym_describe's mutex. */
int prof_sym_internal(const struct prof_sym *s);
int prof_sym_startup(const struct prof_sym *s);
void prof_sym_reset(void);
/* evalpart.c: 1 when pc lies in a detached, unnamed part of _PyEval_EvalFrameDefault (an
 * optimised build's hot/cold split, e.g. Debian's CPython). Called by prof_sym_describe under
 * its mutex, never in a signal handler. */
int prof_sym_eval_part(uintptr_t pc);

/* store.c */
void prof_store_clear(void);
void prof_store_add(const struct prof_raw *r, int wall); /* drain thread */
void prof_store_thread_name(int tid, const char *name, int from_python);
int prof_store_has_thread_name(int tid);
void prof_store_counts(long long *samples, long long *stacks, int *threads, long long *lost);
void prof_store_tick(void); /* drain thread, about once a second: cache upkeep */

struct probe_rows;
int prof_samples_fill(struct probe_rows *r, struct pb_err *err);
/* perf.samples_by_stack: one row per (thread, stack) with its sample counts. */
int prof_stack_counts_fill(struct probe_rows *r, struct pb_err *err);
/* only_sid >= 0: that stack only. */
int prof_stacks_fill(struct probe_rows *r, long long only_sid, struct pb_err *err);
int prof_frames_fill(struct probe_rows *r, long long only_sid, struct pb_err *err);

/* ---- modules.c: the loaded objects (the debugger's modules request, frames' moduleId) ---- */
#define PROF_MODULE_PATH 512
struct prof_module {
    int id;                      /* the object's, the same for the life of the process (from 1) */
    int symbols;                 /* 1: its file has .symtab or .debug_info; 0 not; -1 not checked */
    uintptr_t lo, hi;            /* the union of its PT_LOAD segments */
    uintptr_t bias;              /* its load bias */
    char path[PROF_MODULE_PATH]; /* the main program's from /proc/self/exe */
};
/* Any thread but a signal handler. Every loaded object, in the loader's order, into *out
 * (malloc'd, free() it); with_symbols: check each file for symbols (once per object). Returns
 * the count, or -ENOMEM. */
int prof_modules(struct prof_module **out, int with_symbols);
/* The index in mods of the object holding pc, or -1. */
int prof_module_find(const struct prof_module *mods, int n, uintptr_t pc);

#endif
