/* SPDX-License-Identifier: MIT */
/* The GIL side (probe/gil/): the GIL workers that run jobs under the GIL with a timeout
 * (worker.c), evaluation with captured output (eval.c), memory figures (memory.c). A job runs
 * on a worker thread with the GIL held; submitting is for the loop thread (gil_call: any
 * other probe thread). The C-API helpers behind them are in pyhelper.h. */
#ifndef PROBE_GIL_H
#define PROBE_GIL_H

#include <uv.h>

#include "pb.h"

/* worker.c: the GIL workers (see its header comment). At most PROBE_MAX_WORKERS threads: one
 * taking jobs, the others retired and stuck in a call that has not returned yet. */
#define PROBE_MAX_WORKERS 4
int gil_worker_start(uv_loop_t *loop, struct pb_err *err);
/* Undoes gil_worker_start (a start that failed later, before the loop ran): the worker ends
 * on its own (detached), its completions' handle is closed. */
void gil_worker_stop(void);
/* Before the loop runs: while pred() answers non-zero (the debugger holds the target stopped:
 * the GIL is free), the worker and the loop look for the next job and for its completion for a
 * fraction of a millisecond before they sleep (see worker.c). Called from any probe thread. */
void gil_worker_poll_when(int (*pred)(void));
/* Worker threads alive (taking jobs or retired), for tests and the log. */
int gil_worker_count(void);

/* Run fn(arg) on the worker thread with the GIL held; then done(arg, 0) on the loop thread. If
 * the GIL cannot be had within timeout_ms, done(arg, PB_ETIMEDOUT) runs instead and fn never
 * runs; if Python is not initialised or is finalising, done(arg, PB_ENOGIL). arg must stay
 * valid until done is called. Returns 0 or -ENOMEM (then nothing is called). */
typedef void (*probe_gil_fn)(void *arg);
typedef void (*probe_gil_done)(void *arg, int rc);
int gil_submit(probe_gil_fn fn, probe_gil_done done, void *arg, int timeout_ms);

/* From any thread other than the loop and the worker (e.g. the task thread): run fn(arg) on
 * the worker with the GIL held and wait for it, at most timeout_ms for the GIL. Returns 0 when
 * fn ran, PB_ETIMEDOUT (the GIL was not had in time; fn will never run) or PB_ENOGIL. */
int gil_call(probe_gil_fn fn, void *arg, int timeout_ms);

/* The pthread id of the worker taking jobs now (0 if none). */
unsigned long gil_worker_ident(void);
/* Whether ident is one of the probe's GIL workers (the active one or one retired while stuck in
 * a call), so snapshots and the debugger can leave them out. Any thread. */
int gil_worker_owns(unsigned long ident);
/* When a worker is busy running a job (the active one, or the one with pthread id holder if it
 * holds the GIL), fills buf with "the probe's evaluator is busy with WHAT (for N s...)" and
 * returns 1; else 0. Any thread. */
int gil_worker_busy_text(unsigned long holder, char *buf, size_t n);
/* On a worker running a job: what it does, for gil_worker_busy_text ("evaluating `x`"). */
void gil_worker_activity(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What to tell a user after gil_worker_busy_text. */
#define PROBE_BUSY_HINT \
    "interrupt it with 'probing -p PID eval --interrupt', or end what it waits for"

/* ---- hurry.c: the switch interval lowered while a worker waits for the GIL ---- */
/* One job's token: held while its worker waits with the interval lowered; over once the job's
 * hurry is spent. Zeroed with the job; guarded inside hurry.c. */
struct probe_hurry {
    int held, over, begun;
};
/* A job's worker waits with the interval lowered for at most about this long (its timer checks
 * every PROBE_HURRY_BUDGET_MS whether the wait has begun, and ends it at the next check): a
 * holder computing in Python drops the GIL within a fraction of a millisecond, one that does
 * not (a C call holding it) is not hurried by a lower interval, and its waiters would only
 * wake more often. */
#define PROBE_HURRY_BUDGET_MS 50
/* Before waiting for the GIL: take h's token (nothing when held or over); the first token lowers
 * the interpreter's switch interval so that a thread computing in Python drops the GIL sooner.
 * gil_hurry_end gives it back once the GIL is ours; gil_hurry_stop also when the wait is
 * given up or its budget spent (no later begin takes it again). The last token puts the
 * program's value back. Nothing happens when the interval cannot be found or looks wrong. Any
 * thread, no GIL. */
void gil_hurry_begin(struct probe_hurry *h);
void gil_hurry_end(struct probe_hurry *h);
void gil_hurry_stop(struct probe_hurry *h);
/* A job's timer, every PROBE_HURRY_BUDGET_MS: 0 while its wait has not begun (queued behind
 * another job); once it has, stops the hurry and returns 1. */
int gil_hurry_expire(struct probe_hurry *h);
/* pthread_atfork child: nothing is lowered in a fork child (none of our workers waits there). */
void gil_hurry_fork_child(void);

/* ---- eval (eval.c; in a stopped frame, with references: dbg_eval_run in
 * debugger/debugger.h): see docs/protocol.md probing/eval and evaluate ---- */
enum {
    PROBE_EVAL_STATEMENTS = 0, /* statements; the value of a last expression is the result */
    PROBE_EVAL_EXPRESSION = 1, /* one expression only (watch, hover) */
    PROBE_EVAL_CHECK = 2,      /* only decide whether the input is complete (codeop) */
};
#define PROBE_EVAL_MAIN (-1LL) /* frame_id of dbg_eval_run: __main__'s globals */

struct probe_eval_chunk {
    int is_stderr;
    char *text;
};

/* What an evaluation produced. Owns every string; gil_eval_result_free() releases them. */
struct probe_eval_result {
    char *value;     /* repr of the result; NULL for None or statements */
    char *type;      /* the result's type name, with value */
    char *exc_type;  /* NULL unless the code raised */
    char *traceback; /* formatted traceback (without the probe's frames), with exc_type */
    int complete;    /* PROBE_EVAL_CHECK: 1 when the input is a complete statement */
    int nchunks;
    struct probe_eval_chunk *chunks; /* what the evaluating thread wrote, in order */
    int output_truncated;
    /* With refs: the result's variablesReference (0 when it has no children) and its counts
     * of indexed and named children (0 when unknown or not relevant). */
    long long var_ref, indexed, named;
};

void gil_eval_result_free(struct probe_eval_result *r);
/* Raise KeyboardInterrupt in the running evaluation (only in the worker's thread). Returns 1 if
 * one was running and the interrupt is on its way, 0 if none was running. Any thread; no GIL. */
int gil_eval_interrupt(void);
/* The system call a running evaluation waits in (native code, where KeyboardInterrupt waits
 * until the call returns; a futex wait, the GIL's or a lock's, not counted), or -1 (none
 * running, or running code). Any thread; no GIL; one read of /proc, no waiting. */
long gil_eval_native_wait(void);
/* The GIL timeout for evaluations (setting eval.timeout_ms). */
int gil_eval_timeout_ms(void);

/* ---- memory (memory.c) ---- */
struct cJSON;
/* Adds "process" (from /proc/self/status, bytes) to into. No GIL needed. */
int gil_memory_proc(struct cJSON *into, struct pb_err *err);
/* Adds "objects", "gc", "tracemalloc", "cuda" to into; trace is NULL, "start" or "stop".
 * Requires GIL (worker thread). */
int gil_memory_python(struct cJSON *into, int top, const char *trace, const char *snapshot,
                      struct pb_err *err);

#endif
