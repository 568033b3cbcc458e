/* SPDX-License-Identifier: MIT */
/* Crash capture, arming side (crash.h): installs the async-signal-safe handler of sig/crash_sig.c
 * for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT with SA_SIGINFO|SA_ONSTACK (a thread with an
 * alternate stack, such as the one faulthandler gives the main thread, survives a stack
 * overflow), saving what was there to chain to it. Before arming it warms up what the handler
 * uses (pyrt_sig's reads) so the handler does no first-time work. Disarming
 * and unloading put every previous handler back where ours is still installed. */

#include "crash.h"
#include "core/core.h"
#include "sig/pyrt_sig.h"
#include "core/settings.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The crash.path setting, or <rundir>/crash-%p.txt. */
static int template_get(char *buf, size_t n, struct pb_err *err)
{
    char set[240];
    core_setting_text("crash.path", set, sizeof set);
    if (set[0]) {
        pb_strlcpy(buf, set, n);
        return 0;
    }
    char dir[200];
    int rc = core_rundir_path(dir, sizeof dir, err);
    if (rc < 0)
        return rc;
    snprintf(buf, n, "%s/crash-%%p.txt", dir);
    return 0;
}

/* Make the handler's reads ready outside any handler (pyrt_sig's one-time probe). The native
 * unwinder (sig/unwind.h) needs no set-up: it finds modules through /proc/self/maps at the crash. */
static void warm_up(void)
{
    sig_pyrt_prepare();
}

static int ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == sig_crash_on_signal;
}

int crash_arm(struct pb_err *err)
{
    char tmpl[256];
    int rc = template_get(tmpl, sizeof tmpl, err);
    if (rc < 0)
        return rc;
    if (tmpl[0] != '/') /* a relative path would follow the target's working directory */
        return pb_err_set(err, PB_EBADARG, "crash.path '%s': expected an absolute path", tmpl);
    if (atomic_load(&probe_crash_armed)) {
        /* The handler may read the template now: keep the old one rather than race. */
        if (strcmp(tmpl, probe_crash_template) != 0)
            PB_LOG(PB_LOG_WARN, "crash capture already armed with %s; disarm to change it",
                   probe_crash_template);
        return 0;
    }
    pb_strlcpy(probe_crash_template, tmpl, sizeof probe_crash_template);
    pb_strlcpy(probe_crash_python, core_info_get()->python_version, sizeof probe_crash_python);
    warm_up();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sig_crash_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++)
        sigaddset(&sa.sa_mask, probe_crash_signals[i]);
    atomic_store(&probe_crash_fired, 0);
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(probe_crash_signals[i], NULL, &cur) < 0 || ours(&cur))
            continue; /* still ours from an earlier arming: keep its saved previous */
        probe_crash_prev[i] = cur;
        sigaction(probe_crash_signals[i], &sa, NULL);
    }
    atomic_store(&probe_crash_armed, 1);
    PB_LOG(PB_LOG_INFO, "crash capture armed: %s", probe_crash_template);
    return 0;
}

int crash_disarm(void)
{
    if (!atomic_load(&probe_crash_armed))
        return 0;
    atomic_store(&probe_crash_armed, 0);
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++) {
        struct sigaction cur;
        if (sigaction(probe_crash_signals[i], NULL, &cur) < 0)
            continue;
        if (ours(&cur))
            sigaction(probe_crash_signals[i], &probe_crash_prev[i], NULL);
        else
            PB_LOG(PB_LOG_WARN,
                   "%s: a handler installed after ours stays (it chains to ours, "
                   "which now passes the signal on)",
                   sig_crash_signame(probe_crash_signals[i]));
    }
    PB_LOG(PB_LOG_INFO, "crash capture disarmed");
    return 1;
}

void crash_status_get(struct probe_crash_status *st)
{
    memset(st, 0, sizeof *st);
    st->armed = atomic_load(&probe_crash_armed);
    st->fired = atomic_load(&probe_crash_fired);
    char tmpl[256];
    struct pb_err err = {0};
    if (st->armed)
        pb_strlcpy(tmpl, probe_crash_template, sizeof tmpl);
    else if (template_get(tmpl, sizeof tmpl, &err) < 0)
        tmpl[0] = '\0';
    sig_crash_path(tmpl, (long)getpid(), st->path, sizeof st->path);
    for (int i = 0; st->armed && i < PROBE_CRASH_NSIGS; i++) {
        const struct sigaction *p = &probe_crash_prev[i];
        const char *what = (p->sa_flags & SA_SIGINFO) ? "handler"
                           : p->sa_handler == SIG_DFL ? "default"
                           : p->sa_handler == SIG_IGN ? "ignore"
                                                      : "handler";
        pb_strlcpy(st->previous[i], what, sizeof st->previous[i]);
    }
}

/* Unloading the library must leave no handler of ours behind. */
__attribute__((destructor)) static void crash_unload(void)
{
    crash_disarm();
}
