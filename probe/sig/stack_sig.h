/* SPDX-License-Identifier: MIT */
/* One-shot native stacks of other threads (probe-internal; `debug --dump --native`,
 * docs/architecture.md "Native stacks on demand"). The asking thread (the loop) fills a request
 * per thread and queues SIGPROF to it with si_value pointing at the request
 * (rt_tgsigqueueinfo); the sampler's SIGPROF handler (prof_sig.c) hands such a signal to
 * sig_stack_take, which, on the asked thread, unwinds its own interrupted context with the
 * sampler's unwinder (unwind.h: the published module table, the request's own rule cache) and
 * walks its Python frames (pyrt_sig.h) at the same instant, then marks the request done and
 * wakes the asker (futex). The asker waits with one bounded deadline for all of them: a thread
 * that blocks SIGPROF, or never runs, just has no native stack; a request that expired is
 * ignored by a late handler. Nothing here allocates or locks in the handler. */
#ifndef PROBE_STACK_SIG_H
#define PROBE_STACK_SIG_H

#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "pyrt_sig.h"

#define STACK_SIG_NATIVE 128 /* native frames kept per thread */
#define STACK_SIG_PY 256     /* Python frames kept per thread */
#define STACK_SIG_BATCH 32   /* threads asked at once */

/* One thread's answer. */
struct stack_sig_result {
    int tid;
    int answered; /* 0: the thread did not run the handler in time */
    int nnative, npy;
    uintptr_t native[STACK_SIG_NATIVE]; /* innermost first; the first pc exact */
    struct pyrt_sig_frame py[STACK_SIG_PY];
};

/* Async-signal-safe, from the SIGPROF handler: 1 when si is a stack request of ours (taken,
 * or stale and dropped), 0 when it is someone else's signal. */
int sig_stack_take(const siginfo_t *si, ucontext_t *uc);

/* Queues SIGPROF with si_value value (SI_QUEUE) to thread tid of this process: how the sampler
 * pokes a thread in wall mode and how a stack is asked for. 0, or -1 (errno). */
int sig_stack_queue(int tid, void *value);

/* Not in a signal handler; one caller at a time (the loop thread), with the SIGPROF handler
 * installed and the module table published. Asks each of the n threads tids (n <=
 * STACK_SIG_BATCH) for its stacks into out[i] and waits until all answered or timeout_ms
 * passed. Returns how many answered, or -errno when the requests cannot be set up. */
int sig_stack_collect(const int *tids, int n, struct stack_sig_result *out, int timeout_ms);

#endif
