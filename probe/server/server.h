/* SPDX-License-Identifier: MIT */
/* The server's internals shared by the dispatcher (dispatch.c) and the request handlers
 * (req/<command>.c, one file per DAP request, named after it). Loop thread only; this folder
 * is the only place that builds DAP JSON. */
#ifndef SRV_SERVER_H
#define SRV_SERVER_H

#include "dap/dap.h"
#include "session.h"
#include "core/core.h"
#include "gil/gil.h"
#include "debugger/debugger.h"
#include "prof/prof.h"

enum {
    SRV_F_PREAUTH = 1,        /* answered before a TCP client authenticated */
    SRV_F_NEEDS_ATTACHED = 2, /* only after `attach` */
    SRV_F_UNIX_ONLY = 4,      /* refused on TCP connections (changes what the probe serves) */
    SRV_F_DEBUGGER = 8,       /* only for the debugging client (the seat, server/seat.c) */
    SRV_F_GIL = 16,           /* its job runs on the worker with the GIL (gil_timeout_ms) */
    SRV_F_TASK = 32,          /* its job runs on the task thread (owns the SQLite handle) */
    SRV_F_GIL_FALLBACK = 64,  /* reply is called also when the GIL could not be had */
};

/* The part of a request done on another thread (SRV_F_GIL, SRV_F_TASK). The dispatcher
 * allocates size zeroed bytes (the job, which starts with a struct srv_job_rc), calls parse on
 * the loop, defers the request, runs run on the worker (GIL held) or the task thread, then on
 * the loop answers: with the error run left in the job's srv_job_rc, or with the body reply
 * builds; then it calls drop. When the GIL cannot be had in time, run does not run and the
 * response is the error naming the thread that holds the GIL (srv_gil_busy_error), unless
 * SRV_F_GIL_FALLBACK asks reply to answer anyway (r->gil_rc < 0). Debugger events queued
 * meanwhile go out before the response. */
struct srv_job_rc {
    int rc; /* run's result: 0, or a negative code with err */
    struct pb_err err;
    char *long_msg; /* a longer error text (a traceback) to use instead of err's; malloc'd */
};

/* What reply may use and fill. */
struct srv_reply {
    struct srv_session *s; /* to send events that must precede the response */
    int gil_rc;            /* < 0: run did not run (the GIL could not be had) */
    struct pb_err err;     /* reply's own failure */
    char *long_msg;        /* or a longer text, malloc'd */
};

#define SRV_JOB_ANSWERED 2
struct srv_job {
    size_t size;
    /* Loop: check the arguments into job. 0, or a negative code with c->err (then drop, no
     * run), or SRV_JOB_ANSWERED when it could fill job without run (reply then runs at once
     * on the loop, with gil_rc 0). May be NULL. */
    int (*parse)(struct srv_ctx *c, const cJSON *args, void *job);
    void (*run)(void *job);
    /* Loop: fill body (0), or fail with r->err (or r->long_msg). */
    int (*reply)(struct srv_reply *r, void *job, cJSON *body);
    /* Loop, after the response went out: free what job holds (not job). May be NULL. */
    void (*drop)(void *job);
};

/* A reply for jobs whose answer has no body. */
int srv_reply_empty(struct srv_reply *r, void *job, cJSON *body);

struct srv_command {
    const char *name;
    int flags;
    /* A request answered on the loop (NULL when job is set). */
    srv_handler handler;
    /* A request answered after work on the worker or the task thread (flags say which). */
    const struct srv_job *job;
    /* SRV_F_GIL: how long to wait for the GIL (ms). */
    int (*gil_timeout_ms)(void);
    /* Runs after the response was sent (events that must follow it). May be NULL. */
    void (*post)(struct srv_session *s);
};

/* The sorted table (dispatch.c). */
const struct srv_command *srv_command_find(const char *name);
extern const struct srv_command srv_commands[];
extern const size_t srv_ncommands;
/* Serve c with cmd (the session's dispatcher calls it once checks passed): cmd's handler, or
 * its job. Returns 0 with body filled, SRV_DEFERRED, or a negative code with c->err. */
int srv_command_run(const struct srv_command *cmd, struct srv_ctx *c, const cJSON *args,
                    cJSON *body);
/* Defer c and run job (allocated with calloc, taken, whatever happens) as flags say
 * (SRV_F_GIL with timeout_ms, or SRV_F_TASK): for handlers that choose their job from the
 * arguments (evaluate). Returns SRV_DEFERRED, or a negative code with c->err (not deferred). */
int srv_job_submit(struct srv_ctx *c, const struct srv_job *ops, void *job, int flags,
                   int timeout_ms);

/* The debugger's seat (seat.c): one debugging client at a time, whose session receives the
 * debugger's events. Claim it (attach), test it, give it back (disconnect, connection gone). */
int srv_debugger_claim(struct srv_session *s, struct pb_err *err);
int srv_session_is_debugger(const struct srv_session *s);
void srv_debugger_release(struct srv_session *s);
void srv_post_configurationDone(struct srv_session *s);
/* arguments.threadId, required (seat.c). */
int srv_thread_arg(struct srv_ctx *c, const cJSON *args, long *tid);
/* next, stepIn, stepOut: step the stopped thread arguments.threadId (mode: PROBE_DBG_STEP_*). */
int srv_step_request(struct srv_ctx *c, const cJSON *args, int mode);

/* DAP JSON of the debugger's structs (dbgjson.c). */
struct probe_frame;
/* A StackFrame: id from (tid, depth); for code without a file (<string>), a sourceReference
 * when the frame can serve it (inspectable: its thread is parked). */
cJSON *srv_json_stack_frame(const struct probe_frame *f, long tid, int depth, int inspectable);
/* The body of a debugger event (new reference). */
struct probe_dbg_event;
cJSON *srv_json_dbg_event(const struct probe_dbg_event *e);

/* variablesReference, and indexedVariables / namedVariables when known, into o. */
void srv_json_children(cJSON *o, long long ref, long long indexed, long long named);
/* A Variable (name, evaluateName when known) / its value's parts into o (setVariable). */
struct probe_dbg_var;
cJSON *srv_json_variable(const struct probe_dbg_var *v);
void srv_json_variable_into(cJSON *o, const struct probe_dbg_var *v);

/* pause and probing/pause (req/pause.c). */
struct srv_pausejob {
    struct srv_job_rc rc;
    int hold; /* -1: as it is (pause); 0/1: probing/pause */
    int begun, ran;
};
void srv_pause_run(void *job);
void srv_pause_drop(void *job);

/* setBreakpoints and setFunctionBreakpoints (req/setBreakpoints.c): one result per spec. */
struct probe_dbg_bp_spec;
struct probe_dbg_bp;
struct srv_bpjob {
    struct srv_job_rc rc;
    cJSON *args; /* a copy the specs point into */
    const char *path;
    int line_breakpoints; /* setBreakpoints: each answer names source.path */
    int n;
    struct probe_dbg_bp_spec *specs;
    struct probe_dbg_bp *out;
};
int srv_bpjob_parse(struct srv_ctx *c, struct srv_bpjob *j, const cJSON *args);
int srv_bpjob_reply(struct srv_reply *r, void *job, cJSON *body);
void srv_bpjob_drop(void *job);

/* Handlers: one file each (req/<command>.c), jobs named srv_job_<command>. */

int srv_req_attach(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_configurationDone(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_disconnect(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_evaluate(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_initialize(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_config(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_crash(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_info(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_interrupt(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_listen(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_perf(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_stackTrace(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_scopes(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_modules(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_continue(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_next(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_stepIn(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_stepOut(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_exceptionInfo(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_resume(struct srv_ctx *c, const cJSON *args, cJSON *body);
int srv_req_probing_dump(struct srv_ctx *c, const cJSON *args, cJSON *body);
extern const struct srv_job srv_job_probing_eval, srv_job_threads, srv_job_probing_memory,
    srv_job_probing_query, srv_job_probing_torch, srv_job_probing_comm, srv_job_pause,
    srv_job_probing_pause, srv_job_probing_debugger, srv_job_variables, srv_job_setVariable,
    srv_job_source, srv_job_setBreakpoints, srv_job_setFunctionBreakpoints,
    srv_job_setExceptionBreakpoints;

void srv_post_initialize(struct srv_session *s);

/* Code evaluation (evaljob.c). A renderer builds the body of a finished evaluation (0), or fails
 * with err, or with a longer *long_msg it mallocs (a traceback). s may be used to send events
 * that must precede the response. */
struct probe_eval_result;
typedef int (*srv_eval_render)(struct srv_session *s, const struct probe_eval_result *r,
                               const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
/* An evaluation (evaljob.c): a SRV_F_GIL job with the eval GIL timeout
 * (gil_eval_timeout_ms), whose parse calls srv_eval_init (probing/eval), or started by a
 * handler with srv_eval_request (evaluate). */
struct srv_evaljob {
    struct srv_job_rc rc;
    struct srv_session *s; /* a reference of our own: the evaluation count */
    char *src;
    int mode;
    long long frame_id;
    int refs;
    cJSON *args;
    srv_eval_render render;
    struct probe_eval_result *result;
};
/* Loop: evaluate src (mode: PROBE_EVAL_*) in frame_id (PROBE_EVAL_MAIN: __main__); refs: hand
 * out a variablesReference for a result with children. 0 or a negative code with c->err. */
int srv_eval_init(struct srv_ctx *c, struct srv_evaljob *j, const char *src, int mode,
                  long long frame_id, int refs, const cJSON *args, srv_eval_render render);
void srv_eval_run(void *job);
int srv_eval_reply(struct srv_reply *r, void *job, cJSON *body);
void srv_eval_drop(void *job);
/* srv_eval_init and submit. Returns SRV_DEFERRED, or a negative code with c->err. */
int srv_eval_request(struct srv_ctx *c, const char *src, int mode, long long frame_id, int refs,
                     const cJSON *args, srv_eval_render render);
/* Fill err with why the GIL could not be had (gil_rc from gil_submit), naming the thread
 * that holds it and where, from a GIL-free snapshot. Returns gil_rc's code. Loop thread. */
int srv_gil_busy_error(int gil_rc, int timeout_ms, struct pb_err *err);
/* The probe's console commands (evaluate with a "%" prefix; console.c). Returns SRV_DEFERRED or
 * 0 with body filled, or a negative code with c->err filled. */
int srv_console_command(struct srv_ctx *c, const char *line, cJSON *body);

/* SQL results as JSON (server/req/probing_query.c): an array of rows, each an array of numbers,
 * strings and nulls (new reference). */
struct probe_rows;
cJSON *srv_json_rows(const struct probe_rows *r);

/* Deliver the debugger's queued events to the seat now, before a response (seat.c). */
void srv_debugger_flush(void);

/* Evaluations in flight for a session (evaljob.c): +1 when one is submitted, -1 when it is
 * answered. A session detached with evaluations in flight interrupts the running one. */
void srv_session_eval_count(struct srv_session *s, int delta);
int srv_session_evals(const struct srv_session *s);

/* When a session's peer is gone (closed.c): each hook ends what the session left running. */
typedef void (*srv_closed_hook)(struct srv_session *s);
extern const srv_closed_hook srv_closed_hooks[];
extern const size_t srv_nclosed_hooks;
/* evaljob.c: interrupt the evaluation of a session that has one queued or running. */
void srv_evals_closed(struct srv_session *s);

/* attach's "nativeFrames" (session.c): whether stackTrace shows native frames between the
 * Python ones (nativeframes.c). */
enum { SRV_NATIVE_OFF, SRV_NATIVE_MERGED, SRV_NATIVE_ALL };
void srv_session_set_native_frames(struct srv_session *s, int mode);
int srv_session_native_frames(const struct srv_session *s);
/* stackTrace with native frames (nativeframes.c): the Python frames of thread tid (py, all of
 * them, innermost first; inspectable: the stop record's) with the thread's native frames
 * merged in as mode says, paged by start/levels into body (stackFrames, totalFrames). Python
 * frames keep the ids they have without native frames; native and label frames have ids of
 * their own (srv_native_frame_id). Loop thread; waits at most 1 s for the thread. */
int srv_native_stack(long tid, int mode, const struct probe_frame *py, int npy, int inspectable,
                     long long start, long long levels, cJSON *body, struct pb_err *err);
/* srv_native_stack in two steps, for a thread that is not parked (stackTrace's task job): the
 * ask, on any thread but the loop (it may wait 1 s for the thread), then on the loop the body
 * from its answer (which it frees). */
struct srv_native_answer {
    struct prof_nstack ns;
    char note[320]; /* why native frames are not shown ("" when they are) */
};
void srv_native_ask(long tid, struct srv_native_answer *a);
int srv_native_stack_answered(long tid, int mode, const struct probe_frame *py, int npy,
                              int inspectable, long long start, long long levels,
                              struct srv_native_answer *a, cJSON *body, struct pb_err *err);
/* 1 when frame id was handed out for a native (or label) frame: scopes answers none. */
int srv_native_frame_id(long long id);

/* Authentication state (attach sets it). */
void srv_session_set_authed(struct srv_session *s);

/* ---- listen.c ---- */
/* Listen for DAP on TCP at "HOST:PORT" (port 0 picks one) with this token. Listening again on
 * the same address just replaces the token. Returns 0 and fills probe_info's tcp_address. */
int srv_tcp_listen(const char *address, const char *token, struct pb_err *err);

/* server/listen.c: the Unix listener (once the loop exists, before it runs), the stale-socket
 * sweep (a task), TCP from any thread, fork and exit. */
int srv_start(struct pb_err *err);
/* Undoes srv_start (a start that failed later, before the loop ran): the listener and
 * its socket file go, its handles are closed. */
void srv_stop(void);
/* On the agent thread: the sweep of stale sockets in the socket's directory
 * (core_rundir_sweep, on the task thread), SRV_SWEEP_DELAY_MS and up to 1 s more after now. */
#define SRV_SWEEP_DELAY_MS 2000
void srv_sweep_later(void);
/* From any thread: ask the loop to listen on TCP and wait for the outcome. */
int srv_agent_listen_sync(const char *address, const char *token, struct pb_err *err);
/* fork() child: drop every descriptor the agent owned; the child has no agent. */
void srv_agent_forget(void);
/* At exit in the process that created it: remove the socket file. */
void srv_agent_cleanup(void);

#endif
