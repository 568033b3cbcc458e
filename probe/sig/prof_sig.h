/* SPDX-License-Identifier: MIT */
/* The sampler's signal side (prof_sig.c; `perf --cc`, docs/perf.md): per-thread slots with
 * preallocated rings of raw records, the SIGPROF handler that fills them (async-signal-safe: no
 * allocation, lock or symbolisation) and the CPU-time timers. The drain thread (prof/) arms
 * the slots and drains the rings; the handler knows nothing of it. */
#ifndef PROBE_PROF_SIG_H
#define PROBE_PROF_SIG_H

#include <stdint.h>
#include <time.h>

#include "pb.h"
#include "pyrt_sig.h"

#define PROF_MAX_NATIVE 64
#define PROF_MAX_PY 96
#define PROF_RING 32        /* records per thread between drains */
#define PROF_MAX_SLOTS 1024 /* threads sampled at once */

struct prof_raw {
    double ts;
    int tid;
    int on_cpu;
    int gil; /* 1: held the main interpreter's GIL, 0: did not, -1: unknown */
    int nnative;
    int npy;
    uintptr_t sp, self; /* the interrupted stack pointer and pthread_self() (0: unknown) */
    uintptr_t native[PROF_MAX_NATIVE]; /* innermost first: pcs (the first is exact) */
    struct pyrt_sig_frame py[PROF_MAX_PY];
};

/* The CPU-time clock of thread tid of this process (the kernel's encoding, CPUCLOCK_PERTHREAD |
 * CPUCLOCK_SCHED, as glibc's pthread_getcpuclockid builds it from a pthread_t). Inline: the
 * signal handler uses it too. */
static inline clockid_t sig_thread_cpu_clock(long tid)
{
    return (clockid_t)((~(unsigned)tid << 3) | 6u);
}

/* What interrupts each sampled thread by its own CPU time (prof_sig.c's opening comment). */
enum { PROF_CLOCK_AUTO, PROF_CLOCK_EVENTS, PROF_CLOCK_TIMERS };

struct prof_slot;
/* Before the slots are armed (loop thread, once per start): events when want is EVENTS, or AUTO
 * at a rate above half the kernel's tick rate (or where CPU timers are not run from task work), and the kernel lets this
 * process count its threads' task clock, else timers. 0, or -errno of perf_event_open (timers
 * chosen; the caller decides whether AUTO may fall back). */
int sig_prof_clock_choose(int want, int rate);
/* This run's clock (PROF_CLOCK_EVENTS or TIMERS); *user_only: events count user time only
 * (kernel.perf_event_paranoid 2: a period ends only while the thread runs its own code). */
int sig_prof_clock(int *user_only);
int sig_prof_install(struct pb_err *err); /* the handler (keeps the old one) */
void sig_prof_uninstall(void);            /* flush pending SIGPROF, restore the old one */
int sig_prof_installed(void);             /* 1 while our handler is installed (loop thread) */
void sig_prof_set_running(int on);
int sig_prof_quiet(void); /* 1 when no SIGPROF handler of ours runs at this instant */
struct prof_slot *sig_prof_slot_new(int tid); /* ring allocated; NULL when full */
int sig_prof_slot_arm(struct prof_slot *s, int rate, struct pb_err *err); /* cpu mode clock */
void sig_prof_slot_retire(struct prof_slot *s); /* clock stopped; slot freed after a drain */
int sig_prof_slot_tid(const struct prof_slot *s);
struct prof_slot *sig_prof_slot_find(int tid);
/* Wall mode (the drain thread): before the first slot, the run's event budget; then, per slot,
 * how its pokes will reach the thread: a user-time perf event allowed one overflow per poke,
 * else a one-shot timer on its CPU clock (each raises SIGPROF where the thread runs its own
 * code, never in a wait it is entering), else a queued signal. */
void sig_prof_pokes_prepare(void);
/* Not in a handler: a perf event on thread tid's task clock (period_ns of its CPU time, user
 * time only when exclude_kernel), disabled, each overflow sending SIGPROF to tid (F_SETSIG,
 * F_SETOWN_EX, O_ASYNC): the sampler's, a wall-mode poke's, a one-shot stack request's
 * (stack_sig.c). The descriptor, or -1 (errno). */
int sig_prof_event_open(int tid, long long period_ns, int exclude_kernel);
void sig_prof_slot_arm_poke(struct prof_slot *s);
/* Wall mode: asks an on-CPU thread for a sample. 0, or -1 (not poked: the last poke still
 * unanswered, the thread read by the caller instead; or the thread gone). */
int sig_prof_slot_poke(struct prof_slot *s, int wall);
/* Each queued record: fn(rec, arg); then frees retired slots. Returns records drained. */
int sig_prof_slots_drain(void (*fn)(const struct prof_raw *r, void *arg), void *arg);
/* Visit every live slot's tid. */
void sig_prof_slots_each(void (*fn)(struct prof_slot *s, void *arg), void *arg);
void sig_prof_slots_clear(void);   /* at stop: every timer deleted, every slot retired */
void sig_prof_slots_release(void); /* after the last drain at stop: the spare mappings unmapped */
void sig_prof_slots_reset_totals(void); /* a new start: counters of freed slots back to 0 */
/* Counters: missed (expected - delivered by each thread's CPU time), ring drops, handler CPU. */
void sig_prof_slots_counters(int rate, long long *missed, long long *lost, double *handler_s,
                             int *armed);
void sig_prof_fork_child(void); /* async-signal-safe */
/* The drain thread sleeps in sig_prof_wait until ns pass or a handler filled half of a ring
 * (a futex wake: async-signal-safe, so the drain wakes when there is work, not per sample);
 * sig_prof_wake wakes it (stop). */
void sig_prof_wait(long long ns);
void sig_prof_wake(void);

#endif
