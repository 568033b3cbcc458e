/* SPDX-License-Identifier: MIT */
/* The fake probe's crash capture for dap/ unit tests and fuzz replays: arm/disarm flip a flag
 * and report a fixed path; no signal handler is ever installed. */
#include <signal.h>
#include <string.h>

#include "crash/crash.h"

const int probe_crash_signals[PROBE_CRASH_NSIGS] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static int armed;

const char *sig_crash_signame(int sig)
{
    return sig == SIGSEGV   ? "SIGSEGV"
           : sig == SIGBUS  ? "SIGBUS"
           : sig == SIGILL  ? "SIGILL"
           : sig == SIGFPE  ? "SIGFPE"
           : sig == SIGABRT ? "SIGABRT"
                            : "signal";
}

int crash_arm(struct pb_err *err)
{
    (void)err;
    armed = 1;
    return 0;
}

int crash_disarm(void)
{
    int was = armed;
    armed = 0;
    return was;
}

void crash_status_get(struct probe_crash_status *st)
{
    memset(st, 0, sizeof *st);
    st->armed = armed;
    strcpy(st->path, "/tmp/probing-0/crash-1.txt");
    for (int i = 0; armed && i < PROBE_CRASH_NSIGS; i++)
        strcpy(st->previous[i], "default");
}
