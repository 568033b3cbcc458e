/* SPDX-License-Identifier: MIT */
/* Crash capture (probe-internal; `probing inject --crash`, probing/crash, docs/crash.md): on
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, write the crashing thread's native and Python
 * stacks and every thread's Python stack to a file (setting crash.path), then hand the signal
 * to the handler that was there before, or to the default action. The handler is
 * async-signal-safe (sig/crash_sig.c); arming and disarming run on the loop thread (crash.c). */
#ifndef PROBE_CRASH_H
#define PROBE_CRASH_H

#include <stddef.h>

#include "pb.h"

#define PROBE_CRASH_NSIGS 5

struct probe_crash_status {
    int armed;
    char path[256]; /* where a crash of this process is written */
    /* For each signal of probe_crash_signals: what handled it before we armed ("default",
     * "ignore", "handler"; "" when not armed). */
    char previous[PROBE_CRASH_NSIGS][12];
    int fired;      /* a crash report was written (this process) */
};

/* The signals caught, and their names ("SIGSEGV"...). */
extern const int probe_crash_signals[PROBE_CRASH_NSIGS];
const char *probe_crash_signame(int sig);

/* Install the handlers (idempotent: armed again, it only takes a new crash.path). Returns 0,
 * or a negative code with err filled. Loop thread. */
int probe_crash_arm(struct pb_err *err);
/* Put back every handler that was there before arming, where ours is still the one installed
 * (a handler installed after ours, e.g. faulthandler.enable(), keeps calling ours, which then
 * passes the signal on untouched). Returns 1 if it was armed, 0 if not. Loop thread. */
int probe_crash_disarm(void);
void probe_crash_status_get(struct probe_crash_status *st);

/* ---- internals shared by crash.c and sig/crash_sig.c ---- */
#include <signal.h>
#include <stdatomic.h>

/* What each of probe_crash_signals had before arming (valid while probe_crash_armed). */
extern struct sigaction probe_crash_prev[PROBE_CRASH_NSIGS];
extern atomic_int probe_crash_armed, probe_crash_fired;
/* The report path with "%p" for the pid (filled in by the handler: a fork child writes its
 * own file). Written only while disarmed. */
extern char probe_crash_template[256];
/* The SA_SIGINFO handler (sig/crash_sig.c). Async-signal-safe. */
void probe_crash_on_signal(int sig, siginfo_t *si, void *uc);
/* Expand template's "%p" with pid into buf. Async-signal-safe. */
void probe_crash_path(const char *tmpl, long pid, char *buf, size_t n);

#endif
