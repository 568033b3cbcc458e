/* SPDX-License-Identifier: MIT */
/* `probing serve`'s API files share these (and only they): reaching a process's probe
 * (conn.c), the process list (processes.c), running this binary as a child (jobs.c). */
#ifndef CLI_SERVE_INTERNAL_H
#define CLI_SERVE_INTERNAL_H

#include "serve.h"

#define SERVE_DAP_TIMEOUT_MS 10000

/* ---- conn.c ---- */
/* The HTTP status for a failure code from the CLI's layers. */
int cli_serve_status_of(int code);
/* Whether pid may be served: it exists and belongs to our user (any, for root). 0 or a
 * negative code with err filled. */
int cli_serve_allowed(pid_t pid, struct pb_err *err);
/* Connect to p's probe (never injecting) and handshake; a remote one over TCP with
 * $PROBING_TOKEN. 0, or a negative code with err filled (dc closed). */
int cli_serve_connect(const struct cli_serve_proc *p, struct dap_client *dc, int timeout_ms,
                      struct pb_err *err);
/* Connect for queries (waiting as long as the probe's query.timeout_ms), or -1 with r
 * filled. */
int cli_serve_connect_query(const struct cli_serve_proc *p, struct dap_client *dc,
                            struct cli_serve_reply *r);
/* One request (args taken) to p's probe; the body (caller deletes) or NULL with r filled. */
cJSON *cli_serve_call(const struct cli_serve_proc *p, const char *command, cJSON *args,
                      int query_wait, struct cli_serve_reply *r);
/* What the error messages call p: "process PID" or "HOST:PORT" into buf. */
const char *cli_serve_proc_name(const struct cli_serve_proc *p, char *buf, size_t n);

/* ---- processes.c ---- */
/* Every Python process of this user (every user's, for root) and the remote probes: an array
 * of {id, key, pid, command, python, probe, rss, threads, rank, job, world_size; target for a
 * remote probe}. Nothing is injected. */
cJSON *cli_serve_python_processes(void);
/* The process an entry of that list names. */
struct cli_serve_proc cli_serve_proc_of(const cJSON *entry);

/* ---- jobs.c ---- */
/* Runs this binary with argv (argv[0] is set here) and, when cluster is set, the host options
 * appended (argv has room for them after its NULL-terminated words); its stdout and stderr in
 * *out and *err (malloc'd, NUL-terminated; the caller frees both). Returns its wait status, or
 * -1 with *err set when it could not run. */
int cli_serve_run_child(char **argv, int cluster, char **out_buf, char **err_buf);
/* The first line of a child's stderr (cut there), or fallback when it wrote nothing. */
const char *cli_serve_first_line(char *s, const char *fallback);
/* The request body (a JSON object the caller deletes) with its member key, a non-empty
 * string, in *val; or NULL with r filled (400: what) when either is missing. */
cJSON *cli_serve_body_string(const char *body, const char *key, const char **val, const char *what,
                             struct cli_serve_reply *r);

#endif
