/* SPDX-License-Identifier: MIT */
/* The debugger's seat: one debugging client at a time, whose session receives the debugger's
 * events (made DAP JSON here, dbgjson.c). Requests marked SRV_F_DEBUGGER in the table are for
 * that client only (the dispatcher checks srv_session_is_debugger). Also what the debugger's
 * requests share: the thread argument, a step. */
#include "debugger/debugger.h"
#include "server/server.h"

static struct srv_session *seat;

static const char *const event_names[] = {
    [PROBE_DBG_EV_STOPPED] = "stopped",
    [PROBE_DBG_EV_CONTINUED] = "continued",
    [PROBE_DBG_EV_OUTPUT] = "output",
    [PROBE_DBG_EV_THREAD] = "thread",
};

static void sink(void *ctx, const struct probe_dbg_event *e)
{
    srv_session_event(ctx, event_names[e->kind], srv_json_dbg_event(e));
}

int srv_debugger_claim(struct srv_session *s, struct pb_err *err)
{
    if (seat && seat != s)
        return pb_err_set(err, PB_ESTATE,
                          "another debugging client is attached to this process (one at a "
                          "time): disconnect it first; CLI commands keep working beside it");
    if (!seat) {
        seat = s;
        srv_session_ref(s);
        dbg_set_sink(sink, s);
    }
    return 0;
}

int srv_session_is_debugger(const struct srv_session *s)
{
    return s == seat;
}

void srv_debugger_release(struct srv_session *s)
{
    if (!seat || seat != s)
        return;
    dbg_set_sink(NULL, NULL);
    seat = NULL;
    dbg_detach();
    srv_session_unref(s);
}

void srv_debugger_flush(void)
{
    dbg_events_drain();
}

void srv_post_configurationDone(struct srv_session *s)
{
    if (s == seat)
        dbg_configured();
}

int srv_thread_arg(struct srv_ctx *c, const cJSON *args, long *tid)
{
    long long v = -1;
    int rc = dap_arg_int(args, "threadId", &v, &c->err);
    if (rc < 0)
        return rc;
    if (rc > 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.threadId: expected integer");
    *tid = (long)v;
    return 0;
}

int srv_step_request(struct srv_ctx *c, const cJSON *args, int mode)
{
    long tid = 0;
    int rc = srv_thread_arg(c, args, &tid);
    return rc < 0 ? rc : dbg_step_thread(tid, mode, &c->err);
}
