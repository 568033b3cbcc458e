/* SPDX-License-Identifier: MIT */
/* Hurrying the GIL (gil.h): while a GIL worker waits to take the GIL, the interpreter's switch
 * interval is lowered to HURRY_US, and put back as soon as the worker holds it, its wait is
 * given up, or its budget (PROBE_HURRY_BUDGET_MS) is spent. A thread waiting in CPython's
 * take_gil re-reads the interval at each timed wait and asks the holder to drop the GIL when one
 * passes without a switch, so a thread computing in Python lets our worker in after about
 * 0.1 ms instead of the default 5 ms. The program's own setting is never lost: lowered only by a
 * compare-and-swap from the value read, put back only by a compare-and-swap from ours (a value
 * the program set meanwhile stays). Several waiting workers share one lowering (the first
 * lowers, the last restores). docs/architecture.md "Hurrying the GIL" says why this is safe and
 * what a user can observe. No GIL needed (any thread). */
#include <pthread.h>
#include <stdatomic.h>

#include "pyrt/pyrt.h"
#include "gil.h"

#define HURRY_US 100UL           /* the interval while we wait (sys.setswitchinterval(1e-4)) */
#define SANE_MAX_US 1000000000UL /* above 1000 s the field is taken for something else */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int waiters;             /* tokens held (under mu) */
static unsigned long *interval; /* the field, once found (under mu) */
/* The program's value while the interval is lowered by us, else 0. Atomic so that a fork child
 * reads it without the lock (a thread of the parent may have held mu). */
static atomic_ulong saved;

static unsigned long load(const unsigned long *p)
{
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* *p from `from` to `to` if it still holds `from`. */
static int swap(unsigned long *p, unsigned long from, unsigned long to)
{
    return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* mu held (or the only thread left, in a fork child: then log is 0). */
static void restore_locked(int log)
{
    unsigned long v = atomic_exchange(&saved, 0);
    if (!v || !interval)
        return;
    if (swap(interval, HURRY_US, v)) {
        if (log)
            PB_LOG(PB_LOG_DEBUG, "switch interval restored to %lu us", v);
    } else if (log) { /* the program set its own value meanwhile: it stays */
        PB_LOG(PB_LOG_DEBUG, "switch interval left at the program's %lu us", load(interval));
    }
}

void gil_hurry_begin(struct probe_hurry *h)
{
    pthread_mutex_lock(&mu);
    if (!h->held && !h->over) {
        h->held = h->begun = 1;
        if (waiters++ == 0) {
            if (!interval)
                interval = pyrt_switch_interval();
            unsigned long v = interval ? load(interval) : 0;
            /* 0 or absurd: not the field we think it is; at or below ours: nothing to gain. */
            if (v > HURRY_US && v <= SANE_MAX_US) {
                atomic_store(&saved, v); /* before the swap: a fork child must see it */
                if (swap(interval, v, HURRY_US))
                    PB_LOG(PB_LOG_DEBUG,
                           "switch interval lowered from %lu to %lu us while a "
                           "GIL worker waits",
                           v, HURRY_US);
                else
                    atomic_store(&saved, 0); /* the program changed it just now: leave it */
            }
        }
    }
    pthread_mutex_unlock(&mu);
}

static void end(struct probe_hurry *h, int over)
{
    pthread_mutex_lock(&mu);
    h->over |= over;
    if (h->held) {
        h->held = 0;
        if (--waiters == 0)
            restore_locked(1);
    }
    pthread_mutex_unlock(&mu);
}

void gil_hurry_end(struct probe_hurry *h)
{
    end(h, 0);
}

void gil_hurry_stop(struct probe_hurry *h)
{
    end(h, 1);
}

int gil_hurry_expire(struct probe_hurry *h)
{
    pthread_mutex_lock(&mu);
    int begun = h->begun;
    pthread_mutex_unlock(&mu);
    if (begun)
        end(h, 1);
    return begun;
}

void gil_hurry_fork_child(void)
{
    /* The child has none of our waiting workers: its interval is the program's again. */
    restore_locked(0);
    waiters = 0;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    mu = fresh;
}
