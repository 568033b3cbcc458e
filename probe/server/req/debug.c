/* SPDX-License-Identifier: MIT */
/* The debugger's requests (pause, continue, next, stepIn, stepOut, setBreakpoints,
 * setFunctionBreakpoints, setExceptionBreakpoints, exceptionInfo, scopes, variables,
 * setVariable, source, probing/pause, probing/resume) are served by the probe's debugger
 * (debugger/debugger.h); this file forwards them as deferred requests, and keeps the debugger's seat:
 * one debugging client at a time, whose session receives the debugger's events. */
#include "debugger/debugger.h"
#include "server/server.h"

static struct dap_session *seat;

static void sink(void *ctx, const char *event, cJSON *body)
{
    dap_session_event(ctx, event, body);
}

int dap_debugger_claim(struct dap_session *s, struct pb_err *err)
{
    if (seat && seat != s)
        return pb_err_set(err, PB_ESTATE,
                          "another debugging client is attached to this process (one at a "
                          "time): disconnect it first; CLI commands keep working beside it");
    if (!seat) {
        seat = s;
        dap_session_ref(s);
        probe_dbg_set_sink(sink, s);
    }
    return 0;
}

int dap_session_is_debugger(const struct dap_session *s)
{
    return s == seat;
}

void dap_debugger_release(struct dap_session *s)
{
    if (!seat || seat != s)
        return;
    probe_dbg_set_sink(NULL, NULL);
    seat = NULL;
    probe_dbg_detach();
    dap_session_unref(s);
}

static void done(void *arg, int rc, cJSON *body, const struct pb_err *err, const char *long_msg)
{
    struct dap_pending *p = arg;
    if (rc < 0 && long_msg) {
        cJSON_Delete(body);
        dap_pending_fail_text(p, rc, long_msg);
    } else {
        dap_pending_finish(p, rc, body, err);
    }
}

int dap_req_debug(struct dap_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    struct dap_pending *p = dap_ctx_defer(c);
    if (!p)
        return pb_err_set(&c->err, PB_EUNKNOWN, "out of memory");
    if (probe_dbg_request(c->command, args, done, p, &c->err) < 0)
        dap_pending_finish(p, c->err.code, NULL, &c->err);
    return DAP_DEFERRED;
}

void dap_post_configurationDone(struct dap_session *s)
{
    if (s == seat)
        probe_dbg_configured();
}
