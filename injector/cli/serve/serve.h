/* SPDX-License-Identifier: MIT */
/* `probing serve`: the internals its files share. serve.c runs the HTTP server
 * (libmicrohttpd), its security checks and routing; api.c answers the JSON API and /metrics by
 * asking the probes over DAP the way the CLI's commands do; reply.c makes the replies both
 * send (serve.c -> api.c -> reply.c, never back). The static pages under web/ are compiled in
 * by tools/web_embed.sh. docs/http.md describes the API. */
#ifndef CLI_SERVE_H
#define CLI_SERVE_H

#include <stddef.h>
#include <sys/types.h>

#include "injector/cli/cli.h"

/* One static file of the UI (generated: build/<variant>/gen/web_assets.c). */
struct cli_serve_asset {
    const char *path; /* "/index.html" */
    const char *type; /* Content-Type */
    const unsigned char *data;
    size_t len;
};
extern const struct cli_serve_asset cli_serve_assets[]; /* ends with a NULL path */

/* An API answer: HTTP status, Content-Type and a malloc'd body the server frees. */
struct cli_serve_reply {
    int status;
    const char *type;
    char *body;
    size_t len;
};

/* Replies (reply.c). r becomes v printed (taken) with status; or {"error": msg} with status. */
void cli_serve_json(struct cli_serve_reply *r, int status, cJSON *v);
void cli_serve_error(struct cli_serve_reply *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The request body as a JSON object (the caller deletes), or NULL with r filled (400). */
cJSON *cli_serve_body(const char *body, struct cli_serve_reply *r);

/* Remote probes (`--target HOST:PORT`, listening on TCP, $PROBING_TOKEN): the API names them
 * by "HOST:PORT" in paths; inside, by a negative pid: -1 - their index. */
#define CLI_SERVE_MAX_TARGETS 16
extern struct cli_target cli_serve_targets[CLI_SERVE_MAX_TARGETS];
extern char cli_serve_target_names[CLI_SERVE_MAX_TARGETS][280];
extern int cli_serve_ntargets;

/* The cluster's host options given to serve (--hosts, --hostfile, --nodelist, --slurm, --exec,
 * --probing, --node-timeout), as argv words appended to `probing cluster list|stacks`: a job
 * whose ranks run on other nodes is served like one on this node. */
#define CLI_SERVE_MAX_CLUSTER_ARGS 14
extern char *cli_serve_cluster_args[CLI_SERVE_MAX_CLUSTER_ARGS];
extern int cli_serve_ncluster_args;
/* Runs `probing cluster hosts` with those options: 0, or -1 with its error (one line) in err. */
int cli_serve_check_hosts(char *err, size_t n);

/* The uid of the process at the other end of the accepted loopback TCP connection fd: the
 * owner of the one ESTABLISHED socket whose address and port pair is the exact mirror of fd's
 * (NETLINK_SOCK_DIAG, else /proc/net/tcp{,6}); -1 when that is not exactly one (peer.c). */
long cli_serve_peer_uid(int fd);

/* The API (api.c). Each fills r; a failure is a JSON {"error": "..."} with a 4xx or
 * 5xx status. pid is the PID of the path (negative: a remote probe, above); body is the request's body (NUL-terminated, may be
 * empty); query is a lookup of the URL's query arguments (may return NULL). */
void cli_serve_processes(struct cli_serve_reply *r);
void cli_serve_stacks(pid_t pid, int locals, int tasks, int children, struct cli_serve_reply *r);
/* top: the query's top argument (types listed), NULL for 20. */
void cli_serve_memory(pid_t pid, const char *top, struct cli_serve_reply *r);
/* POST .../torch {action, every}; GET .../torch/trace?steps=N (the last N traced steps). */
void cli_serve_torch(pid_t pid, const char *body, struct cli_serve_reply *r);
void cli_serve_torch_trace(pid_t pid, const char *steps, struct cli_serve_reply *r);
void cli_serve_query(pid_t pid, const char *body, struct cli_serve_reply *r);
void cli_serve_attach(pid_t pid, struct cli_serve_reply *r);
void cli_serve_perf(pid_t pid, const char *body, struct cli_serve_reply *r);
/* flt: the filters of the query (thread, since, gil, idle, native=all), checked by serve.c. */
void cli_serve_flamegraph(pid_t pid, const char *format, const struct cli_fg_opts *flt,
                          struct cli_serve_reply *r);
void cli_serve_metrics(struct cli_serve_reply *r);
/* GET /api/gpus: the machine's NVIDIA GPUs and their processes (NVML), or why there are none. */
void cli_serve_gpus(struct cli_serve_reply *r);
/* Jobs on this node, or on the nodes of the host options (`probing cluster list --json`), and
 * one job's grouped stacks (`probing cluster stacks --json --job J`, which loads the probe in
 * its ranks): run as a child. */
void cli_serve_jobs(struct cli_serve_reply *r);
void cli_serve_job_stacks(const char *body, struct cli_serve_reply *r);

#endif
