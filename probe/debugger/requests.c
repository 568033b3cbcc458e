/* SPDX-License-Identifier: MIT */
/* The debugger's requests. Each runs either on the loop (resuming, stepping, exceptionInfo:
 * only the stop records and a condition variable are involved, so they answer even while a C
 * extension holds the GIL) or on the worker with the GIL (anything touching Python objects),
 * through one table. Also what happens when the debugging client arrives, configures, and
 * leaves. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "core/core.h"


typedef int (*dbg_fn)(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);

/* ---- under the GIL ---- */

static int do_pause(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    (void)args;
    (void)body;
    (void)lm;
    atomic_store(&dbg_pause_all, 1);
    return dbg_hooks_pause_all(err);
}

static int do_hold(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(args, "hold");
    if (h && !cJSON_IsBool(h))
        return pb_err_set(err, PB_EBADARG, "arguments.hold: expected boolean");
    dbg_hold(!h || cJSON_IsTrue(h));
    return do_pause(args, body, err, lm);
}

/* probing/debugger: what the debugger has in place, read from the interpreter. */
static int do_state(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    (void)args;
    (void)err;
    (void)lm;
    cJSON_AddBoolToObject(body, "stopped", probe_dbg_stopped());
    cJSON_AddNumberToObject(body, "breakpoints", dbg_bp_count());
    cJSON_AddBoolToObject(body, "raised", atomic_load(&dbg_exc_raised));
    cJSON_AddBoolToObject(body, "uncaught", atomic_load(&dbg_exc_uncaught));
    dbg_hooks_census(body);
    dbg_exc_census(body);
    return 0;
}

/* ---- on the loop ---- */

static int thread_arg(const cJSON *args, long *tid, struct pb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "threadId");
    if (!cJSON_IsNumber(v))
        return pb_err_set(err, PB_EBADARG, "arguments.threadId: expected integer");
    *tid = (long)v->valuedouble;
    return 0;
}

static void update_done(void *arg, int rc)
{
    (void)rc;
    free(arg);
}

static void update_with_gil(void *arg)
{
    (void)arg;
    struct pb_err err = {0};
    dbg_vars_sync();
    if (dbg_hooks_update(&err) < 0)
        PB_LOG(PB_LOG_WARN, "debugger hooks: %s", err.msg);
}

/* After a resume: narrow the hooks to what is still wanted (asynchronously). */
static void schedule_update(void)
{
    if (probe_gil_submit(update_with_gil, update_done, NULL, 10000) < 0)
        PB_LOG(PB_LOG_WARN, "debugger hooks: could not schedule an update");
}

static int do_continue(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    (void)args;
    (void)err;
    (void)lm;
    dbg_resume(0, DBG_STEP_NONE);
    cJSON_AddBoolToObject(body, "allThreadsContinued", 1);
    schedule_update();
    return 0;
}

static int do_step(const cJSON *args, int mode, struct pb_err *err)
{
    long tid = 0;
    int rc = thread_arg(args, &tid, err);
    if (rc < 0)
        return rc;
    if (!probe_dbg_parked(tid))
        return pb_err_set(err, PB_ESTATE, "thread %ld is not stopped in Python code: only a "
                                          "stopped thread can step", tid);
    dbg_resume(tid, mode);
    return 0;
}

static int do_next(const cJSON *a, cJSON *b, struct pb_err *e, char **lm)
{
    (void)b;
    (void)lm;
    return do_step(a, DBG_STEP_OVER, e);
}

static int do_stepIn(const cJSON *a, cJSON *b, struct pb_err *e, char **lm)
{
    (void)b;
    (void)lm;
    return do_step(a, DBG_STEP_IN, e);
}

static int do_stepOut(const cJSON *a, cJSON *b, struct pb_err *e, char **lm)
{
    (void)b;
    (void)lm;
    return do_step(a, DBG_STEP_OUT, e);
}

static int do_exceptionInfo(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    (void)lm;
    long tid = 0;
    int rc = thread_arg(args, &tid, err);
    return rc < 0 ? rc : dbg_exception_info(tid, body, err);
}

static int do_resume(const cJSON *args, cJSON *body, struct pb_err *err, char **lm)
{
    (void)args;
    (void)err;
    (void)lm;
    int was = probe_dbg_stopped();
    cJSON_AddBoolToObject(body, "wasStopped", was);
    dbg_resume(0, DBG_STEP_NONE);
    if (was) { /* a debugging client attached meanwhile learns it from an event */
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "threadId", (double)getpid());
        cJSON_AddBoolToObject(ev, "allThreadsContinued", 1);
        probe_dbg_emit("continued", ev);
    }
    schedule_update();
    return 0;
}

enum { ON_LOOP = 0, WITH_GIL = 1 };

/* Sorted by name. */
static const struct dbg_command {
    const char *name;
    dbg_fn fn;
    int where;
} commands[] = {
    {"continue", do_continue, ON_LOOP},
    {"exceptionInfo", do_exceptionInfo, ON_LOOP},
    {"next", do_next, ON_LOOP},
    {"pause", do_pause, WITH_GIL},
    {"probing/debugger", do_state, WITH_GIL},
    {"probing/pause", do_hold, WITH_GIL},
    {"probing/resume", do_resume, ON_LOOP},
    {"scopes", probe_dbgv_scopes, WITH_GIL},
    {"setBreakpoints", dbg_req_setBreakpoints, WITH_GIL},
    {"setExceptionBreakpoints", dbg_req_setExceptionBreakpoints, WITH_GIL},
    {"setFunctionBreakpoints", dbg_req_setFunctionBreakpoints, WITH_GIL},
    {"setVariable", probe_dbgv_setVariable, WITH_GIL},
    {"source", probe_dbgv_source, WITH_GIL},
    {"stepIn", do_stepIn, ON_LOOP},
    {"stepOut", do_stepOut, ON_LOOP},
    {"variables", probe_dbgv_variables, WITH_GIL},
};

static const struct dbg_command *find(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int probe_dbg_has(const char *command)
{
    return find(command) != NULL;
}

struct job {
    const struct dbg_command *cmd;
    cJSON *args, *body;
    probe_dbg_done done;
    void *arg;
    int rc;
    struct pb_err err;
    char *long_msg;
};

static uv_timer_t pause_timer;
static int pause_timer_init;

/* Nobody parked soon after a pause (every thread is in C code, e.g. sleeping): the target is
 * stopped all the same as far as Python goes; say so, for the main thread. */
static void on_pause_timer(uv_timer_t *t)
{
    (void)t;
    if (!atomic_load(&dbg_pause_all) || dbg_set_announced(1))
        return;
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "reason", "pause");
    cJSON_AddStringToObject(b, "description", "Paused (threads in native code stop when they "
                                              "return to Python)");
    cJSON_AddNumberToObject(b, "threadId", (double)getpid());
    cJSON_AddBoolToObject(b, "allThreadsStopped", 1);
    probe_dbg_emit("stopped", b);
}

static void arm_pause_timer(void)
{
    if (!pause_timer_init) {
        uv_timer_init(probe_agent_loop(), &pause_timer);
        uv_unref((uv_handle_t *)&pause_timer);
        pause_timer_init = 1;
    }
    uv_timer_start(&pause_timer, on_pause_timer, 200, 0);
}

static int is_pause(const struct dbg_command *cmd)
{
    return cmd->fn == do_pause || cmd->fn == do_hold;
}

static void finish(struct job *j)
{
    /* Events a request caused go before its response (an evaluation's output), except a
     * pause's `stopped`, which DAP wants after the response. */
    if (!is_pause(j->cmd))
        dbg_events_drain();
    if (j->rc == 0 && is_pause(j->cmd))
        arm_pause_timer();
    j->done(j->arg, j->rc, j->rc == 0 ? j->body : NULL, &j->err, j->long_msg);
    if (is_pause(j->cmd))
        dbg_events_hold(-1);
    if (j->rc != 0)
        cJSON_Delete(j->body);
    cJSON_Delete(j->args);
    free(j->long_msg);
    free(j);
}

static void run_with_gil(void *arg)
{
    struct job *j = arg;
    j->rc = j->cmd->fn(j->args, j->body, &j->err, &j->long_msg);
    if (PyErr_Occurred())
        PyErr_Clear();
}

static void gil_done(void *arg, int gil_rc)
{
    struct job *j = arg;
    char busy[256];
    if (gil_rc == PB_ETIMEDOUT && probe_worker_busy_text(0, busy, sizeof busy)) {
        cJSON_Delete(j->body);
        j->body = cJSON_CreateObject();
        j->rc = pb_err_set(&j->err, PB_ETIMEDOUT, "%s: '%s' was not done; %s", busy,
                           j->cmd->name, PROBE_BUSY_HINT);
    } else if (gil_rc < 0) {
        cJSON_Delete(j->body);
        j->body = cJSON_CreateObject();
        j->rc = gil_rc == PB_ETIMEDOUT
                    ? pb_err_set(&j->err, PB_ETIMEDOUT,
                                 "the GIL could not be had within %d ms (a thread holds it in "
                                 "native code): '%s' was not done", probe_setting_gil_timeout_ms(),
                                 j->cmd->name)
                    : pb_err_set(&j->err, gil_rc, "the interpreter is not running Python code");
    }
    finish(j);
}

int probe_dbg_request(const char *command, const cJSON *args, probe_dbg_done done, void *arg,
                      struct pb_err *err)
{
    const struct dbg_command *cmd = find(command);
    if (!cmd)
        return pb_err_set(err, PB_EBADARG, "unknown debugger command '%s'", command);
    dbg_events_start();
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(err, PB_EUNKNOWN, "out of memory");
    j->cmd = cmd;
    j->args = args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
    j->body = cJSON_CreateObject();
    j->done = done;
    j->arg = arg;
    if (is_pause(cmd))
        dbg_events_hold(+1);
    if (cmd->where == ON_LOOP) {
        j->rc = cmd->fn(j->args, j->body, &j->err, &j->long_msg);
        finish(j);
        return 0;
    }
    if (probe_gil_submit(run_with_gil, gil_done, j, probe_setting_gil_timeout_ms()) < 0) {
        if (is_pause(cmd))
            dbg_events_hold(-1);
        cJSON_Delete(j->args);
        cJSON_Delete(j->body);
        free(j);
        return pb_err_set(err, PB_EUNKNOWN, "out of memory");
    }
    return 0;
}

void probe_dbg_configured(void)
{
    dbg_events_start();
    if (!probe_dbg_stopped())
        return;
    dbg_set_announced(1);
    long tid = dbg_first_parked();
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "reason", "pause");
    cJSON_AddNumberToObject(b, "threadId", (double)(tid ? tid : getpid()));
    cJSON_AddBoolToObject(b, "allThreadsStopped", 1);
    probe_dbg_emit("stopped", b);
}

/* ---- detach: everything of ours goes, under the GIL; retried while the GIL is busy ---- */

struct cleanup {
    unsigned long gen;
    int tries;
};

static void cleanup_with_gil(void *arg)
{
    struct cleanup *c = arg;
    dbg_vars_sync();
    if (c->gen != atomic_load(&dbg_session_gen))
        return; /* a new client came meanwhile: its breakpoints stay */
    dbg_bp_clear_all();
    dbg_exc_remove();
    dbg_hooks_remove();
    c->tries = -1;
}

static void cleanup_done(void *arg, int rc)
{
    struct cleanup *c = arg;
    if (rc == PB_ETIMEDOUT && c->tries >= 0 && ++c->tries < 600 &&
        probe_gil_submit(cleanup_with_gil, cleanup_done, c, 1000) == 0)
        return;
    if (c->tries >= 0)
        PB_LOG(PB_LOG_WARN, "debugger cleanup did not run (rc %d)", rc);
    free(c);
}

void probe_dbg_detach(void)
{
    atomic_store(&dbg_exc_raised, 0);
    atomic_store(&dbg_exc_uncaught, 0);
    dbg_hold(0);
    dbg_resume(0, DBG_STEP_NONE);
    atomic_store(&dbg_steps_active, 0);
    unsigned long gen = atomic_fetch_add(&dbg_session_gen, 1) + 1;
    dbg_events_drain();
    struct cleanup *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->gen = gen;
    if (probe_gil_submit(cleanup_with_gil, cleanup_done, c, 1000) < 0)
        free(c);
}
