/* SPDX-License-Identifier: MIT */
/* The fake probe's sampler (probe/prof/prof.h) for dap/ unit tests and fuzz replays: start records
 * the options and refuses a second start as the real one does; stop reports whether it ran;
 * counters are fixed figures (samples 42, threads 2). No signals, no timers. */
#include <string.h>

#include "prof/prof.h"

static int running;
static struct prof_opts last;

int prof_start(const struct prof_opts *o, struct pb_err *err)
{
    if (running)
        return pb_err_set(err, PB_ESTATE,
                          "sampling is already running (%s mode, %d Hz): stop "
                          "it first with 'probing perf --stop'",
                          last.mode == PROF_WALL ? "wall" : "cpu", last.rate);
    last = *o;
    running = 1;
    return 0;
}

void prof_status_get(struct prof_status *st)
{
    memset(st, 0, sizeof *st);
    st->running = running;
    st->mode = last.mode;
    st->rate = last.rate;
    st->samples = 42;
    st->threads = 2;
    st->stacks = 5;
}

int prof_stop(struct prof_status *st)
{
    int was = running;
    running = 0;
    prof_status_get(st);
    return was;
}

/* Native stacks (debug --dump --native): the fake process has no threads to ask; every thread
 * is reported as not answering. */
int prof_native_stacks(const long *tids, int n, int all, struct prof_nstack *out,
                       struct pb_err *err)
{
    (void)all;
    (void)err;
    memset(out, 0, (size_t)n * sizeof *out);
    for (int i = 0; i < n; i++)
        out[i].tid = tids[i];
    return 0;
}

void prof_nstack_free(struct prof_nstack *s)
{
    (void)s;
}

/* The fake process has no threads but its Python ones. */
int prof_native_others(const long *skip, int nskip, long *tids, char (*names)[PROF_COMM], int max,
                       int *more, struct pb_err *err)
{
    (void)skip, (void)nskip, (void)tids, (void)names, (void)max, (void)err;
    *more = 0;
    return 0;
}
