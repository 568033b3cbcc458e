/* SPDX-License-Identifier: MIT */
/* The probing CLI's cross-file declarations: target resolution, making sure the probe is loaded,
 * connecting as a DAP client, and the commands (cli_<command>.c). */
#ifndef CLI_H
#define CLI_H

#include <sys/types.h>

#include "dap.h"
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
/* Connect to an already-loaded probe's socket, waiting up to timeout_ms for it to appear. */
int cli_connect_pid(pid_t pid, int timeout_ms, struct dap_client *c, struct pb_err *err);
int cli_handshake(struct dap_client *c, const char *token, struct pb_err *err);
void cli_disconnect(struct dap_client *c);

/* Commands: argc/argv start at the command name. */
int cli_cmd_inject(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_debug(const struct cli_opts *o, int argc, char **argv);
int cli_cmd_list(const struct cli_opts *o, int argc, char **argv);

#endif
