/* SPDX-License-Identifier: MIT */
/* `probing -p PID inject [-l|--listen HOST:PORT]`: load the probe (a second call finds it loaded
 * and just connects), check that it answers, and optionally have it serve DAP on TCP with a
 * token (from $PROBING_TOKEN, else generated and printed). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "injector/cli/perf/perf.h"

static void help(void)
{
    printf(
        "usage: probing -p PID inject [-l|--listen HOST:PORT] [-c|--crash] [-P|--pprof] [--json]\n"
        "\n"
        "Load the probe into the running Python process PID (ptrace + dlopen; no restart).\n"
        "If it is already loaded, just check that it answers.\n"
        "\n"
        "  -l, --listen HOST:PORT  also serve DAP on TCP (port 0 picks a free port); clients\n"
        "                          must send the token in 'attach': $PROBING_TOKEN if set,\n"
        "                          else a generated one, printed here\n"
        "  -c, --crash             crash capture: on SIGSEGV, SIGBUS, SIGILL, SIGFPE or\n"
        "                          SIGABRT write the native and Python stacks to a file\n"
        "                          (setting crash.path), then let the signal go on to the\n"
        "                          handler that was there before (docs/crash.md)\n"
        "      --no-crash          disarm crash capture, putting the old handlers back\n"
        "  -P, --pprof             start perf --cc sampling at once (100 Hz, CPU time);\n"
        "                          'probing -p PID perf --stop' stops it (docs/perf.md)\n"
        "      --json              print one JSON object instead (not with -c or -P): pid,\n"
        "                          state (loaded or already loaded), python, socket (as\n"
        "                          the target sees it), reachable (the same socket from\n"
        "                          here, through /proc/PID/root); with --listen, address\n"
        "                          and token\n");
}

/* The original Probing's environment variables that the probe does not read: one note each on
 * stderr, naming what to use instead (docs/migrating.md). Silent when /proc/PID/environ cannot
 * be read. */
static void env_notes(pid_t pid)
{
    static const struct {
        const char *var, *before, *after; /* what to use: before PID after */
    } vars[] = {
        {"PROBING_SAMPLE_RATE", "trace one torch step in N with 'probing -p ",
         " perf --torch --every N' (N = 1/rate)"},
        {"PROBING_TORCH_PROFILING", "trace torch modules with 'probing -p ",
         " perf --torch --every N'"},
        {"PROBING_PORT", "serve TCP with 'probing -p ",
         " inject --listen 127.0.0.1:PORT' (or PROBING_LISTEN=HOST:PORT at start)"},
        {"PROBING_SERVER_ADDR", "serve TCP with 'probing -p ",
         " inject --listen HOST:PORT' (or PROBING_LISTEN=HOST:PORT at start)"},
        {"PROBING_AUTH_TOKEN", "the TCP token is PROBING_TOKEN ('probing -p ",
         " inject --listen HOST:PORT' prints one when it is not set)"},
    };
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1)
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
            size_t l = strlen(vars[i].var);
            if (strncmp(buf + at, vars[i].var, l) != 0 || buf[at + l] != '=')
                continue;
            fprintf(stderr,
                    "probing: note: %s is the original Probing's and is not read here: "
                    "%s%d%s\n",
                    vars[i].var, vars[i].before, (int)pid, vars[i].after);
        }
}

/* -c/--crash, --no-crash: arm (enable 1) or disarm crash capture through probing/crash
 * (docs/crash.md) on a connected client, printing where a report will go. Returns 0 or a
 * negative code with err filled. */
static int crash_set(struct dap_client *dc, int enable, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddBoolToObject(args, "enable", enable);
    int rc = dap_client_request(dc, "probing/crash", args, &body, err);
    if (rc < 0)
        return rc;
    const char *path = cli_json_str(body, "path");
    int changed = cli_json_true(body, "changed");
    if (enable)
        printf("crash capture %s: a crash writes %s, then goes on to the previous handler\n",
               changed ? "armed" : "already armed", path ? path : "?");
    else
        printf("crash capture %s\n",
               changed ? "disarmed: previous handlers restored" : "was not armed");
    cJSON_Delete(body);
    return 0;
}

int cli_inject_parse(const struct cli_opts *o, int argc, char **argv, struct cli_inject_cmd *cmd)
{
    static const struct option longopts[] = {{"listen", required_argument, 0, 'l'},
                                             {"help", no_argument, 0, 'h'},
                                             {"crash", no_argument, 0, 'c'},
                                             {"no-crash", no_argument, 0, 'C'},
                                             {"pprof", no_argument, 0, 'P'},
                                             {"json", no_argument, 0, 'J'},
                                             {0, 0, 0, 0}};
    *cmd = (struct cli_inject_cmd){.crash = -1, .pid = o->target.pid};
    int c;
    while ((c = getopt_long(argc, argv, "l:hcP", longopts, NULL)) != -1) {
        if (c == 'l')
            cmd->listen = optarg;
        else if (c == 'P')
            cmd->pprof = 1;
        else if (c == 'J')
            cmd->json = 1;
        else if (c == 'c' || c == 'C')
            cmd->crash = c == 'c';
        else if (c == 'h') {
            cmd->help = 1;
            return CLI_OK;
        } else
            return cli_bad_option("inject", argv);
    }
    if (optind < argc)
        return cli_unexpected_arg("inject", argv);
    if (cmd->json && (cmd->crash >= 0 || cmd->pprof)) {
        cli_error("inject: --json goes with --listen only: run --crash or --pprof separately");
        return CLI_USAGE;
    }
    if (cmd->pid <= 0) {
        cli_error("inject needs a local process: probing -p PID inject");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Runs a parsed inject: loads the probe (or finds it), then what the options ask of it. */
static int act(const struct cli_inject_cmd *cmd, int timeout_ms)
{
    const char *listen = cmd->listen;
    int crash = cmd->crash, pprof = cmd->pprof, json = cmd->json;
    struct pb_err err = {0};
    struct dap_client dc;
    char version[32] = "", token[PB_TOKEN_MAX + 1] = "";
    int generated = 0;
    /* Before anything reaches the target: a token that cannot be made stops here. */
    if (listen && (generated = cli_token_choose(token, sizeof token, &err)) < 0) {
        cli_error("inject --listen: %s", err.msg);
        return CLI_FAIL;
    }
    int injected = 0, connected = 0;
    const char *what = NULL; /* the failing step's name in the error, NULL: err.msg says it */
    pid_t pid = cmd->pid;
    cJSON *info = NULL, *out = NULL, *body = NULL;
    dap_client_init(&dc, timeout_ms);
    int rc = cli_probe_ensure(pid, &injected, version, sizeof version, &err);
    if (rc == 0)
        rc = cli_connect_pid(pid, 5000, &dc, &err);
    if (rc == 0)
        rc = cli_handshake_ahead(&dc, NULL, &err);
    if (rc == 0)
        rc = dap_client_request(&dc, "probing/info", NULL, &info, &err);
    if (rc < 0)
        goto out; /* the probe did not answer: closed without a disconnect request */
    connected = 1;
    const cJSON *py = cJSON_GetObjectItemCaseSensitive(info, "python");
    const cJSON *sock = cJSON_GetObjectItemCaseSensitive(info, "socket");
    const char *pyv = cJSON_IsString(py) ? py->valuestring : version;
    const char *sockp = cJSON_IsString(sock) ? sock->valuestring : "?";
    if (json) {
        char reach[600];
        snprintf(reach, sizeof reach, "/proc/%d/root%s", (int)pid, sockp);
        out = cJSON_CreateObject();
        cJSON_AddNumberToObject(out, "pid", (double)pid);
        cJSON_AddStringToObject(out, "state", injected ? "loaded" : "already loaded");
        cJSON_AddStringToObject(out, "python", pyv);
        cJSON_AddStringToObject(out, "socket", sockp);
        cJSON_AddStringToObject(out, "reachable", reach);
    } else {
        printf("probe %s in %d (CPython %s), socket %s\n", injected ? "loaded" : "already loaded",
               (int)pid, pyv, sockp);
    }
    if (listen) {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "address", listen);
        cJSON_AddStringToObject(args, "token", token);
        if ((rc = dap_client_request(&dc, "probing/listen", args, &body, &err)) < 0)
            goto out;
        const cJSON *addr = cJSON_GetObjectItemCaseSensitive(body, "address");
        const char *a = cJSON_IsString(addr) ? addr->valuestring : listen;
        if (out) {
            cJSON_AddStringToObject(out, "address", a);
            cJSON_AddStringToObject(out, "token", token);
        } else {
            printf("listening on %s\n", a);
            if (generated)
                printf("token: %s\n", token);
        }
    }
    if (crash >= 0 && (rc = crash_set(&dc, crash, &err)) < 0) {
        what = "inject: crash capture";
        goto out;
    }
    if (pprof && (rc = cli_perf_cc_start(&dc, &err)) < 0) {
        what = "inject: --pprof";
        goto out;
    }
out:
    if (connected && crash < 0 && !pprof && rc == 0)
        cli_disconnect_nowait(&dc);
    else if (connected)
        cli_disconnect(&dc);
    else
        dap_client_close(&dc);
    cJSON_Delete(info);
    cJSON_Delete(body);
    if (rc < 0) {
        if (what)
            cli_error("%s: %s", what, err.msg);
        else
            cli_error("%s", err.msg);
        cJSON_Delete(out);
        return CLI_FAIL;
    }
    if (out) {
        cli_print_json(out);
        cJSON_Delete(out);
    }
    env_notes(pid);
    return CLI_OK;
}

int cli_cmd_inject(const struct cli_opts *o, int argc, char **argv)
{
    struct cli_inject_cmd cmd;
    int rc = cli_inject_parse(o, argc, argv, &cmd);
    if (cmd.help)
        help();
    else if (rc == CLI_OK)
        rc = act(&cmd, o->timeout_ms);
    return rc;
}
