/* SPDX-License-Identifier: MIT */
/* The crash handler's side of crash capture (probe-internal; crash/crash.h arms it): the
 * signals it catches, the state it runs on, and the handler. Async-signal-safe throughout.
 * The dependency is one-way: crash/crash.c fills the settings here (report path, Python
 * version) while disarmed, installs the handler and reads what it records (previous handlers,
 * fired); nothing here calls back into crash/ or anything above sig/. */
#ifndef PROBE_SIG_CRASH_SIG_H
#define PROBE_SIG_CRASH_SIG_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#define PROBE_CRASH_NSIGS 5

/* The signals caught, and their names ("SIGSEGV"...). */
extern const int probe_crash_signals[PROBE_CRASH_NSIGS];
const char *sig_crash_signame(int sig);

/* What each of probe_crash_signals had before arming (valid while probe_crash_armed). */
extern struct sigaction probe_crash_prev[PROBE_CRASH_NSIGS];
/* Armed (the handler writes a report), fired (a report was written). */
extern atomic_int probe_crash_armed, probe_crash_fired;
/* The report path with "%p" for the pid (filled in by the handler: a fork child writes its
 * own file), and the interpreter's version for the report's header. Written only while
 * disarmed. */
extern char probe_crash_template[256];
extern char probe_crash_python[32];

/* The SA_SIGINFO handler. Async-signal-safe. */
void sig_crash_on_signal(int sig, siginfo_t *si, void *uc);
/* Expand template's "%p" with pid into buf. Async-signal-safe. */
void sig_crash_path(const char *tmpl, long pid, char *buf, size_t n);

#endif
