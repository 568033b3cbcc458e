/* SPDX-License-Identifier: MIT */
/* One-shot native stacks of other threads (probe-internal; `debug --dump --native`,
 * docs/architecture.md "Native stacks on demand"). The asking thread (the loop) fills a request
 * per thread and has SIGPROF sent to the thread from a point where it runs its own code, never
 * inside a system call: a one-shot perf event on its task clock counting user time only, else
 * a one-shot timer on its CPU clock (si_value pointing at the request), else, last, a signal
 * queued to it (rt_tgsigqueueinfo, si_value likewise; sig_stack_ask). The sampler's SIGPROF
 * handler (prof_sig.c) hands such a signal to sig_stack_take, which, on the asked thread, unwinds its own interrupted context with the
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
    int blocked;  /* 1: not answered: asked by event or timer, it then waited in a system
                   * call (the caller reads it there) */
    int nnative, npy;
    uintptr_t native[STACK_SIG_NATIVE]; /* innermost first; the first pc exact */
    struct pyrt_sig_frame py[STACK_SIG_PY];
};

/* Async-signal-safe, from the SIGPROF handler on thread me: 1 when si is a stack request of
 * ours (taken, or stale and dropped), 0 when it is not one. An event's signal whose request is
 * closed may carry a descriptor number that a sampler's event has now: sig_stack_stale, after
 * the sampler's own look, recognises it. */
int sig_stack_take(const siginfo_t *si, ucontext_t *uc, int me);
int sig_stack_stale(const siginfo_t *si);

/* Queues SIGPROF with si_value value (SI_QUEUE) to thread tid of this process: how the sampler
 * pokes a thread in wall mode and how a stack is asked for where events are refused. 0, or -1
 * (errno). */
int sig_stack_queue(int tid, void *value);

/* Not in a signal handler; one caller at a time (the loop thread), with the SIGPROF handler
 * installed and the module table published. Asks thread tid, as request i of a batch
 * (0 <= i < STACK_SIG_BATCH), for its stacks, in the first way the kernel allows of:
 *  - a one-shot perf event on its task clock counting user time only (answers within 10 us of
 *    its CPU time; never raised inside a system call);
 *  - a one-shot timer on its CPU clock (answers at the next tick it runs in; raised as it
 *    returns to its own code where the kernel runs CPU timers from task work: x86-64 since
 *    Linux 5.9);
 *  - unless no_signal, a queued signal, sent right after blocked(tid) (the caller's look at
 *    /proc: > 0 when it waits in a system call) said it does not wait: the window from that
 *    look to the delivery is the one left in which an interruptible wait can be cut short.
 * Returns SIG_STACK_EVENT, SIG_STACK_TIMER or SIG_STACK_SIGNAL (asked), SIG_STACK_BLOCKED (not
 * asked: read it where it waits), -1 (not asked: gone, its request still busy, or no_signal
 * and neither of the first two allowed). */
enum { SIG_STACK_BLOCKED = 1, SIG_STACK_EVENT, SIG_STACK_TIMER, SIG_STACK_SIGNAL };
int sig_stack_ask(int i, int tid, int (*blocked)(int tid), int no_signal);

/* Waits until requests 0..n) of the batch answered or timeout_ms passed, and copies each answer
 * into out[i] (answered 0: no answer, or not asked). A thread asked by event or timer that has
 * not answered is looked at with blocked() every millisecond: one seen waiting in a system
 * call at 4 looks in a row is taken back (out[i].blocked). Every event and timer is gone on return. Returns how many
 * answered. */
int sig_stack_wait(int n, struct stack_sig_result *out, int timeout_ms, int (*blocked)(int tid));

/* Fork handlers (pthread_atfork, probe/entry.c through prof_native_fork_*): prepare waits for
 * an event being opened or closed to be recorded; the child's copies of the requests' events
 * are closed there (the events stay the parent's), every request idle. */
void sig_stack_fork_prepare(void);
void sig_stack_fork_parent(void);
void sig_stack_fork_child(void); /* always, in the child: the lock made free again */

#endif
