/* SPDX-License-Identifier: MIT */
/* dap/ internals shared by the dispatcher and the request handlers. */
#ifndef DAP_INTERNAL_H
#define DAP_INTERNAL_H

#include "dap/dap.h"

enum {
    DAP_F_PREAUTH = 1,        /* answered before a TCP client authenticated */
    DAP_F_NEEDS_ATTACHED = 2, /* only after `attach` */
    DAP_F_UNIX_ONLY = 4,      /* refused on TCP connections (changes what the probe serves) */
    DAP_F_DEBUGGER = 8,       /* only for the debugging client (the seat, see server/req/debug.c) */
};

struct dap_command {
    const char *name;
    dap_handler handler;
    int flags;
    /* Runs after the response was sent (events that must follow it). May be NULL. */
    void (*post)(struct dap_session *s);
};

/* The sorted table (dispatch.c). */
const struct dap_command *dap_command_find(const char *name);
extern const struct dap_command dap_commands[];
extern const size_t dap_ncommands;

/* Handlers: one file each (req_<command>.c). */
/* Debugger requests, forwarded to the probe's debugger (server/req/debug.c). */
int dap_req_debug(struct dap_ctx *c, const cJSON *args, cJSON *body);
void dap_post_configurationDone(struct dap_session *s);
/* The debugger's seat: claim it (attach), test it, give it back (disconnect, connection gone). */
int dap_debugger_claim(struct dap_session *s, struct pb_err *err);
int dap_session_is_debugger(const struct dap_session *s);
void dap_debugger_release(struct dap_session *s);

int dap_req_attach(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_configurationDone(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_disconnect(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_evaluate(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_initialize(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_config(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_dump(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_crash(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_eval(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_info(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_interrupt(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_listen(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_memory(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_perf(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_query(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_probing_torch(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_stackTrace(struct dap_ctx *c, const cJSON *args, cJSON *body);
int dap_req_threads(struct dap_ctx *c, const cJSON *args, cJSON *body);

void dap_post_initialize(struct dap_session *s);

/* Code evaluation (evaljob.c). A renderer builds the body of a finished evaluation (0), or fails
 * with err, or with a longer *long_msg it mallocs (a traceback). s may be used to send events
 * that must precede the response. */
struct probe_eval_result;
typedef int (*dap_eval_render)(struct dap_session *s, const struct probe_eval_result *r,
                               const cJSON *args, cJSON *body, struct pb_err *err,
                               char **long_msg);
/* Defer c and evaluate src (mode: PROBE_EVAL_*) on the worker, in frame_id (PROBE_EVAL_MAIN:
 * __main__); refs: hand out a variablesReference for a result with children. Returns
 * DAP_DEFERRED, or a negative code with c->err filled. */
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

/* Authentication state (attach sets it). */
void dap_session_set_authed(struct dap_session *s);

#endif
