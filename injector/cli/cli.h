/* SPDX-License-Identifier: MIT */
/* The probing CLI's cross-file declarations: target resolution, making sure the probe is loaded,
 * connecting as a DAP client, and the commands (cli_<command>.c). */
#ifndef CLI_H
#define CLI_H

#include <stdio.h>
#include <sys/types.h>

#include "dap/dap.h"
#include "pb.h"

/* Exit codes. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

struct cli_target {
    pid_t pid;      /* > 0 for a local process */
    char host[256]; /* for HOST:PORT */
    int port;
};

struct cli_opts {
    struct cli_target target;
    int have_target;
    int timeout_ms;
};

/* Prints "probing: error: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For getopt's '?' in a command: prints "probing: error: CMD: unknown option ..." and returns
 * CLI_USAGE. Commands set opterr = 0 first. */
int cli_bad_option(const char *cmd, char **argv);
/* Parses "PID" or "HOST:PORT". */
int cli_target_parse(const char *s, struct cli_target *t, struct pb_err *err);
/* Where the probe libraries are: $PROBING_LIBDIR, else <exe dir>/../lib/probing. */
int cli_libdir(char *buf, size_t n);
/* The probe's Unix socket for pid, as reachable from here (through /proc/PID/root). */
int cli_socket_path(pid_t pid, char *buf, size_t n, struct pb_err *err);
/* Make sure pid has the probe loaded, injecting it if needed; *injected tells which. */
int cli_probe_ensure(pid_t pid, int *injected, char *version, size_t vn, struct pb_err *err);
/* Connect to the target (injecting into a local pid first if needed), then initialize and
 * attach as a CLI client. */
int cli_connect(const struct cli_opts *o, struct dap_client *c, struct pb_err *err);
/* cli_connect, printing the error (one line) when it fails. Returns 0 or -1. */
int cli_open(const struct cli_opts *o, struct dap_client *c);
/* Connect to an already-loaded probe's socket, waiting up to timeout_ms for it to appear. */
int cli_connect_pid(pid_t pid, int timeout_ms, struct dap_client *c, struct pb_err *err);
int cli_handshake(struct dap_client *c, const char *token, struct pb_err *err);
void cli_disconnect(struct dap_client *c);
/* One request on a fresh connection: connect (injecting if needed), send (args taken),
 * disconnect. Returns the body (caller deletes), or NULL after printing
 * "probing: error: <what>: <message>" (what may be NULL). */
cJSON *cli_call(const struct cli_opts *o, const char *what, const char *command, cJSON *args);

/* On a connected client: wait for each answer base_ms plus the probe's query.timeout_ms, as
 * long as a query may take there (cli_query.c). */
void cli_query_wait(struct dap_client *dc, int base_ms);
/* Prints a probing/query body {columns, rows} as an aligned table with a "(N rows)" line, a
 * JSON array of objects, or RFC 4180 CSV (cli_query.c). Returns 0 or -1. */
enum { CLI_FMT_TABLE, CLI_FMT_JSON, CLI_FMT_CSV };
int cli_query_print(const cJSON *body, int fmt);

/* Reading response bodies: a string member or NULL; a number member or dflt; 1 only for a
 * JSON true. cli_print_json prints a value as indented JSON on stdout. */
const char *cli_json_str(const cJSON *o, const char *k);
double cli_json_num(const cJSON *o, const char *k, double dflt);
int cli_json_true(const cJSON *o, const char *k);
void cli_print_json(const cJSON *v);
/* Print a response body as JSON (json) or with text(), then delete it. Returns CLI_OK. */
int cli_print_body(cJSON *body, int json, void (*text)(const cJSON *));
/* Prints a probing/dump frame's locals, one "name = value  (type)" per line after indent. */
void cli_print_locals(const cJSON *frame, const char *indent);

/* Commands: argc/argv start at the command name. */
/* The token for TCP listening (cli_inject.c): $PROBING_TOKEN (returns 0), else a fresh random
 * one in hex (returns 1: the caller prints it), or a negative code with err filled: a
 * $PROBING_TOKEN out of PB_TOKEN_MIN..PB_TOKEN_MAX (PB_EUSAGE), no random source. */
int cli_token_choose(char *buf, size_t n, struct pb_err *err);
/* The command line of pid with its NULs as spaces (empty when unreadable), into buf. */
void cli_proc_cmdline(pid_t pid, char *buf, size_t n);
/* PB_EUSAGE with err filled when token is longer than PB_TOKEN_MAX, else 0. */
int cli_token_check(const char *token, struct pb_err *err);

int cli_cmd_inject(const struct cli_opts *o, int argc, char **argv);
/* cli_crash.c: arm (enable 1) or disarm crash capture on a connected client, printing one line.
 * Returns 0 or a negative code with err filled. */
int cli_crash_set(struct dap_client *dc, int enable, struct pb_err *err);
/* debug --pause / --resume (cli_debug_pause.c). */
int cli_debug_pause(const struct cli_opts *o, const char *address);
int cli_debug_resume(const struct cli_opts *o);
int cli_cmd_debug(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_list(const struct cli_opts *o, int argc, char **argv);
/* cluster list|stacks|query|dump|hosts (cli_cluster*.c, docs/cluster.md). */
int cli_cmd_cluster(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_query(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_tables(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_config(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_eval(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_repl(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_backtrace(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_memory(const struct cli_opts *o, int argc, char **argv);
/* flamegraph (cli_flamegraph.c): render perf --cc's samples (injector/flame.h). */
int cli_cmd_flamegraph(const struct cli_opts *o, int argc, char **argv);
/* On a connected client: the perf --cc profile rendered as format (svg, folded, speedscope) to
 * f. Returns 0, or -1 with err filled (-ENOENT: no samples yet). */
int cli_flamegraph_write(struct dap_client *dc, pid_t pid, const char *format, FILE *f,
                         struct pb_err *err);
/* serve (cli_serve*.c, docs/http.md): the web UI and HTTP API. */
int cli_cmd_serve(const struct cli_opts *o, int argc, char **argv);
/* perf (cli_perf.c) dispatches to perf --cc (cli_perf_cc.c) and perf --torch
 * (cli_perf_torch.c); argv is the whole perf command line, the --cc/--torch flag included. */
int cli_cmd_perf(const struct cli_opts *o, int argc, char **argv);
int cli_perf_cc(const struct cli_opts *o, int argc, char **argv);
int cli_perf_torch(const struct cli_opts *o, int argc, char **argv);
/* For a bare `perf --stop`, on a connected client: stop that profiler if it runs, printing one
 * line saying what was stopped and setting *stopped = 1; nothing printed when it was not
 * running. Return 0, or a negative code with err filled. */
int cli_perf_cc_stop(struct dap_client *dc, int *stopped, struct pb_err *err);
/* inject -P: start perf --cc with the defaults on a connected client, printing one line.
 * Returns 0, or a negative code with err filled. */
int cli_perf_cc_start(struct dap_client *dc, struct pb_err *err);
int cli_perf_torch_stop(struct dap_client *dc, int *stopped, struct pb_err *err);
/* perf --torch's Chrome trace (cli_perf_torch.c) of steps, rows (step, start_time, duration,
 * loss) of python.torch_steps, traced, in order, at least one: a root the caller deletes, with
 * *nevents module calls; or NULL with err filled. */
cJSON *cli_torch_trace(struct dap_client *dc, int pid, const cJSON *steps, int *nevents,
                       struct pb_err *err);

/* cli_eval.c: evaluate code through probing/eval on a connected client, printing what it
 * printed, the result, or the traceback (stderr). Ctrl-C meanwhile interrupts the evaluation.
 * Returns CLI_OK, CLI_FAIL (the code raised), or a negative code with err filled. */
int cli_eval_run(struct dap_client *dc, const char *code, struct pb_err *err);
/* Whether code is a complete input (Python's REPL rules, decided in the target). */
int cli_eval_complete(struct dap_client *dc, const char *code, int *complete, struct pb_err *err);

#endif
