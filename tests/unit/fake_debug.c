/* SPDX-License-Identifier: MIT */
/* The probe's debugger as the server's unit tests and fuzzers see it: no thread is ever parked,
 * what needs a stopped thread fails as it would then, and breakpoints are refused one by one
 * (the real debugger is tested end to end against real targets). */
#include <stdio.h>
#include <string.h>

#include "debugger/debugger.h"

static probe_dbg_sink fake_sink;
int fake_dbg_detaches;

void dbg_set_sink(probe_dbg_sink sink, void *ctx)
{
    (void)ctx;
    fake_sink = sink;
}

void dbg_emit(const struct probe_dbg_event *e)
{
    (void)e;
}

void dbg_events_drain(void)
{
}

int dbg_resume_all(int announce)
{
    (void)announce;
    return 0;
}

int dbg_step_thread(long tid, int mode, struct pb_err *err)
{
    (void)mode;
    return pb_err_set(err, PB_ESTATE,
                      "thread %ld is not stopped in Python code: only a "
                      "stopped thread can step",
                      tid);
}

int dbg_stopped(void)
{
    return 0;
}

int dbg_parked(long tid)
{
    (void)tid;
    return 0;
}

int dbg_stack(long tid, long long start, long long max, struct probe_frame **frames, int *n)
{
    (void)tid;
    (void)start;
    (void)max;
    *frames = NULL;
    *n = 0;
    return -1;
}

void dbg_frames_free(struct probe_frame *frames, int n)
{
    (void)frames;
    (void)n;
}

int dbg_exception(long tid, struct dbg_exception *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    return pb_err_set(err, PB_ESTATE, "thread %ld is not stopped on an exception", tid);
}

void dbg_exception_free(struct dbg_exception *e)
{
    (void)e;
}

int dbg_is_library(const char *file)
{
    return file && strstr(file, "/site-packages/") != NULL;
}

void dbg_configured(void)
{
}

void dbg_detach(void)
{
    fake_dbg_detaches++;
}

void dbg_pause_begin(void)
{
}

int dbg_pause(int hold, struct pb_err *err)
{
    (void)hold;
    return pb_err_set(err, PB_ESTATE, "fake debugger: pause not served");
}

void dbg_pause_end(int ok)
{
    (void)ok;
}

static int refuse(const struct probe_dbg_bp_spec *specs, int n, struct probe_dbg_bp *out)
{
    for (int i = 0; i < n; i++) {
        out[i].id = i + 1;
        out[i].verified = 0;
        out[i].line = specs[i].line;
        snprintf(out[i].message, sizeof out[i].message, "fake debugger: not set");
    }
    return 0;
}

int dbg_set_breakpoints(const char *path, const struct probe_dbg_bp_spec *specs, int n,
                        struct probe_dbg_bp *out, struct pb_err *err)
{
    (void)path;
    (void)err;
    return refuse(specs, n, out);
}

int dbg_set_function_breakpoints(const struct probe_dbg_bp_spec *specs, int n,
                                 struct probe_dbg_bp *out, struct pb_err *err)
{
    (void)err;
    return refuse(specs, n, out);
}

int dbg_set_exception_breakpoints(int raised, int uncaught, struct pb_err *err)
{
    (void)raised;
    (void)uncaught;
    (void)err;
    return 0;
}

void dbg_census(struct dbg_census *out)
{
    memset(out, 0, sizeof *out);
    out->monitoring_tool = -1;
}

void dbg_var_free(struct probe_dbg_var *v)
{
    (void)v;
}

void dbg_vars_free(struct probe_dbg_vars *vs)
{
    (void)vs;
}

int dbg_scopes(long long frame_id, struct probe_dbg_scope out[2], struct pb_err *err)
{
    (void)out;
    return pb_err_set(err, PB_ESTATE, "frame %lld: no thread is stopped", frame_id);
}

int dbg_variables(long long ref, int filter, long long start, long long count,
                  struct probe_dbg_vars *out, struct pb_err *err)
{
    (void)filter;
    (void)start;
    (void)count;
    memset(out, 0, sizeof *out);
    return pb_err_set(err, PB_EBADARG, "variablesReference %lld: no such reference", ref);
}

int dbg_set_variable(long long ref, const char *name, const char *value, struct probe_dbg_var *out,
                     struct pb_err *err, char **long_msg)
{
    (void)name;
    (void)value;
    (void)long_msg;
    memset(out, 0, sizeof *out);
    return pb_err_set(err, PB_EBADARG, "variablesReference %lld: no such reference", ref);
}

int dbg_source(long long sref, const char *path, char **content, char **mime, struct pb_err *err)
{
    (void)sref;
    *content = *mime = NULL;
    return pb_err_set(err, PB_EBADARG, "no source for %s", path ? path : "this reference");
}
