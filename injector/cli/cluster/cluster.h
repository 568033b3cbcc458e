/* SPDX-License-Identifier: MIT */
/* `probing cluster`: the internals the files of cluster/ share. A node's answer is one JSON
 * document (cli_cluster_node_*): the ranks found on it from /proc/N/environ and, per command,
 * what each rank said. Across nodes the CLI runs `probing cluster CMD --local --json` on each
 * node through a command template (ssh, srun, kubectl exec) and merges the documents. The design
 * is in docs/cluster.md. cJSON ownership: items added to a parent belong to it; functions that
 * return a cJSON * hand over a root the caller deletes. */
#ifndef CLI_CLUSTER_H
#define CLI_CLUSTER_H

#include <sys/types.h>

#include "injector/cli/cli.h"
#include "injector/render/flame.h"

/* Which thread of a rank is read. */
enum { CLUSTER_THREAD_AUTO, CLUSTER_THREAD_MAIN, CLUSTER_THREAD_ALL };
/* What each rank is asked. */
enum {
    CLUSTER_OP_LIST,
    CLUSTER_OP_STACKS,
    CLUSTER_OP_QUERY,
    CLUSTER_OP_DUMP,
    CLUSTER_OP_COMM,
    CLUSTER_OP_HOSTS
};

struct cli_cluster_opts {
    int op;
    int json, local, tree, color;
    int no_inject;          /* stacks: read from outside (readonly.c), nothing injected */
    int native;             /* stacks: native and Python frames merged (debug --dump --native);
                             * with --thread all, the threads that run no Python too */
    int any_uid;            /* ask ranks of another uid than the job's too (find.c "foreign") */
    int thread;             /* CLUSTER_THREAD_* */
    int samples;            /* >= 1 */
    int tasks;              /* stacks: each rank's asyncio tasks too, grouped (--tasks) */
    int subprocesses;       /* stacks, dump: each rank's child processes too (children.c) */
    double interval;        /* seconds between samples */
    int rank_timeout_ms;    /* per rank: inject + connect + answer */
    int node_timeout_ms;    /* per node: the whole remote command */
    int parallel;           /* nodes asked at once */
    const char *job;        /* --job, or NULL: the only job found */
    const char *hosts;      /* --hosts a,b,c */
    const char *hostfile;   /* --hostfile F */
    const char *nodelist;   /* --nodelist (else $SLURM_JOB_NODELIST with --slurm) */
    int slurm;              /* --slurm: the nodes of job $SLURM_JOB_ID (squeue), else env */
    const char *exec;       /* --exec template, default "ssh -- {host}" */
    const char *remote_cli; /* --probing PATH on the nodes (default: this binary's path) */
    const char *sql;        /* query */
    const char *reduce;     /* query --reduce */
    const char *outdir;     /* dump -o */
    const char *format;     /* query: table|json|csv */
};

/* ---- the command line (cluster.c) ---- */
/* A parsed `probing cluster SUB [OPTIONS]`: what cli_cluster_parse read, before anything runs
 * (curl's tool_getparam/operate split). sc is the subcommand's row of cluster.c's table. */
struct cli_cluster_cmd {
    struct cli_cluster_opts o;
    const char *sub;                  /* argv[1], NULL without a subcommand */
    const struct cli_cluster_sub *sc; /* NULL until sub is known */
    int help;                         /* --help (or no subcommand): print help(sub) */
    char *owned_sql, *owned_job;      /* --sql-hex, --job-hex decoded */
};
/* Parses argv (argv[0] "cluster", argv[1] the subcommand) into cmd, g giving the defaults
 * (--timeout). Returns CLI_OK (cmd->help: print the help, nothing else), or CLI_USAGE after
 * printing one line. Touches nothing but cmd and getopt's state; cli_cluster_cmd_close frees what
 * it holds on every path. */
int cli_cluster_parse(const struct cli_opts *g, int argc, char **argv, struct cli_cluster_cmd *cmd);
void cli_cluster_cmd_close(struct cli_cluster_cmd *cmd);

/* The largest world size (and rank + 1) believed: an int's. Nothing is sized by a world size
 * (missing ranks are computed from the ranks found, as ranges: cli_cluster_gaps), so a process
 * claiming WORLD_SIZE=2147483647 costs what one rank costs; a larger value is not a rank's. */
#define CLUSTER_WORLD_MAX 2147483647L
/* How many missing ranks are listed one by one in --json's "missing" (all of them are in
 * "missing_ranges" and counted in "missing_count"). */
#define CLUSTER_MISSING_LIST 1000

/* ---- discovery (find.c) ---- */
/* Every rank of a distributed job on this node, from /proc/N/environ (see docs/cluster.md for
 * the variables and how launchers and forked children are told apart from ranks). Returns an
 * array of objects {job, launcher, rank, local_rank, world_size, group_rank, master, pid, node,
 * python, probe}, sorted by job then rank. */
cJSON *cli_cluster_find_ranks(void);
/* This node's name (uname's nodename). */
const char *cli_cluster_node_name(void);

/* ---- this node's ranks asked in parallel (local.c) ---- */
/* The node document for o->op: {"node", "ranks": [...]} where each rank carries what it
 * answered ("samples" of {thread, name, main, stack} with "stacks" interned per node, "result"
 * for a query, "dump") or "error". Ranks are filtered by o->job when set. */
cJSON *cli_cluster_local_collect(const struct cli_cluster_opts *o);

/* ---- nodes (hosts.c) ---- */
/* Expand a SLURM-style node list ("node[1-3,5],gpu[01-02]") into an array of strings.
 * Returns NULL with err filled on a syntax error. */
cJSON *cli_cluster_nodelist_expand(const char *spec, struct pb_err *err);
/* The nodes to ask from --hosts, --hostfile, --nodelist or --slurm: an array of strings, an
 * empty array for "this node only", or NULL with err filled. */
cJSON *cli_cluster_hosts_resolve(const struct cli_cluster_opts *o, struct pb_err *err);
/* Every node asked in parallel (o->parallel at once) with one remote command each; returns the
 * node documents (an array), with {"node": host, "error": "..."} for a node that failed or did
 * not answer within o->node_timeout_ms. argv is the local command to run there. */
cJSON *cli_cluster_nodes_collect(const struct cli_cluster_opts *o, const cJSON *hosts,
                                 char *const *argv, int argc);

/* ---- child processes with deadlines (run.c, pool.c) ---- */
struct cli_cluster_child {
    pid_t pid;
    int out, err;      /* read ends, -1 once closed */
    char *obuf, *ebuf; /* what the child wrote (NUL-terminated) */
    size_t olen, ocap, elen, ecap;
    int status; /* wait status, once reaped */
    int state;  /* CLUSTER_CHILD_* */
    int group;  /* kill its process group (commands) */
    int cut;    /* stdout passed CLI_CLUSTER_MAX_OUTPUT: obuf holds only that much */
    long long deadline;
    char *const *argv; /* the command (argv[0] looked up in PATH) */
    int start_errno;   /* why it could not be started (CLUSTER_CHILD_FAILED; 0: other) */
};
/* The most of a child's stdout kept (a node's answer); past it the pipe is closed (the child
 * gets SIGPIPE on its next write) and the child marked cut. */
#define CLI_CLUSTER_MAX_OUTPUT (64 << 20)
enum {
    CLUSTER_CHILD_PENDING,
    CLUSTER_CHILD_RUNNING,
    CLUSTER_CHILD_DONE,
    CLUSTER_CHILD_TIMEDOUT,
    CLUSTER_CHILD_FAILED
};
/* Run n commands (each child's argv, spawned with posix_spawnp: the CLI's memory, large at
 * 4,096 ranks, is not copied for each), at most parallel at once, each given timeout_ms from its
 * start. A child that outlives its deadline is killed (SIGKILL, its process group when group is
 * set) and is CLUSTER_CHILD_TIMEDOUT. */
void cli_cluster_run(struct cli_cluster_child *c, int n, int parallel, int timeout_ms);
/* This node's n ranks served by forked workers (pool.c), about `workers` of them at once, more
 * while some are slow: serve(i, ctx) runs in a worker for rank i with stdout and stderr on its
 * pipes, writes rank i's answer on stdout and returns; c[i] gets what it wrote, its state
 * (CLUSTER_CHILD_DONE, _TIMEDOUT past timeout_ms from its start, _FAILED) and, where its worker
 * died serving it, the worker's wait status. */
void cli_cluster_run_pool(struct cli_cluster_child *c, int n, int workers, int timeout_ms,
                          void (*serve)(int i, void *ctx), void *ctx);
/* In serve, once past what must not be interrupted (the injection, which restores the target):
 * from now on the worker may be killed at its deadline. -1: the parent gave the rank up
 * meanwhile (serve returns at once). */
int cli_cluster_pool_safe(void);
void cli_cluster_child_free(struct cli_cluster_child *c);
/* n bytes of s appended to a NUL-terminated growing buffer (kept as it was when out of memory). */
void cli_cluster_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* Child i's stdout and stderr (each unless -1) added to a poll set at np, who[] saying whose
 * (i for stdout, -i - 1 for stderr); the new count. */
struct pollfd;
int cli_cluster_poll_add(struct pollfd *pfd, int *who, int np, int out, int err, int i);
/* close(*fd) unless it is -1; *fd = -1. */
void cli_cluster_close_fd(int *fd);

/* ---- grouping and printing (stacks.c) ---- */
/* Stacks interned by their text (a struct flame_intern): the same frames get the same id
 * (0, 1, ...). The id of key (taken: freed here), *is_new set when it was not there; 0 when
 * out of memory. */
int cli_cluster_intern_id(struct flame_intern *t, char *key, int *is_new);
/* A malloc'd key for an array of frames {func, file, line}. */
char *cli_cluster_stack_key(const cJSON *frames);
/* Merge node documents into the job's view and print it (text or --json). Returns an exit
 * code. */
int cli_cluster_stacks_report(const struct cli_cluster_opts *o, cJSON *nodes);
/* "0-16,18-63" for a sorted array of distinct ints. Returns a malloc'd string. */
char *cli_cluster_ranges(const int *v, int n);
/* The ranks in [0, world) not in present (n ints, any order, duplicates and out-of-range ones
 * allowed): their count, their ranges ("2-2147483646", malloc'd) and the first
 * CLUSTER_MISSING_LIST of them as a JSON array. Memory grows with n, never with world. */
struct cli_cluster_gaps {
    long count;
    char *ranges;
    cJSON *list;
};
void cli_cluster_gaps(const int *present, int n, long world, struct cli_cluster_gaps *g);
/* Adds "missing", "missing_count" and "missing_ranges" to o (g->list is moved there). */
void cli_cluster_gaps_to_json(cJSON *o, struct cli_cluster_gaps *g);
void cli_cluster_gaps_free(struct cli_cluster_gaps *g);
/* The job to report among the ranks of the node documents: o->job, or the only one; NULL with
 * an error printed when there are none or several. Returns a borrowed string. */
const char *cli_cluster_pick_job(const struct cli_cluster_opts *o, const cJSON *nodes);

/* ---- list, query, dump (list.c, query.c) ---- */
int cli_cluster_list_report(const struct cli_cluster_opts *o, cJSON *nodes);
int cli_cluster_query_report(const struct cli_cluster_opts *o, cJSON *nodes);
int cli_cluster_dump_report(const struct cli_cluster_opts *o, cJSON *nodes);

/* ---- collectives (collectives.c) ---- */
/* The query each rank answers for collectives and stacks (to end with the most rows wanted),
 * its rows kept in the rank's "comm". */
extern const char cli_cluster_comm_sql[];
/* The job's collectives lined up: {recording: [ranks], no_records: [ranks], hangs: [{pg,
 * group_ranks, seq, op, not_entered, waiting, waiting_s, last: [...]}, and for a point-to-point
 * call {kind: "p2p", expected, file, line, func, ...the same}], compared, ranks:
 * [{rank, node, pid, median_wait_ms, max_wait_ms, collectives, straggler}]}, a root the caller
 * deletes. */
cJSON *cli_cluster_comm_analyse(const cJSON *nodes, const char *job);
/* The hang lines of an analysis ("rank 3 has not entered all_reduce #N of group 0; ..."). */
void cli_cluster_comm_print_hangs(const cJSON *analysis);
int cli_cluster_collectives_report(const struct cli_cluster_opts *o, cJSON *nodes);
/* torch's flight recorder per rank (flightrec.c), from each rank's "fr" (probing/comm
 * flight_recorder) and "comm" rows: [{rank, state, entries, agree, differ_count, differ,
 * only_ours, only_torch}], and its section of `cluster collectives`. */
cJSON *cli_cluster_fr_analyse(const cJSON *nodes, const char *job);
void cli_cluster_fr_print(const cJSON *fr);
/* torch's own sequence numbers per rank and process group (seqnum.c), from each rank's "seq"
 * (probing/comm sequence) or "seq_error", and "where" (its thread's frames): {read: [ranks],
 * not_read: [{rank, error, where}], start: "zero" | "random" | "mixed", groups: [{pg,
 * group_ranks, backend, seqs: [[rank, seq]], max, not_read: [ranks], moving: [ranks whose
 * number changed between the two reads]}], behind (only in groups where none moved): [{pg,
 * group_ranks, behind: [ranks], seq, ahead: [ranks], ahead_seq, where: [{ranks, behind, frame,
 * from}]}]} (where: {frame: {func, file, line}, from: the first frame below outside torch}); the lines naming the ranks behind (their count), and the whole section. */
#define CLUSTER_SEQ_WAIT_MS 1000 /* between a rank's two reads of its sequence numbers */
cJSON *cli_cluster_seq_analyse(const cJSON *nodes, const char *job);
int cli_cluster_seq_print_behind(const cJSON *seq);
void cli_cluster_seq_print(const cJSON *seq, int recorder_ran);

/* Milliseconds on the monotonic clock. */
long long cli_cluster_now_ms(void);

#endif
