/* SPDX-License-Identifier: MIT */
/* The probing CLI's cross-file declarations, by layer: the output helpers (output.c), the
 * TCP token (token.c), the target (target.c), the probe's socket (socket.c), making sure the
 * probe is loaded (load.c), the private library (ext_load.c; its sources are ext/, below all
 * of these), connecting as a DAP client (connect.c), and the commands (main.c's table: a file
 * per command, cluster/, perf/ and serve/ in folders with their own header). A file calls only
 * the layers above it in this list and never a command: no circle. */
#ifndef CLI_H
#define CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "dap/dap.h"
#include "injector/cli/ext/ext.h"
#include "pb.h"

/* Exit codes. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* The probe library's file name: CLI_PROBE_LIB_PREFIX "3.X.so" (libprobing-3.12.so). */
#define CLI_PROBE_LIB_PREFIX "libprobing-"

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

/* ---- output.c: errors, usage, printing response bodies ---- */

/* Prints "probing: error: <msg>" on stderr, the message made safe for a terminal as cli_tx. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For getopt's '?' in a command: prints "probing: error: CMD: unknown option ..." and returns
 * CLI_USAGE. Commands set opterr = 0 first. */
int cli_bad_option(const char *cmd, char **argv);
/* When getopt leaves argv[optind], an argument the command does not take: prints
 * "probing: error: CMD: unexpected argument ..." and returns CLI_USAGE. */
int cli_unexpected_arg(const char *cmd, char **argv);
/* The options of a command that has none but -h/--help: -1 to go on (optind at the first
 * argument), CLI_OK after printing help(), or CLI_USAGE after an unknown option. */
int cli_help_only(const char *cmd, int argc, char **argv, void (*help)(void));
/* Reading response bodies: a string member or NULL; a number member or dflt; 1 only for a
 * JSON true. cli_print_json prints a value as indented JSON on stdout. */
const char *cli_json_str(const cJSON *o, const char *k);
double cli_json_num(const cJSON *o, const char *k, double dflt);
int cli_json_true(const cJSON *o, const char *k);
void cli_print_json(const cJSON *v);
/* Text for the terminal: s (a string the target chose: a function, file, thread or module
 * name, argv, an environment value, a table cell, a host name) with its control characters
 * shown as escapes (pb_term_escape: C0 with tab and newline, DEL, C1, invalid UTF-8). s itself
 * when it has none; else a copy that stays valid for the next 63 calls (a ring: use it within
 * one print). NULL for NULL. JSON output never goes through it: cJSON escapes and stays exact.
 * cli_json_text is cli_tx(cli_json_str(o, k)). */
const char *cli_tx(const char *s);
const char *cli_json_text(const cJSON *o, const char *k);
/* Print a response body as JSON (json) or with text(), then delete it. Returns CLI_OK. */
int cli_print_body(cJSON *body, int json, void (*text)(const cJSON *));
/* dumptext.c: prints a probing/dump body as text (threads, frames, merged native frames). */
void cli_dump_print(const cJSON *d);
/* demangle.c: a C++ symbol (_Z...) as C++ (libstdc++'s __cxa_demangle, from libstdc++.so.6
 * dlopened at the first mangled name): into buf, returned; name itself when it is no mangled
 * name, cannot be demangled or libstdc++ is missing. */
const char *cli_demangle(const char *name, char *buf, size_t n);
/* The "name" of each native frame in frames demangled in place (cli_demangle). */
void cli_demangle_frames(const cJSON *frames);
/* A folded stack ("a;b;c") with its mangled frames demangled: malloc'd, or NULL when none was
 * (or out of memory: the caller keeps folded). */
char *cli_demangle_folded(const char *folded);
/* Prints a probing/dump frame's locals, one "name = value  (type)" per line after indent. */
void cli_print_locals(const cJSON *frame, const char *indent);
/* Prints a probing/query body {columns, rows} as an aligned table with a "(N rows)" line, a
 * JSON array of objects, or RFC 4180 CSV. Returns 0 or -1. */
enum { CLI_FMT_TABLE, CLI_FMT_JSON, CLI_FMT_CSV };
int cli_query_print(const cJSON *body, int fmt);

/* ---- token.c: the token of a probe listening on TCP ---- */

/* $PROBING_TOKEN (returns 0), else a fresh random one in hex (returns 1: the caller prints
 * it), or a negative code with err filled: a $PROBING_TOKEN out of PB_TOKEN_MIN..PB_TOKEN_MAX
 * (PB_EUSAGE), no random source. */
int cli_token_choose(char *buf, size_t n, struct pb_err *err);
/* PB_EUSAGE with err filled when token is longer than PB_TOKEN_MAX, else 0. */
int cli_token_check(const char *token, struct pb_err *err);

/* ---- target.c: the target, and what /proc says of a process ---- */

/* Parses "PID" or "HOST:PORT". */
int cli_target_parse(const char *s, struct cli_target *t, struct pb_err *err);
/* The command line of pid with its NULs as spaces (empty when unreadable), into buf. */
void cli_proc_cmdline(pid_t pid, char *buf, size_t n);
/* The value after "\nKey:" in a /proc/PID/status text: the first number, or the last one when
 * last is set; -1 when absent. */
long cli_proc_status_value(const char *status, const char *key, int last);
/* Milliseconds on the monotonic clock. */
long long cli_now_ms(void);

/* ---- socket.c: the probe's Unix socket, reached through /proc/PID/root ---- */

/* The socket path of pid's probe as reachable from here, and the effective uid of pid (the
 * owner its directory and socket must have; uid may be NULL). */
int cli_socket_locate(pid_t pid, char *buf, size_t n, uid_t *uid, struct pb_err *err);
/* Before connecting: the socket's directory and the socket are the probe's (owned by uid, not
 * links, 0700). Whatever does not exist yet passes. 0 or PB_EAUTH with err filled. */
int cli_socket_check(const char *path, uid_t uid, struct pb_err *err);
/* Connect to an already-loaded probe's socket, waiting up to timeout_ms for it to appear. */
int cli_connect_pid(pid_t pid, int timeout_ms, struct dap_client *c, struct pb_err *err);

/* ---- load.c: making sure the probe is loaded ---- */

/* Where the probe libraries are: $PROBING_LIBDIR, else <exe dir>/../lib/probing. */
int cli_libdir(char *buf, size_t n);
/* readonly.c: the probing/dump body of a live process read from outside with the probe's own
 * walker (libprobing-read-3.X.so), nothing loaded into it; names from the kernel; locals (when
 * asked) read from memory, simple values only ("localsVia": "memory"). NULL with err filled. */
cJSON *cli_read_dump(pid_t pid, int max_frames, int locals, struct pb_err *err);
/* The same, with tasks: the asyncio tasks in "asyncio" (3.14+; before, PB_EUSAGE). */
cJSON *cli_read_dump_tasks(pid_t pid, int max_frames, int locals, int tasks, struct pb_err *err);
/* children.c: --subprocesses. The target's descendants (breadth first, at most
 * CLI_CHILDREN_MAX; *more counts those left out) and each one's parent; returns how many. */
#define CLI_CHILDREN_MAX 64
int cli_children_find(pid_t pid, pid_t *out, pid_t *parent, int max, int *more);
/* Each descendant read from outside (cli_read_dump: nothing loaded, nothing stopped): the dump
 * body plus ppid, comm, cmdline, role (and workerId, numWorkers of a DataLoader worker); a child
 * not read (another uid, a zombie, no Python, a failed read) with python null and "note". */
cJSON *cli_children_read(pid_t pid, int locals, int max_frames, int *left_out);
/* Adds "children" (and "childrenLeftOut") to a dump body; cli_children_print prints them. */
void cli_children_add(cJSON *body, pid_t pid, int locals, int max_frames);
void cli_children_print(const cJSON *d);
/* The parts, for other memory (core.c): rd reads the target (0 or -1, never faults); ver the
 * CPython major, minor, micro (-1 unknown); addrs the runtime addresses of cli_read_syms found
 * in source. NULL with err filled. cli_read_finish adds names (from /proc when live > 0: then
 * also native ids before 3.11) and the GIL holder. */
typedef int (*cli_read_fn)(uintptr_t addr, void *dst, size_t n);
#define CLI_READ_NSYMS \
    17 /* the first 5 needed; the others (types for locals, then for
                            asyncio tasks) optional */
extern const char *const cli_read_syms[CLI_READ_NSYMS];
cJSON *cli_read_stacks(cli_read_fn rd, int pid, const int ver[3],
                       const unsigned long addrs[CLI_READ_NSYMS], const char *source,
                       int max_frames, int locals, struct pb_err *err);
void cli_read_finish(cJSON *body, pid_t live);
/* asyncio tasks read from outside (3.14+ keeps them on lists; pyrt/asyncio_mem.c):
 * cli_read_tasks_check refuses older versions (PB_EUSAGE, the line naming how: "without the
 * probe", "from a core"); cli_read_tasks_add adds the probing/dump "asyncio" object to body,
 * read with rd using the offsets of ".AsyncioDebug" (CLI_ASYNCIO_NOFFS of them, NULL: not
 * found, why says why), or {read: false, error} when they cannot be read; offs and why both
 * NULL: asyncio is not loaded, no task. */
#define CLI_ASYNCIO_NOFFS 13
int cli_read_tasks_check(const int ver[3], const char *how, struct pb_err *err);
void cli_read_tasks_add(cJSON *body, cli_read_fn rd, const int ver[3],
                        const unsigned long addrs[CLI_READ_NSYMS], const uint64_t *offs,
                        const char *why);
/* A thread's native stack from its registers (pc, sp, frame pointer) with the probe's own
 * unwinder (the reader for CPython ver) over memory rd and the modules mods (each: executable
 * range and the address of its ELF header). The count of pcs in out, or -1 with err. */
struct cli_read_mod {
    uintptr_t lo, hi, base;
};
int cli_read_unwind(const int ver[3], cli_read_fn rd, const uintptr_t regs[3],
                    const struct cli_read_mod *mods, int nmods, uintptr_t *out, int max,
                    struct pb_err *err);
/* Before 3.11: native ids from glibc's pthread tid field (read with rd), each kept when
 * is_task(tid) says the process has that thread. */
void cli_read_native_ids(cJSON *body, cli_read_fn rd, int (*is_task)(long tid));
/* core.c: the probing/dump body (with "core") of a core file, read with the same walker;
 * exe (may be NULL) names the interpreter when the core's mappings do not; sysroot (may be NULL)
 * is where the mapped files are looked for first. native: 1 merged native frames, 2 all of them
 * (as debug --dump --native[=all]); locals: each frame's locals read from the core's memory,
 * simple values only. NULL with err filled. */
cJSON *cli_core_dump(const char *path, const char *exe, const char *sysroot, int max_frames,
                     int native, int locals, int tasks, struct pb_err *err);
/* Make sure pid has the probe loaded, injecting it if needed; *injected tells which. */
int cli_probe_ensure(pid_t pid, int *injected, char *version, size_t vn, struct pb_err *err);
/* The same for a caller that read pid's maps a moment ago and found no probe mapped (cluster's
 * ranks, found so): no second read before the lock (the check under the lock reads them). */
int cli_probe_ensure_unloaded(pid_t pid, int *injected, char *version, size_t vn,
                              struct pb_err *err);
/* Removes the lock files of injections into processes that are gone (a command killed while it
 * injected) now, once for this command and the children it forks after: cli_probe_ensure then
 * leaves that sweep out. */
void cli_inject_lock_sweep_once(void);

/* ---- ext_load.c: the CLI's private library (probing-cli.so, ext/ext.h) ---- */

/* Loads it from cli_libdir once, for the commands that need libdw, libedit or SQLite (the
 * others never do, so they never map those libraries): its table, or NULL with err filled. */
const struct cli_ext *cli_ext_load(struct pb_err *err);
/* Whether it is there to be loaded later (readable in cli_libdir), without loading it: 0, or
 * -1 with err filled as cli_ext_load would. */
int cli_ext_check(struct pb_err *err);

/* ---- connect.c: the CLI as a DAP client ---- */

/* initialize, then attach as a CLI client (token: TCP's, or NULL), in one round trip. */
int cli_handshake(struct dap_client *c, const char *token, struct pb_err *err);
/* The same, sent ahead: the caller's next dap_client_request waits for the three answers and
 * reports the first failure (one round trip instead of two before a command's request). */
int cli_handshake_ahead(struct dap_client *c, const char *token, struct pb_err *err);
/* Connect to the target (injecting into a local pid first if needed), then initialize and
 * attach as a CLI client. */
int cli_connect(const struct cli_opts *o, struct dap_client *c, struct pb_err *err);
/* cli_connect, printing the error (one line) when it fails. Returns 0 or -1. */
int cli_open(const struct cli_opts *o, struct dap_client *c);
/* A disconnect request, its answer awaited (what it undoes is done when this returns), then
 * close. */
void cli_disconnect(struct dap_client *c);
/* The same request sent, not awaited, then close: for a session that set nothing a disconnect
 * undoes (inject without -c/-P), whose command then ends a round trip sooner (a wake-up of the
 * probe's loop thread, which on a busy target can wait milliseconds for a CPU). */
void cli_disconnect_nowait(struct dap_client *c);
/* One request on a fresh connection: connect (injecting if needed), send (args taken),
 * disconnect. Returns the body (caller deletes), or NULL after printing
 * "probing: error: <what>: <message>" (what may be NULL). */
cJSON *cli_call(const struct cli_opts *o, const char *what, const char *command, cJSON *args);
/* cli_call for a request that reads only (probing/dump without a pause): its disconnect is
 * sent, not awaited (cli_disconnect_nowait). */
cJSON *cli_call_read(const struct cli_opts *o, const char *what, const char *command, cJSON *args);
/* One probing/query of sql on a connected client: the body (caller deletes), or NULL with err
 * filled. */
cJSON *cli_query(struct dap_client *dc, const char *sql, struct pb_err *err);
/* On a connected client: wait for each answer base_ms plus the probe's query.timeout_ms, as
 * long as a query may take there. */
void cli_query_wait(struct dap_client *dc, int base_ms);

/* ---- the commands ---- */

/* A command: argc/argv start at the command name; returns an exit code (CLI_*). */
typedef int cli_cmd_fn(const struct cli_opts *o, int argc, char **argv);
/* `inject`'s command line, parsed before the target is touched (inject.c): CLI_OK (help: print
 * the help only), or CLI_USAGE after printing one line. */
struct cli_inject_cmd {
    const char *listen; /* -l HOST:PORT, or NULL */
    int crash;          /* -c 1, --no-crash 0, neither -1 */
    int pprof, json, help;
    pid_t pid; /* the global -p */
};
int cli_inject_parse(const struct cli_opts *o, int argc, char **argv, struct cli_inject_cmd *cmd);
/* main.c's table: a file each (inject.c, debug.c, ..., query.c has tables too). */
cli_cmd_fn cli_cmd_inject, cli_cmd_debug, cli_cmd_dump, cli_cmd_list, cli_cmd_query, cli_cmd_tables,
    cli_cmd_config, cli_cmd_eval, cli_cmd_repl, cli_cmd_backtrace, cli_cmd_memory;
/* flamegraph (flamegraph.c): render perf --cc's samples (injector/render/flame.h). record
 * (record.c): sample for a while, then render the same way (docs/flamegraph.md). */
cli_cmd_fn cli_cmd_flamegraph, cli_cmd_record;
enum { CLI_FG_SVG, CLI_FG_FOLDED, CLI_FG_SPEEDSCOPE, CLI_FG_CHROME, CLI_FG_PPROF };
/* What to render of the profile, and where. */
struct cli_fg_opts {
    const char *cmd;                /* "flamegraph" or "record", for messages */
    const char *out, *title, *mode; /* out NULL: stdout; mode NULL: any */
    int fmt, fmt_set, width;        /* CLI_FG_*; fmt_set: given (else guessed from out) */
    int all;                        /* --native=all: every frame (perf.stacks.folded_all) */
    int gil, idle;                  /* --gil: only samples holding the GIL; --idle: off-CPU too */
    long long thread;               /* > 0: only this thread */
    double since;                   /* > 0: only the last since seconds of the profile */
    double after;                   /* > 0: only samples taken after this time (epoch s) */
    const char *diff;               /* --diff FILE: a differential SVG against FILE (folded) */
    /* --window FROM:TO: only samples taken FROM to TO seconds after the profile's first
     * (to: INFINITY when left out); --diff-window FROM:TO: a differential SVG against that
     * window of the same profile (this one: --window, else what follows the other's TO). */
    double win[2], dwin[2];
    int win_set, dwin_set;
    struct flame_tree *before; /* FILE's stacks, read by cli_fg_preload */
};
/* The CLI_FG_* of a format's name, or -1. */
int cli_fg_format(const char *name);
/* Sets o->fmt from o->out's extension unless the format was given. */
void cli_fg_format_guess(struct cli_fg_opts *o);
/* Applies the option c ('o' -o, 'f' -f, 'T' --thread, 's' --since, 'm' --mode, 't' --title,
 * 'w' --width, 'D' --diff, 'n' --native[=all], 'G' --gil, 'I' --idle, 'W' --window,
 * 'X' --diff-window) with its argument: 0; CLI_USAGE after printing why; 1 when c is none of them. */
int cli_fg_option(struct cli_fg_opts *o, int c, const char *arg);
/* Loads what o needs before the target is touched: the private library for pprof, --diff's
 * file. 0, or CLI_USAGE / CLI_FAIL after printing one line. cli_fg_close frees it. */
int cli_fg_preload(struct cli_fg_opts *o);
void cli_fg_close(struct cli_fg_opts *o);
/* On a connected client: the profile rendered as o says, with a "wrote FILE: ..." line on
 * stdout when written to a file. CLI_OK, or CLI_FAIL after printing one error line. */
int cli_fg_render(struct dap_client *dc, pid_t pid, const struct cli_fg_opts *o);
/* cluster list|stacks|query|dump|hosts (cluster/, docs/cluster.md). */
cli_cmd_fn cli_cmd_cluster;
/* perf --cc, perf --torch, perf --stop (perf/, perf/perf.h). */
cli_cmd_fn cli_cmd_perf;
cli_cmd_fn cli_cmd_top; /* perf/top.c */
/* serve (serve/, docs/http.md): the web UI and HTTP API. */
cli_cmd_fn cli_cmd_serve;

/* On a connected client: the perf --cc profile rendered as format (svg, folded, speedscope,
 * chrometrace, pprof) to f, with flt's filters (thread, since, gil, idle, all; NULL: none).
 * Returns 0, or -1 with err filled (-ENOENT: no samples yet). */
int cli_flamegraph_write(struct dap_client *dc, pid_t pid, const char *format,
                         const struct cli_fg_opts *flt, FILE *f, struct pb_err *err);
/* eval.c: evaluate code through probing/eval on a connected client, printing what it
 * printed, the result, or the traceback (stderr). Ctrl-C meanwhile interrupts the evaluation.
 * Returns CLI_OK, CLI_FAIL (the code raised), or a negative code with err filled. */
int cli_eval_run(struct dap_client *dc, const char *code, struct pb_err *err);
/* Whether code is a complete input (Python's REPL rules, decided in the target). */
int cli_eval_complete(struct dap_client *dc, const char *code, int *complete, struct pb_err *err);

#endif
