/* SPDX-License-Identifier: MIT */
/* Crash capture (probe-internal; `probing inject --crash`, probing/crash, docs/crash.md): on
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, write the crashing thread's native and Python
 * stacks and every thread's Python stack to a file (setting crash.path), then hand the signal
 * to the handler that was there before, or to the default action. The handler is
 * async-signal-safe (sig/crash_sig.c); arming and disarming run on the loop thread (crash.c),
 * which depends on the handler's side (sig/crash_sig.h), never the other way. */
#ifndef PROBE_CRASH_H
#define PROBE_CRASH_H

#include <stddef.h>

#include "pb.h"
#include "sig/crash_sig.h" /* the signals, and the handler's state this side fills and reads */

struct probe_crash_status {
    int armed;
    char path[256]; /* where a crash of this process is written */
    /* For each signal of probe_crash_signals: what handled it before we armed ("default",
     * "ignore", "handler"; "" when not armed). */
    char previous[PROBE_CRASH_NSIGS][12];
    int fired; /* a crash report was written (this process) */
};

/* Install the handlers (idempotent: armed again, it only takes a new crash.path). Returns 0,
 * or a negative code with err filled. Loop thread. */
int crash_arm(struct pb_err *err);
/* Put back every handler that was there before arming, where ours is still the one installed
 * (a handler installed after ours, e.g. faulthandler.enable(), keeps calling ours, which then
 * passes the signal on untouched). Returns 1 if it was armed, 0 if not. Loop thread. */
int crash_disarm(void);
void crash_status_get(struct probe_crash_status *st);

#endif
