/* SPDX-License-Identifier: MIT */
/* `probing serve`: the internals its files share. args.c parses the command line; serve.c
 * runs the HTTP server (libmicrohttpd), its security checks and routing; the answers are a
 * file per job, asking the probes over DAP the way the CLI's commands do (conn.c, internal.h):
 * processes.c the process list, api.c one process's requests, jobs.c the distributed jobs,
 * metrics.c /metrics and /api/gpus; reply.c makes the replies they send (serve.c -> answers ->
 * reply.c, never back). The static pages under web/ are compiled in by tools/web_embed.sh.
 * docs/http.md describes the API. */
#ifndef CLI_SERVE_H
#define CLI_SERVE_H

#include <stddef.h>
#include <sys/socket.h>
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
 * by "HOST:PORT" in paths (and in the process list's "target"). */
#define CLI_SERVE_MAX_TARGETS 16
struct cli_serve_target {
    struct cli_target target; /* host and port */
    char name[280];           /* HOST:PORT as given */
};
extern struct cli_serve_target cli_serve_targets[CLI_SERVE_MAX_TARGETS];
extern int cli_serve_ntargets;

/* What a path of the API names: a process of this node by its pid, or a remote probe by its
 * index in cli_serve_targets. */
enum cli_serve_kind { CLI_SERVE_LOCAL = 1, CLI_SERVE_REMOTE };
struct cli_serve_proc {
    enum cli_serve_kind kind;
    pid_t pid; /* CLI_SERVE_LOCAL */
    int index; /* CLI_SERVE_REMOTE */
};

/* The cluster's host options given to serve (--hosts, --hostfile, --nodelist, --slurm, --exec,
 * --probing, --node-timeout), as argv words appended to `probing cluster list|stacks`: a job
 * whose ranks run on other nodes is served like one on this node. */
#define CLI_SERVE_MAX_CLUSTER_ARGS 14
extern char *cli_serve_cluster_args[CLI_SERVE_MAX_CLUSTER_ARGS];
extern int cli_serve_ncluster_args;
/* Runs `probing cluster hosts` with those options: 0, or -1 with its error (one line) in err. */
int cli_serve_check_hosts(char *err, size_t n);

/* `probing serve`'s command line (args.c), parsed before anything listens. */
struct cli_serve_cmd {
    const char *listen; /* --listen, default 127.0.0.1:8080 */
    struct sockaddr_storage ss;
    char host[256];                 /* --listen's address, without [] */
    int port;                       /* --listen's port (0: picked when listening) */
    int loopback;                   /* a loopback address */
    char token[80];                 /* $PROBING_SERVE_TOKEN (token_from_env), else empty */
    int token_from_env, token_auto; /* --token auto without $PROBING_SERVE_TOKEN: make one */
    struct cli_serve_target targets[CLI_SERVE_MAX_TARGETS];
    int ntargets;
    char *cluster_args[CLI_SERVE_MAX_CLUSTER_ARGS]; /* words; option names in cluster_names */
    char cluster_names[CLI_SERVE_MAX_CLUSTER_ARGS][16];
    int ncluster_args;
    int help; /* --help: print it, nothing else */
};
/* Parses argv (argv[0] "serve") into cmd, reading $PROBING_TOKEN and $PROBING_SERVE_TOKEN:
 * CLI_OK, or CLI_USAGE after printing one line. cmd holds pointers into argv and into itself
 * (cluster_args): keep it where it is while they are used. */
int cli_serve_parse(int argc, char **argv, struct cli_serve_cmd *cmd);

/* The uid of the process at the other end of the accepted loopback TCP connection fd: the
 * owner of the one ESTABLISHED socket whose address and port pair is the exact mirror of fd's
 * (NETLINK_SOCK_DIAG, else /proc/net/tcp{,6}); -1 when that is not exactly one (peer.c). */
long cli_serve_peer_uid(int fd);

/* The API. Each fills r; a failure is a JSON {"error": "..."} with a 4xx or 5xx status. p is
 * the process of the path; body is the request's body (NUL-terminated, may be empty).
 * processes.c: GET /api/processes. */
void cli_serve_processes(struct cli_serve_reply *r);
/* api.c: one process's requests, each a DAP request to its probe. */
void cli_serve_stacks(const struct cli_serve_proc *p, int locals, int tasks, int children,
                      struct cli_serve_reply *r);
/* top: the query's top argument (types listed), NULL for 20. */
void cli_serve_memory(const struct cli_serve_proc *p, const char *top, struct cli_serve_reply *r);
/* POST .../torch {action, every}; GET .../torch/trace?steps=N (the last N traced steps). */
void cli_serve_torch(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r);
void cli_serve_torch_trace(const struct cli_serve_proc *p, const char *steps,
                           struct cli_serve_reply *r);
void cli_serve_query(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r);
void cli_serve_attach(const struct cli_serve_proc *p, struct cli_serve_reply *r);
void cli_serve_perf(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r);
/* flt: the filters of the query (thread, since, gil, idle, native=all), checked by serve.c. */
void cli_serve_flamegraph(const struct cli_serve_proc *p, const char *format,
                          const struct cli_fg_opts *flt, struct cli_serve_reply *r);
/* metrics.c: GET /metrics (Prometheus). */
void cli_serve_metrics(struct cli_serve_reply *r);
/* GET /api/gpus: the machine's NVIDIA GPUs and their processes (NVML), or why there are none. */
void cli_serve_gpus(struct cli_serve_reply *r);
/* jobs.c: jobs on this node, or on the nodes of the host options (`probing cluster list --json`), and
 * one job's grouped stacks (`probing cluster stacks --json --job J`, which loads the probe in
 * its ranks): run as a child. */
void cli_serve_jobs(struct cli_serve_reply *r);
void cli_serve_job_stacks(const char *body, struct cli_serve_reply *r);

#endif
