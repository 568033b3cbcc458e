/* SPDX-License-Identifier: MIT */
/* The server's internals shared by the dispatcher (dispatch.c) and the request handlers
 * (req/<command>.c, one file per DAP request, named after it). Loop thread only; this folder
 * is the only place that builds DAP JSON. */
#ifndef DAP_INTERNAL_H
#define DAP_INTERNAL_H

#include "dap/dap.h"
#include "core/core.h"
#include "gil/gil.h"
#include "debugger/debugger.h"
#include "prof/prof.h"

enum {
    DAP_F_PREAUTH = 1,        /* answered before a TCP client authenticated */
    DAP_F_NEEDS_ATTACHED = 2, /* only after `attach` */
    DAP_F_UNIX_ONLY = 4,      /* refused on TCP connections (changes what the probe serves) */
    DAP_F_DEBUGGER = 8,       /* only for the debugging client (the seat, server/seat.c) */
    DAP_F_GIL = 16,           /* its job runs on the worker with the GIL (gil_timeout_ms) */
    DAP_F_TASK = 32,          /* its job runs on the task thread (owns the SQLite handle) */
    DAP_F_GIL_FALLBACK = 64,  /* reply is called also when the GIL could not be had */
};

/* The part of a request done on another thread (DAP_F_GIL, DAP_F_TASK). The dispatcher
 * allocates size zeroed bytes (the job, which starts with a struct dap_job_rc), calls parse on
 * the loop, defers the request, runs run on the worker (GIL held) or the task thread, then on
 * the loop answers: with the error run left in the job's dap_job_rc, or with the body reply
 * builds; then it calls drop. When the GIL cannot be had in time, run does not run and the
 * response is the error naming the thread that holds the GIL (dap_gil_busy_error), unless
 * DAP_F_GIL_FALLBACK asks reply to answer anyway (r->gil_rc < 0). Debugger events queued
 * meanwhile go out before the response. */
struct dap_job_rc {
    int rc; /* run's result: 0, or a negative code with err */
    struct pb_err err;
    char *long_msg; /* a longer error text (a traceback) to use instead of err's; malloc'd */
};

/* What reply may use and fill. */
struct dap_reply {
    struct dap_session *s; /* to send events that must precede the response */
    int gil_rc;            /* < 0: run did not run (the GIL could not be had) */
    struct pb_err err;     /* reply's own failure */
    char *long_msg;        /* or a longer text, malloc'd */
};

#define DAP_JOB_ANSWERED 2
struct dap_job {
    size_t size;
    /* Loop: check the arguments into job. 0, or a negative code with c->err (then drop, no
     * run), or DAP_JOB_ANSWERED when it could fill job without run (reply then runs at once
     * on the loop, with gil_rc 0). May be NULL. */
    int (*parse)(struct dap_ctx *c, const cJSON *args, void *job);
    void (*run)(void *job);
    /* Loop: fill body (0), or fail with r->err (or r->long_msg). */
    int (*reply)(struct dap_reply *r, void *job, cJSON *body);
    /* Loop, after the response went out: free what job holds (not job). May be NULL. */
    void (*drop)(void *job);
};

/* A reply for jobs whose answer has no body. */
int dap_reply_empty(struct dap_reply *r, void *job, cJSON *body);

struct dap_command {
    const char *name;
    int flags;
    /* A request answered on the loop (NULL when job is set). */
    dap_handler handler;
    /* A request answered after work on the worker or the task thread (flags say which). */
    const struct dap_job *job;
    /* DAP_F_GIL: how long to wait for the GIL (ms). */
    int (*gil_timeout_ms)(void);
    /* Runs after the response was sent (events that must follow it). May be NULL. */
    void (*post)(struct dap_session *s);
};

/* The sorted table (dispatch.c). */
const struct dap_command *dap_command_find(const char *name);
extern const struct dap_command dap_commands[];
extern const size_t dap_ncommands;
/* Serve c with cmd (the session's dispatcher calls it once checks passed): cmd's handler, or
 * its job. Returns 0 with body filled, DAP_DEFERRED, or a negative code with c->err. */
int dap_command_run(const struct dap_command *cmd, struct dap_ctx *c, const cJSON *args,
                    cJSON *body);
/* Defer c and run job (allocated with calloc, taken, whatever happens) as flags say
 * (DAP_F_GIL with timeout_ms, or DAP_F_TASK): for handlers that choose their job from the
 * arguments (evaluate). Returns DAP_DEFERRED, or a negative code with c->err (not deferred). */
int dap_job_submit(struct dap_ctx *c, const struct dap_job *ops, void *job, int flags,
                   int timeout_ms);

/* The debugger's seat (seat.c): one debugging client at a time, whose session receives the
 * debugger's events. Claim it (attach), test it, give it back (disconnect, connection gone). */
int dap_debugger_claim(struct dap_session *s, struct pb_err *err);
int dap_session_is_debugger(const struct dap_session *s);
void dap_debugger_release(struct dap_session *s);
void dap_post_configurationDone(struct dap_session *s);
/* arguments.threadId, required (seat.c). */
int dap_thread_arg(struct dap_ctx *c, const cJSON *args, long *tid);
/* next, stepIn, stepOut: step the stopped thread arguments.threadId (mode: PROBE_DBG_STEP_*). */
int dap_step_request(struct dap_ctx *c, const cJSON *args, int mode);

/* DAP JSON of the debugger's structs (dbgjson.c). */
struct probe_frame;
/* A StackFrame: id from (tid, depth); for code without a file (<string>), a sourceReference
 * when the frame can serve it (inspectable: its thread is parked). */
cJSON *dap_json_stack_frame(const struct probe_frame *f, long tid, int depth, int inspectable);
/* The body of a debugger event (new reference). */
struct probe_dbg_event;
cJSON *dap_json_dbg_event(const struct probe_dbg_event *e);

/* variablesReference, and indexedVariables / namedVariables when known, into o. */
void dap_json_children(cJSON *o, long long ref, long long indexed, long long named);
/* A Variable (name, evaluateName when known) / its value's parts into o (setVariable). */
struct probe_dbg_var;
cJSON *dap_json_variable(const struct probe_dbg_var *v);
void dap_json_variable_into(cJSON *o, const struct probe_dbg_var *v);

/* pause and probing/pause (req/pause.c). */
struct dap_pausejob {
    struct dap_job_rc rc;
    int hold; /* -1: as it is (pause); 0/1: probing/pause */
    int begun, ran;
};
void dap_pause_run(void *job);
void dap_pause_drop(void *job);

/* setBreakpoints and setFunctionBreakpoints (req/setBreakpoints.c): one result per spec. */
struct probe_dbg_bp_spec;
struct probe_dbg_bp;
struct dap_bpjob {
    struct dap_job_rc rc;
    cJSON *args; /* a copy the specs point into */
    const char *path;
    int line_breakpoints; /* setBreakpoints: each answer names source.path */
    int n;
    struct probe_dbg_bp_spec *specs;
    struct probe_dbg_bp *out;
};
int dap_bpjob_parse(struct dap_ctx *c, struct dap_bpjob *j, const cJSON *args);
int dap_bpjob_reply(struct dap_reply *r, void *job, cJSON *body);
void dap_bpjob_drop(void *job);

/* Handlers: one file each (req/<command>.c), jobs named dap_job_<command>. */

int dap_req_attach(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_configurationDone(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_disconnect(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_evaluate(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_initialize(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_config(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_crash(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_info(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_interrupt(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_listen(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_perf(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_stackTrace(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_scopes(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_modules(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_continue(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_next(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_stepIn(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_stepOut(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_exceptionInfo(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_resume(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_dump(struct dap_ctx *c, const cJSON *args, cJSON *body);
extern const struct dap_job dap_job_probing_eval, dap_job_threads, dap_job_probing_memory,
    dap_job_probing_query, dap_job_probing_torch, dap_job_probing_comm, dap_job_pause,
    dap_job_probing_pause, dap_job_probing_debugger, dap_job_variables, dap_job_setVariable,
    dap_job_source, dap_job_setBreakpoints, dap_job_setFunctionBreakpoints,
    dap_job_setExceptionBreakpoints;

void dap_post_initialize(struct dap_session *s);

/* Code evaluation (evaljob.c). A renderer builds the body of a finished evaluation (0), or fails
 * with err, or with a longer *long_msg it mallocs (a traceback). s may be used to send events
 * that must precede the response. */
struct probe_eval_result;
typedef int (*dap_eval_render)(struct dap_session *s, const struct probe_eval_result *r,
                               const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
/* An evaluation (evaljob.c): a DAP_F_GIL job with the eval GIL timeout
 * (probe_eval_timeout_ms), whose parse calls dap_eval_init (probing/eval), or started by a
 * handler with dap_eval_request (evaluate). */
struct dap_evaljob {
    struct dap_job_rc rc;
    struct dap_session *s; /* a reference of our own: the evaluation count */
    char *src;
    int mode;
    long long frame_id;
    int refs;
    cJSON *args;
    dap_eval_render render;
    struct probe_eval_result *result;
};
/* Loop: evaluate src (mode: PROBE_EVAL_*) in frame_id (PROBE_EVAL_MAIN: __main__); refs: hand
 * out a variablesReference for a result with children. 0 or a negative code with c->err. */
int dap_eval_init(struct dap_ctx *c, struct dap_evaljob *j, const char *src, int mode,
                  long long frame_id, int refs, const cJSON *args, dap_eval_render render);
void dap_eval_run(void *job);
int dap_eval_reply(struct dap_reply *r, void *job, cJSON *body);
void dap_eval_drop(void *job);
/* dap_eval_init and submit. Returns DAP_DEFERRED, or a negative code with c->err. */
int dap_eval_request(struct dap_ctx *c, const char *src, int mode, long long frame_id, int refs,
                     const cJSON *args, dap_eval_render render);
/* Fill err with why the GIL could not be had (gil_rc from probe_gil_submit), naming the thread
 * that holds it and where, from a GIL-free snapshot. Returns gil_rc's code. Loop thread. */
int dap_gil_busy_error(int gil_rc, int timeout_ms, struct pb_err *err);
/* The probe's console commands (evaluate with a "%" prefix; console.c). Returns DAP_DEFERRED or
 * 0 with body filled, or a negative code with c->err filled. */
int dap_console_command(struct dap_ctx *c, const char *line, cJSON *body);

/* SQL results as JSON (server/req/probing_query.c): an array of rows, each an array of numbers,
 * strings and nulls (new reference). */
struct probe_rows;
cJSON *dap_json_rows(const struct probe_rows *r);

/* Deliver the debugger's queued events to the seat now, before a response (seat.c). */
void dap_debugger_flush(void);

/* Evaluations in flight for a session (evaljob.c): +1 when one is submitted, -1 when it is
 * answered. A session detached with evaluations in flight interrupts the running one. */
void dap_session_eval_count(struct dap_session *s, int delta);
int dap_session_evals(const struct dap_session *s);

/* When a session's peer is gone (closed.c): each hook ends what the session left running. */
typedef void (*dap_closed_hook)(struct dap_session *s);
extern const dap_closed_hook dap_closed_hooks[];
extern const size_t dap_nclosed_hooks;
/* evaljob.c: interrupt the evaluation of a session that has one queued or running. */
void dap_evals_closed(struct dap_session *s);

/* attach's "nativeFrames" (session.c): whether stackTrace shows native frames between the
 * Python ones (nativeframes.c). */
enum { DAP_NATIVE_OFF, DAP_NATIVE_MERGED, DAP_NATIVE_ALL };
void dap_session_set_native_frames(struct dap_session *s, int mode);
int dap_session_native_frames(const struct dap_session *s);
/* stackTrace with native frames (nativeframes.c): the Python frames of thread tid (py, all of
 * them, innermost first; inspectable: the stop record's) with the thread's native frames
 * merged in as mode says, paged by start/levels into body (stackFrames, totalFrames). Python
 * frames keep the ids they have without native frames; native and label frames have ids of
 * their own (dap_native_frame_id). Loop thread; waits at most 1 s for the thread. */
int dap_native_stack(long tid, int mode, const struct probe_frame *py, int npy, int inspectable,
                     long long start, long long levels, cJSON *body, struct pb_err *err);
/* dap_native_stack in two steps, for a thread that is not parked (stackTrace's task job): the
 * ask, on any thread but the loop (it may wait 1 s for the thread), then on the loop the body
 * from its answer (which it frees). */
struct dap_native_answer {
    struct prof_nstack ns;
    char note[320]; /* why native frames are not shown ("" when they are) */
};
void dap_native_ask(long tid, struct dap_native_answer *a);
int dap_native_stack_answered(long tid, int mode, const struct probe_frame *py, int npy,
                              int inspectable, long long start, long long levels,
                              struct dap_native_answer *a, cJSON *body, struct pb_err *err);
/* 1 when frame id was handed out for a native (or label) frame: scopes answers none. */
int dap_native_frame_id(long long id);

/* Authentication state (attach sets it). */
void dap_session_set_authed(struct dap_session *s);

/* ---- listen.c ---- */
/* Listen for DAP on TCP at "HOST:PORT" (port 0 picks one) with this token. Listening again on
 * the same address just replaces the token. Returns 0 and fills probe_info's tcp_address. */
int probe_tcp_listen(const char *address, const char *token, struct pb_err *err);

/* server/listen.c: the Unix listener (once the loop exists, before it runs), the stale-socket
 * sweep (a task), TCP from any thread, fork and exit. */
int probe_server_start(struct pb_err *err);
/* Undoes probe_server_start (a start that failed later, before the loop ran): the listener and
 * its socket file go, its handles are closed. */
void probe_server_stop(void);
void probe_server_sweep(void);
/* From any thread: ask the loop to listen on TCP and wait for the outcome. */
int probe_agent_listen_sync(const char *address, const char *token, struct pb_err *err);
/* fork() child: drop every descriptor the agent owned; the child has no agent. */
void probe_agent_forget(void);
/* At exit in the process that created it: remove the socket file. */
void probe_agent_cleanup(void);

#endif
