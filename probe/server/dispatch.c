/* SPDX-License-Identifier: MIT */
/* The request table, and running a request from it: on the loop, or deferred with its job on
 * the worker (with the GIL, within the table's timeout) or the task thread, done here once for
 * every request: deferral, the GIL timeout error, the failure tail. Capabilities for
 * `initialize` are derived from the table, so only what is implemented is advertised. */
#include "server.h"
#include "core/core.h"
#include "gil/gil.h"
#include "core/settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Sorted by name (strcmp), for bsearch. Every request has its own file, req/<name>.c (a "/"
 * becomes "_"): a handler answered on the loop, or a job (srv_job_<name>) with where it runs. */
#define A SRV_F_NEEDS_ATTACHED
#define D (SRV_F_NEEDS_ATTACHED | SRV_F_DEBUGGER)
#define LOOP(fn) .handler = srv_req_##fn
#define GIL(fn) .job = &srv_job_##fn, .gil_timeout_ms = core_setting_gil_timeout_ms
#define EVAL(fn) .job = &srv_job_##fn, .gil_timeout_ms = gil_eval_timeout_ms
#define TASK(fn) .job = &srv_job_##fn
const struct srv_command srv_commands[] = {
    {.name = "attach", .flags = SRV_F_PREAUTH, LOOP(attach)},
    {.name = "configurationDone",
     .flags = A,
     LOOP(configurationDone),
     .post = srv_post_configurationDone},
    {.name = "continue", .flags = D, LOOP(continue)},
    {.name = "disconnect", .flags = SRV_F_PREAUTH, LOOP(disconnect)},
    {.name = "evaluate", .flags = A, LOOP(evaluate)},
    {.name = "exceptionInfo", .flags = A, LOOP(exceptionInfo)},
    {.name = "initialize", .flags = SRV_F_PREAUTH, LOOP(initialize), .post = srv_post_initialize},
    {.name = "modules", .flags = A, LOOP(modules)},
    {.name = "next", .flags = D, LOOP(next)},
    {.name = "pause", .flags = D | SRV_F_GIL, GIL(pause)},
    {.name = "probing/comm", .flags = A | SRV_F_GIL, GIL(probing_comm)},
    {.name = "probing/config", .flags = A, LOOP(probing_config)},
    {.name = "probing/crash", .flags = A, LOOP(probing_crash)},
    {.name = "probing/debugger", .flags = A | SRV_F_GIL, GIL(probing_debugger)},
    {.name = "probing/dump",
     .flags = A,
     LOOP(probing_dump)}, /* picks its job: native waits on the task thread */
    {.name = "probing/eval", .flags = A | SRV_F_GIL, EVAL(probing_eval)},
    {.name = "probing/info", .flags = A, LOOP(probing_info)},
    {.name = "probing/interrupt", .flags = A, LOOP(probing_interrupt)},
    {.name = "probing/listen", .flags = A | SRV_F_UNIX_ONLY, LOOP(probing_listen)},
    {.name = "probing/memory", .flags = A | SRV_F_GIL | SRV_F_GIL_FALLBACK, GIL(probing_memory)},
    {.name = "probing/pause", .flags = A | SRV_F_GIL, GIL(probing_pause)},
    {.name = "probing/perf", .flags = A, LOOP(probing_perf)},
    {.name = "probing/query", .flags = A | SRV_F_TASK, TASK(probing_query)},
    {.name = "probing/resume", .flags = A, LOOP(probing_resume)},
    {.name = "probing/torch", .flags = A | SRV_F_GIL, GIL(probing_torch)},
    {.name = "scopes", .flags = A, LOOP(scopes)},
    {.name = "setBreakpoints", .flags = D | SRV_F_GIL, GIL(setBreakpoints)},
    {.name = "setExceptionBreakpoints", .flags = D | SRV_F_GIL, GIL(setExceptionBreakpoints)},
    {.name = "setFunctionBreakpoints", .flags = D | SRV_F_GIL, GIL(setFunctionBreakpoints)},
    {.name = "setVariable", .flags = D | SRV_F_GIL, GIL(setVariable)},
    {.name = "source", .flags = A | SRV_F_GIL, GIL(source)},
    {.name = "stackTrace", .flags = A, LOOP(stackTrace)},
    {.name = "stepIn", .flags = D, LOOP(stepIn)},
    {.name = "stepOut", .flags = D, LOOP(stepOut)},
    {.name = "threads", .flags = A | SRV_F_GIL | SRV_F_GIL_FALLBACK, GIL(threads)},
    {.name = "variables", .flags = A | SRV_F_GIL, GIL(variables)},
};
#undef A
#undef D
#undef LOOP
#undef GIL
#undef EVAL
#undef TASK
const size_t srv_ncommands = sizeof srv_commands / sizeof srv_commands[0];

static int cmp_command(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const struct srv_command *)elem)->name);
}

const struct srv_command *srv_command_find(const char *name)
{
    return bsearch(name, srv_commands, srv_ncommands, sizeof srv_commands[0], cmp_command);
}

/* A deferred job in flight. */
struct job_run {
    const struct srv_job *ops;
    void *job;
    struct srv_pending *p;
    struct srv_session *s; /* a reference of ours: reply may send events */
    int flags, timeout_ms;
};

static void drop_job(const struct srv_job *ops, void *job);

static void job_free(struct job_run *r)
{
    drop_job(r->ops, r->job);
    srv_session_unref(r->s);
    free(r);
}

/* Loop thread: the job ran (gil_rc 0), or could not have the GIL (gil_rc < 0). */
static void job_finish(struct job_run *r, int gil_rc)
{
    struct srv_job_rc *jr = r->job;
    struct srv_reply rep = {.s = r->s, .gil_rc = gil_rc};
    cJSON *body = cJSON_CreateObject();
    int rc;
    srv_debugger_flush();
    if (gil_rc < 0 && !(r->flags & SRV_F_GIL_FALLBACK)) {
        rc = srv_gil_busy_error(gil_rc, r->timeout_ms, &rep.err);
    } else if (gil_rc == 0 && jr->rc < 0) {
        rc = jr->rc;
        rep.err = jr->err;
        rep.long_msg = jr->long_msg;
        jr->long_msg = NULL;
    } else if (!body) {
        rc = pb_err_set(&rep.err, -ENOMEM, "out of memory: no answer could be built");
    } else {
        rc = r->ops->reply(&rep, r->job, body);
    }
    if (rc < 0 && rep.long_msg) {
        cJSON_Delete(body);
        srv_pending_fail_text(r->p, rc, rep.long_msg);
    } else {
        srv_pending_finish(r->p, rc, body, &rep.err);
    }
    free(rep.long_msg);
    job_free(r);
}

static void job_run(void *arg)
{
    struct job_run *r = arg;
    r->ops->run(r->job);
}

static void job_gil_done(void *arg, int gil_rc)
{
    job_finish(arg, gil_rc);
}

static void job_task_done(void *arg)
{
    job_finish(arg, 0);
}

int srv_reply_empty(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    (void)job;
    (void)body;
    return 0;
}

static void drop_job(const struct srv_job *ops, void *job)
{
    if (ops->drop)
        ops->drop(job);
    free(((struct srv_job_rc *)job)->long_msg);
    free(job);
}

int srv_job_submit(struct srv_ctx *c, const struct srv_job *ops, void *job, int flags,
                   int timeout_ms)
{
    struct job_run *r = calloc(1, sizeof *r);
    struct srv_pending *p = r ? srv_ctx_defer(c) : NULL;
    if (!p) {
        free(r);
        drop_job(ops, job);
        return pb_err_set(&c->err, -ENOMEM, "out of memory: '%s' was not run", c->command);
    }
    *r = (struct job_run){
        .ops = ops, .job = job, .p = p, .s = c->s, .flags = flags, .timeout_ms = timeout_ms};
    srv_session_ref(r->s);
    int rc = flags & SRV_F_TASK ? core_task_submit(job_run, job_task_done, r)
                                : gil_submit(job_run, job_gil_done, r, timeout_ms);
    if (rc < 0) {
        struct pb_err err;
        pb_err_set(&err, -ENOMEM, "out of memory: '%s' was not run", c->command);
        srv_pending_finish(p, err.code, NULL, &err);
        job_free(r);
    }
    return SRV_DEFERRED;
}

int srv_command_run(const struct srv_command *cmd, struct srv_ctx *c, const cJSON *args,
                    cJSON *body)
{
    if (!cmd->job) {
        int rc = cmd->handler(c, args, body);
        if (rc != SRV_DEFERRED)
            srv_debugger_flush();
        return rc;
    }
    void *job = calloc(1, cmd->job->size);
    if (!job)
        return pb_err_set(&c->err, -ENOMEM, "out of memory: '%s' was not run", c->command);
    int rc = cmd->job->parse ? cmd->job->parse(c, args, job) : 0;
    if (rc == SRV_JOB_ANSWERED) { /* parse found what run would, without the GIL */
        struct srv_reply rep = {.s = c->s};
        rc = cmd->job->reply(&rep, job, body);
        if (rc < 0)
            c->err = rep.err;
        free(rep.long_msg);
        drop_job(cmd->job, job);
        srv_debugger_flush();
        return rc;
    }
    if (rc < 0) {
        drop_job(cmd->job, job);
        return rc;
    }
    return srv_job_submit(c, cmd->job, job, cmd->flags,
                          cmd->gil_timeout_ms ? cmd->gil_timeout_ms() : 0);
}

/* DAP: Capabilities. A capability is advertised when the request behind it is in the table. */
static const struct {
    const char *capability, *command;
} caps_by_command[] = {
    {"supportsConfigurationDoneRequest", "configurationDone"},
    {"supportsEvaluateForHovers", "evaluate"},
    {"supportsClipboardContext", "evaluate"},
    {"supportsTerminateRequest", "terminate"},
    {"supportsSetVariable", "setVariable"},
    {"supportsFunctionBreakpoints", "setFunctionBreakpoints"},
    {"supportsExceptionInfoRequest", "exceptionInfo"},
    {"supportsCancelRequest", "cancel"},
    {"supportsLoadedSourcesRequest", "loadedSources"},
    {"supportsConditionalBreakpoints", "setBreakpoints"},
    {"supportsHitConditionalBreakpoints", "setBreakpoints"},
    {"supportsLogPoints", "setBreakpoints"},
    {"supportsDelayedStackTraceLoading", "stackTrace"},
    {"supportsModulesRequest", "modules"},
};

cJSON *srv_capabilities(void)
{
    cJSON *caps = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof caps_by_command / sizeof caps_by_command[0]; i++)
        if (srv_command_find(caps_by_command[i].command))
            cJSON_AddBoolToObject(caps, caps_by_command[i].capability, 1);
    if (srv_command_find("setExceptionBreakpoints")) {
        static const struct {
            const char *filter, *label, *description;
            int dflt;
        } filters[] = {
            {"raised", "Raised Exceptions", "Stop where any exception is raised", 0},
            {"uncaught", "Uncaught Exceptions", "Stop when an exception ends a thread", 1},
        };
        cJSON *arr = cJSON_AddArrayToObject(caps, "exceptionBreakpointFilters");
        for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "filter", filters[i].filter);
            cJSON_AddStringToObject(f, "label", filters[i].label);
            cJSON_AddStringToObject(f, "description", filters[i].description);
            cJSON_AddBoolToObject(f, "default", filters[i].dflt);
            cJSON_AddItemToArray(arr, f);
        }
    }
    return caps;
}
