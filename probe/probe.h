/* SPDX-License-Identifier: MIT */
/* libprobing: the in-process half. One agent thread runs a libuv loop serving DAP (dap/) on a
 * private Unix socket, and on TCP when asked; work that needs the GIL runs on one worker thread
 * under a timeout. This header is what dap/ request handlers call; everything here is for the
 * loop thread unless it says otherwise. Exported entry points (the only dynamic symbols):
 * probing_start() and probing_version(). */
#ifndef PROBE_H
#define PROBE_H

#include "pb.h"

#define PROBING_VERSION "0.1.0"

struct probe_info {
    int pid;
    char python_version[32];
    char socket_path[256];
    char tcp_address[80]; /* "" when not listening on TCP */
    double start_time;    /* when the probe started (epoch seconds) */
};

/* Borrowed; valid for the life of the process. */
const struct probe_info *probe_info_get(void);

/* Constant-time token comparison. 1 if token matches the TCP token, else 0. */
int probe_token_check(const char *token);

/* Listen for DAP on TCP at "HOST:PORT" (port 0 picks one) with this token. Listening again on
 * the same address just replaces the token. Returns 0 and fills probe_info's tcp_address. */
int probe_tcp_listen(const char *address, const char *token, struct pb_err *err);

/* Run fn(arg) on the worker thread with the GIL held; then done(arg, 0) on the loop thread. If
 * the GIL cannot be had within timeout_ms, done(arg, PB_ETIMEDOUT) runs instead and fn never
 * runs; if Python is not initialised or is finalising, done(arg, PB_ENOGIL). arg must stay
 * valid until done is called. Returns 0 or -ENOMEM (then nothing is called). */
typedef void (*probe_gil_fn)(void *arg);
typedef void (*probe_gil_done)(void *arg, int rc);
int probe_gil_submit(probe_gil_fn fn, probe_gil_done done, void *arg, int timeout_ms);

/* From any thread other than the loop and the worker (e.g. the task thread): run fn(arg) on
 * the worker with the GIL held and wait for it, at most timeout_ms for the GIL. Returns 0 when
 * fn ran, PB_ETIMEDOUT (the GIL was not had in time; fn will never run) or PB_ENOGIL. */
int probe_gil_call(probe_gil_fn fn, void *arg, int timeout_ms);

/* Run fn(arg) on the task thread (no GIL held; it may block, e.g. in probe_gil_call or a long
 * SQL query), then done(arg) on the loop thread. Tasks run one at a time, in order. Returns 0
 * or -ENOMEM (then nothing is called). */
typedef void (*probe_task_fn)(void *arg);
typedef void (*probe_task_done)(void *arg);
int probe_task_submit(probe_task_fn fn, probe_task_done done, void *arg);

/* The worker thread's pthread id, so snapshots can leave it out. */
unsigned long probe_worker_ident(void);

/* Runtime settings (from PROBING_* environment variables at start). */
int probe_setting_gil_timeout_ms(void);

#endif
