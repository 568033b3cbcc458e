/* SPDX-License-Identifier: MIT */
/* Debugger events (stopped, output, thread, continued) travel from whichever thread produced
 * them to the loop through one inbox (core/inbox.h), in order, and go to the sink (the
 * debugging session, which makes DAP JSON of them). A request's completion drains the queue
 * first, so events a request caused (an evaluation's output) reach the client before its
 * response. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "internal.h"
#include "core/core.h"
#include "core/inbox.h"
#include "debugger.h"

struct dbg_event {
    struct probe_dbg_event e; /* text and path point into owned copies */
    char *text, *path;
    struct probe_link link;
};

static struct probe_inbox inbox = {.mu = PTHREAD_MUTEX_INITIALIZER};
static int started;
static probe_dbg_sink sink;
static void *sink_ctx;

void dbg_set_sink(probe_dbg_sink fn, void *ctx)
{
    sink = fn;
    sink_ctx = ctx;
    atomic_store(&dbg_client, fn != NULL);
    if (fn) /* a pending cleanup must spare the new client; no step of an earlier one counts */
        dbg_steps_reset(atomic_fetch_add(&dbg_session_gen, 1) + 1);
    dbg_threads_watch(fn != NULL);
}

static atomic_int forked;

void dbg_fork_child(void)
{
    atomic_store(&forked, 1);
    atomic_store(&dbg_client, 0);
    atomic_store(&dbg_pause_all, 0);
    atomic_store(&dbg_exc_raised, 0);
    atomic_store(&dbg_exc_uncaught, 0);
    started = 0; /* the loop's async handle belongs to the parent */
    core_inbox_forget(&inbox);
    sink = NULL;
}

int dbg_forked(void)
{
    return atomic_load(&forked);
}

static void event_free(struct dbg_event *e)
{
    free(e->text);
    free(e->path);
    free(e);
}

void dbg_emit(const struct probe_dbg_event *ev)
{
    if (atomic_load(&forked))
        return;
    struct dbg_event *e = calloc(1, sizeof *e);
    if (!e)
        return;
    e->e = *ev;
    e->text = ev->text ? strdup(ev->text) : NULL;
    e->path = ev->path ? strdup(ev->path) : NULL;
    if ((ev->text && !e->text) || (ev->path && !e->path)) {
        event_free(e);
        return;
    }
    e->e.text = e->text;
    e->e.path = e->path;
    core_inbox_post(&inbox, &e->link);
}

/* Loop thread: one event to the sink. */
static void deliver(struct probe_link *l)
{
    struct dbg_event *e = PROBE_CONTAINER(l, struct dbg_event, link);
    if (sink)
        sink(sink_ctx, &e->e);
    event_free(e);
}

void dbg_events_drain_all(void)
{
    core_inbox_drain(&inbox);
}

void dbg_events_drain(void)
{
    if (inbox.held == 0) /* requests in flight whose response must come first */
        core_inbox_drain(&inbox);
}

void dbg_events_hold(int delta)
{
    core_inbox_hold(&inbox, delta);
}

void dbg_events_stop(void)
{
    if (!started)
        return;
    core_inbox_close(&inbox);
    started = 0;
}

int dbg_events_start(void)
{
    if (started)
        return 0;
    int rc = core_inbox_init(&inbox, core_agent_loop(), deliver);
    if (rc == 0)
        started = 1;
    return rc;
}
