/* SPDX-License-Identifier: MIT */
/* `probing -p PID inject [-l|--listen HOST:PORT]`: load the probe (a second call finds it loaded
 * and just connects), check that it answers, and optionally have it serve DAP on TCP with a
 * token (from $PROBING_TOKEN, else generated and printed). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static void help(void)
{
    printf("usage: probing -p PID inject [-l|--listen HOST:PORT] [-c|--crash] [-P|--pprof] [--json]\n"
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

/* Reads len random bytes from /dev/urandom (a character device). Returns 0 or -errno. */
static int urandom_read(unsigned char *raw, size_t len)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : S_ISCHR(st.st_mode) ? 0 : -ENODEV;
    for (size_t got = 0; rc == 0 && got < len;) {
        ssize_t n = read(fd, raw + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = n < 0 ? -errno : -EIO;
        else
            got += (size_t)n;
    }
    close(fd);
    return rc;
}

/* A fresh token of 32 hex characters from getrandom(2), else /dev/urandom (getrandom may be
 * missing, or refused by a seccomp filter). With neither, no token: never a predictable one. */
static int token_make(char *buf, size_t n, struct pb_err *err)
{
    unsigned char raw[16];
    size_t got = 0;
    int grc = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            grc = r < 0 ? -errno : -EIO;
            break;
        }
        got += (size_t)r;
    }
    if (grc < 0) {
        int urc = urandom_read(raw, sizeof raw);
        if (urc < 0)
            return pb_err_set(err, urc, "no random source for a TCP token (getrandom: %s; "
                              "/dev/urandom: %s): set PROBING_TOKEN to a secret of %d to %d "
                              "characters", strerror(-grc), strerror(-urc), PB_TOKEN_MIN,
                              PB_TOKEN_MAX);
    }
    for (size_t i = 0; i < sizeof raw && 2 * i + 2 < n; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    memset(raw, 0, sizeof raw);
    return 0;
}

int cli_token_check(const char *token, struct pb_err *err)
{
    size_t len = strlen(token);
    if (len > PB_TOKEN_MAX)
        return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN is %zu characters long: the limit is %d",
                          len, PB_TOKEN_MAX);
    return 0;
}

int cli_token_choose(char *buf, size_t n, struct pb_err *err)
{
    const char *env = getenv("PROBING_TOKEN");
    if (env && *env) {
        if (cli_token_check(env, err) < 0)
            return err->code;
        if (strlen(env) < PB_TOKEN_MIN)
            return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN is %zu characters long: a TCP "
                              "listener needs %d to %d", strlen(env), PB_TOKEN_MIN, PB_TOKEN_MAX);
        if (strlen(env) >= n)
            return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN does not fit in %zu bytes", n);
        pb_strlcpy(buf, env, n);
        return 0;
    }
    int rc = token_make(buf, n, err);
    return rc < 0 ? rc : 1;
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
            fprintf(stderr, "probing: note: %s is the original Probing's and is not read here: "
                    "%s%d%s\n", vars[i].var, vars[i].before, (int)pid, vars[i].after);
        }
}

int cli_cmd_inject(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, 0, 'l'}, {"help", no_argument, 0, 'h'},
        {"crash", no_argument, 0, 'c'},        {"no-crash", no_argument, 0, 'C'},
        {"pprof", no_argument, 0, 'P'},        {"json", no_argument, 0, 'J'},
        {0, 0, 0, 0}};
    const char *listen = NULL;
    int c, crash = -1, pprof = 0, json = 0;
    while ((c = getopt_long(argc, argv, "l:hcP", longopts, NULL)) != -1) {
        if (c == 'l')
            listen = optarg;
        else if (c == 'P')
            pprof = 1;
        else if (c == 'J')
            json = 1;
        else if (c == 'c' || c == 'C')
            crash = c == 'c';
        else if (c == 'h') {
            help();
            return CLI_OK;
        } else
            return cli_bad_option("inject", argv);
    }
    if (optind < argc) {
        cli_error("inject: unexpected argument '%s'", argv[optind]);
        return CLI_USAGE;
    }
    if (json && (crash >= 0 || pprof)) {
        cli_error("inject: --json goes with --listen only: run --crash or --pprof separately");
        return CLI_USAGE;
    }
    if (o->target.pid <= 0) {
        cli_error("inject needs a local process: probing -p PID inject");
        return CLI_USAGE;
    }
    struct pb_err err = {0};
    struct dap_client dc;
    char version[32] = "", token[PB_TOKEN_MAX + 1] = "";
    int generated = 0;
    /* Before anything reaches the target: a token that cannot be made stops here. */
    if (listen && (generated = cli_token_choose(token, sizeof token, &err)) < 0) {
        cli_error("inject --listen: %s", err.msg);
        return CLI_FAIL;
    }
    int injected = 0;
    pid_t pid = o->target.pid;
    dap_client_init(&dc, o->timeout_ms);
    int rc = cli_probe_ensure(pid, &injected, version, sizeof version, &err);
    if (rc == 0)
        rc = cli_connect_pid(pid, 5000, &dc, &err);
    if (rc == 0)
        rc = cli_handshake(&dc, NULL, &err);
    cJSON *info = NULL;
    if (rc == 0)
        rc = dap_client_request(&dc, "probing/info", NULL, &info, &err);
    if (rc < 0) {
        cli_error("%s", err.msg);
        dap_client_close(&dc);
        return CLI_FAIL;
    }
    const cJSON *py = cJSON_GetObjectItemCaseSensitive(info, "python");
    const cJSON *sock = cJSON_GetObjectItemCaseSensitive(info, "socket");
    const char *pyv = cJSON_IsString(py) ? py->valuestring : version;
    const char *sockp = cJSON_IsString(sock) ? sock->valuestring : "?";
    cJSON *out = NULL;
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
    cJSON_Delete(info);
    if (listen) {
        cJSON *args = cJSON_CreateObject(), *body = NULL;
        cJSON_AddStringToObject(args, "address", listen);
        cJSON_AddStringToObject(args, "token", token);
        rc = dap_client_request(&dc, "probing/listen", args, &body, &err);
        if (rc < 0) {
            cli_error("%s", err.msg);
            cJSON_Delete(out);
            cli_disconnect(&dc);
            return CLI_FAIL;
        }
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
        cJSON_Delete(body);
    }
    if (crash >= 0 && cli_crash_set(&dc, crash, &err) < 0) {
        cli_error("inject: crash capture: %s", err.msg);
        cJSON_Delete(out);
        cli_disconnect(&dc);
        return CLI_FAIL;
    }
    if (pprof && cli_perf_cc_start(&dc, &err) < 0) {
        cli_error("inject: --pprof: %s", err.msg);
        cJSON_Delete(out);
        cli_disconnect(&dc);
        return CLI_FAIL;
    }
    cli_disconnect(&dc);
    if (out) {
        cli_print_json(out);
        cJSON_Delete(out);
    }
    env_notes(pid);
    return CLI_OK;
}
