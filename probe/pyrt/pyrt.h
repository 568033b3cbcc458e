/* SPDX-License-Identifier: MIT */
/* Reading the interpreter's threads and frames from inside the process (probe-internal).
 * Built once per CPython minor version against that version's internal headers, so structure
 * layouts are exact. The walk needs no GIL: every read of interpreter memory goes through a
 * fault-proof read (it cannot crash the target on a bad pointer) and every loop is bounded.
 * Thread names from `threading` and local variables need the GIL (flags below).
 * Memory: a snapshot owns all its strings and arrays; pyrt_snapshot_free() releases them. */
#ifndef PROBE_PYRT_H
#define PROBE_PYRT_H

#include <stdint.h>

#include "pb.h"

struct probe_local {
    char *name;
    char *type;  /* type name, e.g. "int", "mymod.Point" */
    char *value; /* bounded repr, or NULL when not read */
};

struct probe_frame {
    char *func;   /* co_qualname on 3.11+, co_name before */
    char *file;   /* co_filename */
    int line;     /* current line, computed from the instruction offset */
    int end_line; /* 3.11+: the last line of the instruction's source range; 0 unknown */
    int col;      /* 3.11+: its first column, 1-based (UTF-8 bytes); 0 unknown */
    int end_col;  /* 3.11+: its end column, 1-based, exclusive; 0 unknown */
    int nlocals;  /* -1 when locals were not requested/read */
    struct probe_local *locals;
};

struct probe_thread {
    unsigned long ident; /* threading.get_ident() */
    long native_id;      /* kernel tid, -1 if unknown */
    char *name;          /* threading name when read with the GIL, else /proc comm */
    int name_from_threading;
    int holds_gil;       /* holds the main interpreter's GIL (the one the probe takes) */
    int is_main;         /* the main interpreter's main thread */
    long long interp_id; /* its interpreter's id: 0 the main one, else a subinterpreter (whose
                            objects no GIL-holding code of the probe ever touches) */
    int daemon;          /* 1/0, -1 unknown (needs the GIL) */
    int nframes;
    int truncated;              /* 1 if the walk stopped at max_frames or at an unreadable frame */
    struct probe_frame *frames; /* innermost first */
};

/* ---- asyncio tasks (asyncio.c with the GIL; linked in atasks.c) ---- */

/* One frame of a task's coroutine chain. */
struct probe_aframe {
    char *func; /* co_qualname on 3.11+, co_name before */
    char *file;
    int line;
};

/* One asyncio task of any event loop of the main interpreter. */
struct probe_atask {
    uintptr_t addr;      /* the Task object (an id for this snapshot only) */
    char *name;          /* Task.get_name() */
    const char *state;   /* "pending", "done", "cancelled" (static) */
    int running;         /* its coroutine runs now (in its loop's thread's stack) */
    uintptr_t loop;      /* its event loop, 0 unknown */
    unsigned long ident; /* the thread running that loop (loop._thread_id), 0: not running */
    long thread_id;      /* that thread's id as python.threads has it, 0 unknown */
    char *coro;          /* the task's coroutine's qualified name, NULL unknown */
    int nframes;         /* the coroutine chain, innermost first, through cr_await,
                              gi_yieldfrom, ag_await */
    struct probe_aframe *frames;
    int truncated;     /* the chain was longer than the bound */
    uintptr_t waiter;  /* the future it is blocked on (Task._fut_waiter), 0 none */
    char *waiter_type; /* its type ("_asyncio.Future", "_GatheringFuture", ...) */
    int nawaits;       /* the tasks it awaits (the waiter, or a gather's children): */
    int *awaits;       /* indexes into probe_atasks.tasks */
    int nby;           /* the tasks that await it (atasks.c) */
    int *by;
    int cycle; /* 1-based index of the await cycle it is part of, 0 none */
};

struct probe_acycle {
    int n;
    int *tasks; /* indexes, each awaiting the next, the last awaiting the first */
};

struct probe_atasks {
    int read;       /* 1 when the tasks were read (PROBE_SNAP_TASKS with the GIL, or
                      PROBE_SNAP_TASKS_MEM without it) */
    int via_memory; /* 1: read without the GIL (pyrt_asyncio_tasks_mem) */
    int ntasks;
    struct probe_atask *tasks;
    int truncated; /* more tasks than the bound */
    int ncycles;
    struct probe_acycle *cycles;
};

struct probe_snapshot {
    int nthreads;
    struct probe_thread *threads;
    long gil_holder_native_id;  /* -1 when nobody holds it (or unknown); taken with the GIL:
                                  who held it when this thread asked (pyrt_gil_note) */
    char version[32];           /* "3.11.7" of the running interpreter */
    int gc_collecting;          /* 1 while the gc module collects (a finalizer it runs may be
                                  what a thread is doing), 0 not, -1 unknown */
    struct probe_atasks atasks; /* PROBE_SNAP_TASKS */
};

enum {
    PROBE_SNAP_NAMES = 1,     /* thread names/daemon from threading (Requires GIL) */
    PROBE_SNAP_LOCALS = 2,    /* locals with bounded repr (Requires GIL) */
    PROBE_SNAP_MEMLOCALS = 4, /* locals read from memory, simple values only (memlocals.c):
                                 no GIL needed, for when it cannot be had */
    PROBE_SNAP_TASKS = 8,     /* every asyncio task of every event loop (asyncio.c; Requires GIL) */
    PROBE_SNAP_TASKS_MEM = 16, /* the asyncio tasks read without the GIL (asyncio_mem.c, 3.14+:
                                  pending C tasks; elsewhere atasks stays unread) */
};

/* One-time set-up (calibration such as the pthread_t -> tid mapping on 3.8-3.10). Call from
 * the agent thread before the first snapshot. No GIL needed. */
int pyrt_init(struct pb_err *err);
/* The loading thread's half of pyrt_init's pthread_t -> tid calibration (3.8-3.10): it scans
 * its own struct pthread, so that the agent thread's pyrt_init needs no helper thread (whose
 * start waits for a CPU on a busy machine: 4 ms of every injection). Any thread but the
 * agent's; no GIL needed; a no-op where the interpreter keeps native ids itself. */
void pyrt_tid_seed(void);

/* Take a snapshot of every Python thread of every interpreter (the main one's first; a thread
 * running code in a subinterpreter has a thread state there too: its frames there are its own
 * entry). flags: PROBE_SNAP_*; without flags (or with PROBE_SNAP_MEMLOCALS alone) no GIL is needed; with NAMES, LOCALS or TASKS the caller
 * must hold the (main interpreter's) GIL: names are then read from the main interpreter's
 * threading, locals of main-interpreter threads only (a subinterpreter's objects are read
 * fault-proof, never through CPython calls). max_frames bounds each
 * thread's stack. Returns 0 or a negative code with err filled (e.g. Python not initialised). */
int pyrt_snapshot(struct probe_snapshot *s, int flags, int max_frames, struct pb_err *err);
/* The same, without flags, of the one thread whose pyrt_thread_id is id (none in s when there
 * is no such thread): the other threads' frames are not walked nor their names read (a DAP
 * stackTrace of one thread among 64 costs one thread's reads). */
int pyrt_snapshot_thread(struct probe_snapshot *s, long id, int max_frames, struct pb_err *err);

/* A snapshot without PROBE_SNAP_NAMES names each thread as the last snapshot with it did (same
 * ident and native id; name_from_threading 1), else from the OS. 1 when that last snapshot is at
 * most max_age_ms old. Any thread, no GIL. */
int pyrt_names_fresh(int max_age_ms);
/* 1 when every thread of s was in that last snapshot (threads started since: 0). */
int pyrt_names_known(const struct probe_snapshot *s);

/* on=1: before the calling thread asks for the GIL (the GIL worker, gil/worker.c), remember who
 * holds it now, read without the GIL as a GIL-free snapshot reads it. A snapshot this thread
 * then takes with the GIL held reports that thread as the holder (holds_gil,
 * gil_holder_native_id): the one that held the GIL when the probe asked for it, never the
 * probe's own thread. When this thread let the GIL go moments ago and nobody has taken it
 * since (requests back to back), the previous note stands. on=0, with the GIL held, just before
 * releasing it: the note is over. A snapshot of a thread without a note reports the GIL as it
 * is (a caller holding it: itself). Any thread; no GIL for on=1. */
void pyrt_gil_note(int on);

/* The main interpreter's switch interval (sys.getswitchinterval() in microseconds: the field
 * `interval` of its GIL state), for gil/hurry.c to change atomically; NULL when the reader is
 * not set up (pyrt_init failed or not run yet) or the GIL state is unreadable. The address
 * stays valid for the process's life (the main interpreter's GIL state is static). No GIL. */
unsigned long *pyrt_switch_interval(void);

/* A thread's id as every answer gives it (the DAP thread id, python.threads.thread_id): its
 * kernel tid (the ident's low bits when unknown); a subinterpreter's thread state adds
 * interp_id * PROBE_INTERP_ID_STRIDE (above any tid: PID_MAX_LIMIT), since the thread that runs
 * code in a subinterpreter has a thread state in the main interpreter too. Pure. */
#define PROBE_INTERP_ID_STRIDE 4194304L
long pyrt_thread_id(const struct probe_thread *t);

/* asyncio.c: every asyncio task of the main interpreter into *out, read with the GIL without
 * running any Python code of the program's or of asyncio's: the tasks from asyncio's registries
 * (asyncio.tasks._all_tasks on 3.8-3.11, _scheduled_tasks and _eager_tasks on 3.12+, and on
 * 3.14+ the per-thread lists of C tasks), attributes read through C getters and instance dicts
 * only, coroutine frames read from memory (no frame object is created). Then links them
 * (pyrt_atasks_link). 0 or a negative code with err. Requires GIL. */
int pyrt_asyncio_tasks(struct probe_atasks *out, struct pb_err *err);
/* asyncio_mem.c: the pending C tasks of 3.14+'s per-thread lists, read without the GIL (no
 * awaited future: waiter stays 0); before 3.14 an error. 0 or a negative code with err. */
int pyrt_asyncio_tasks_mem(struct probe_atasks *out, struct pb_err *err);
/* atasks.c: fills nby/by and the await cycles (cycle, cycles) from the awaits. 0 or -ENOMEM. */
int pyrt_atasks_link(struct probe_atasks *a);
void pyrt_atasks_free(struct probe_atasks *a);
/* atasks.c: a's frames from the chain fr[0..n) read outermost first (what both readers walk),
 * stored innermost first; the strings move to a. 0, or -ENOMEM with fr's strings freed. */
int pyrt_atask_take_frames(struct probe_atask *a, struct probe_aframe *fr, int n);

/* Free what a snapshot owns (snapshot.c); accepts NULL. pyrt_thread_free releases one
 * thread's contents, for callers that drop threads from a snapshot. */
void pyrt_snapshot_free(struct probe_snapshot *s);
void pyrt_thread_free(struct probe_thread *t);

#endif
