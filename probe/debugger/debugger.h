/* SPDX-License-Identifier: MIT */
/* The debugger (probe/debugger/): pause, continue, stepping, breakpoints, exception
 * breakpoints, and the inspection of stopped frames (scopes, variables, setVariable, evaluate in
 * a frame, source). server/ calls it: on the loop thread, or on the worker with the GIL, as
 * each function says. It takes and returns C structs and never builds DAP JSON: server/ does
 * (one file per request in server/req/, the events' bodies in server/dbgjson.c).
 *
 * Model: all-stop. When a thread stops (pause, breakpoint, step, exception), it parks inside
 * our trace callback with the GIL released, and every other Python thread parks at its next
 * line; threads blocked in C code park when they come back to Python. A parked thread keeps
 * strong references to its frames (a stop record); frame ids (pb_frame_id()) name a thread
 * and a depth and are valid while the thread stays parked. Resuming bumps the stop generation: variable references
 * handed out before are stale after it. */
#ifndef PROBE_DEBUG_H
#define PROBE_DEBUG_H

#include "pb.h"
#include "core/core.h"
#include "gil/gil.h"

/* ---- events: produced on any thread, delivered on the loop ---- */

enum probe_dbg_event_kind {
    PROBE_DBG_EV_STOPPED,   /* reason, text (description, may be NULL), thread_id, bp_ids */
    PROBE_DBG_EV_CONTINUED, /* thread_id (all threads continued) */
    PROBE_DBG_EV_OUTPUT,    /* category, text; path and line when it comes from a file */
    PROBE_DBG_EV_THREAD,    /* reason ("started", "exited"), thread_id */
};

struct probe_dbg_event {
    int kind;
    long thread_id;
    char reason[32];
    char category[16];
    const char *text; /* NULL when none */
    const char *path; /* output: the file it comes from, or NULL */
    int line;
    int nbp; /* stopped: hitBreakpointIds */
    int bp_ids[8];
};

/* Where debugger events go (the debugging session), in order, on the loop. e and what it
 * points to are valid during the call. NULL drops events. Loop thread. */
typedef void (*probe_dbg_sink)(void *ctx, const struct probe_dbg_event *e);
void dbg_set_sink(probe_dbg_sink sink, void *ctx);
/* Queue an event (copied); any thread. */
void dbg_emit(const struct probe_dbg_event *e);
/* Loop thread: deliver queued events now (those a request caused go before its response),
 * unless a pause's response is still to go (its `stopped` must follow it). */
void dbg_events_drain(void);

/* ---- loop thread: resuming, stepping, what is stopped ---- */

enum { PROBE_DBG_STEP_IN = 1, PROBE_DBG_STEP_OVER, PROBE_DBG_STEP_OUT };

/* Resume every parked thread (continue, probing/resume) and narrow the hooks afterwards.
 * announce: a `continued` event goes out if the target was stopped. Returns 1 if it was. */
int dbg_resume_all(int announce);
/* Step the parked thread tid (mode: PROBE_DBG_STEP_*); the others resume. 0, or a negative
 * code with err (tid is not parked). */
int dbg_step_thread(long tid, int mode, struct pb_err *err);
/* 1 while the target is stopped (some thread parked or a pause pending/held). */
int dbg_stopped(void);
/* 1 if tid is parked. */
int dbg_parked(long tid);
/* A parked thread's recorded stack from frame start, at most max frames (max <= 0: all):
 * fills frames (func, file, line; each string malloc'd, freed with dbg_frames_free) and
 * returns how many frames the stack has in all (*n: how many were filled). Returns -1 when tid
 * is not parked (the caller reads the stack without the GIL) or on allocation failure with
 * *n 0. */
struct probe_frame;
int dbg_stack(long tid, long long start, long long max, struct probe_frame **frames, int *n);
void dbg_frames_free(struct probe_frame *frames, int n);

/* What exceptionInfo says of a thread stopped on an exception (strings malloc'd). */
struct dbg_exception {
    char *type;             /* module.qualname (builtins without module) */
    char *message;          /* str(exc), may be NULL */
    char *traceback;        /* formatted, may be NULL */
    const char *break_mode; /* "always" or "unhandled" */
};
int dbg_exception(long tid, struct dbg_exception *out, struct pb_err *err);
void dbg_exception_free(struct dbg_exception *e);

/* A frame's presentation: 1 for library code (the standard library, site-packages), which
 * stackTrace marks with presentationHint "subtle". Any thread; no GIL. */
int dbg_is_library(const char *file);

/* ---- the debugging client: arrives, configures, leaves (loop thread) ---- */

/* The debugging client sent configurationDone: if threads are stopped (probing/pause held
 * them), it is told with a `stopped` event. */
void dbg_configured(void);
/* The debugging client is gone (disconnect, or the connection dropped): every breakpoint,
 * trace function, monitoring event and hook of ours is removed and parked threads resume. */
void dbg_detach(void);

/* ---- pause (pause, probing/pause) ---- */

/* Loop: a pause begins; its `stopped` event waits until dbg_pause_end. */
void dbg_pause_begin(void);
/* Worker, GIL held: every thread stops at its next Python line. hold: -1 leave the hold as
 * it is (pause), 0 or 1 stay stopped without a client until resumed (probing/pause). */
int dbg_pause(int hold, struct pb_err *err);
/* Loop, after the response went out: ok says whether the pause took. */
void dbg_pause_end(int ok);

/* ---- worker thread, GIL held: breakpoints ---- */

/* A breakpoint as asked (strings borrowed). line 0: no valid line (setBreakpoints). */
struct probe_dbg_bp_spec {
    int line;
    const char *name; /* setFunctionBreakpoints */
    const char *condition, *hit_condition, *log_message;
};
/* What became of it (one per spec, in order). */
struct probe_dbg_bp {
    int id, verified, line;
    char message[700];
};
/* Replace the line breakpoints of the file at path with n specs; out gets n results. Returns
 * 0, or a negative code with err (out is then filled all the same for what was set). */
int dbg_set_breakpoints(const char *path, const struct probe_dbg_bp_spec *specs, int n,
                        struct probe_dbg_bp *out, struct pb_err *err);
/* Replace every function breakpoint; as above. */
int dbg_set_function_breakpoints(const struct probe_dbg_bp_spec *specs, int n,
                                 struct probe_dbg_bp *out, struct pb_err *err);
/* Exception breakpoints: stop where an exception is raised / ends a thread. */
int dbg_set_exception_breakpoints(int raised, int uncaught, struct pb_err *err);

/* probing/debugger: what the debugger has in place, read from the interpreter. */
struct dbg_census {
    int stopped, breakpoints, raised, uncaught;
    int traced_threads;  /* threads with our trace function (3.8-3.11) */
    int monitoring_tool; /* our sys.monitoring tool id (3.12+), -1 if none */
    int threading_hook, eval_frame_hook, excepthook, threading_excepthook;
    int entry_hooks; /* functions whose code calls our entry hook (3.11) */
};
void dbg_census(struct dbg_census *out);

/* ---- worker thread, GIL held: inspecting stopped frames ---- */

/* A DAP Variable's parts (strings malloc'd; NULL when absent). */
struct probe_dbg_var {
    char *name, *value, *type, *evaluate_name;
    long long ref, indexed, named;
};
struct probe_dbg_vars {
    int n, cap;
    struct probe_dbg_var *v;
    int more; /* children beyond the page */
};
void dbg_var_free(struct probe_dbg_var *v);
void dbg_vars_free(struct probe_dbg_vars *vs);

/* scopes of frame_id: Locals then Globals (ref, named: -1 when unknown). */
struct probe_dbg_scope {
    long long ref, named;
};
int dbg_scopes(long long frame_id, struct probe_dbg_scope out[2], struct pb_err *err);

enum { PROBE_DBG_VARS_ALL, PROBE_DBG_VARS_INDEXED, PROBE_DBG_VARS_NAMED };
/* The children of ref (filter, start, count > 0) into out. */
int dbg_variables(long long ref, int filter, long long start, long long count,
                  struct probe_dbg_vars *out, struct pb_err *err);
/* name = value (Python source, evaluated where ref's frame is); out describes the new value
 * (name not set). Output of the evaluation goes out as events; an exception is the error with
 * its traceback in *long_msg (malloc'd). */
int dbg_set_variable(long long ref, const char *name, const char *value, struct probe_dbg_var *out,
                     struct pb_err *err, char **long_msg);
/* The source of sref (> 0: a frame's code without a file) or path; *content and *mime
 * malloc'd (*mime may be NULL). */
int dbg_source(long long sref, const char *path, char **content, char **mime, struct pb_err *err);

/* ---- worker thread, GIL held: for eval ---- */
struct _object;
/* The frame object behind frameId while its thread is parked (borrowed: valid until the
 * thread resumes); NULL with err filled otherwise. */
struct _object *dbg_frame(long long frame_id, struct pb_err *err);
/* Changes each time parked threads resume. */
unsigned long dbg_generation(void);

/* ---- evaluate.c, events.c (for the server and entry.c) ---- */
struct probe_eval_result;
/* Run src (a probe_gil_fn body) in __main__'s globals, or with frame_id >= 0 in that frame of
 * a stopped thread (its globals and locals; assignments to locals stick). refs: register a
 * result that has children for `variables` (DAP evaluate). Output of the evaluating thread is
 * captured; sys.stdout/stderr are restored to the very objects they were; no exception is left
 * set; returns 0, or a negative code with err filled when the probe itself failed or the frame
 * is not there (the code's own exceptions are in r). Requires GIL (worker thread). */
int dbg_eval_run(const char *src, int mode, long long frame_id, int refs,
                 struct probe_eval_result *r, struct pb_err *err);
/* debugger/events.c: the debugger's event queue (before the loop runs). */
int dbg_events_start(void);
/* Undoes dbg_events_start (a start that failed later, before the loop ran). */
void dbg_events_stop(void);
/* fork() child (async-signal-safe): the child has no agent, so its debugger is off for good:
 * no thread ever parks, hooks do nothing, events are dropped. */
void dbg_fork_child(void);

#endif
