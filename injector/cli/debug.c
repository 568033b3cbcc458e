/* SPDX-License-Identifier: MIT */
/* `probing -p PID debug --dump [--locals] [--native[=all]] [--json]`: every Python thread's
 * stack (name, Python thread id, native id, GIL), innermost frame first, optionally with local
 * variables, or with native and Python frames merged (file:line of native frames added here
 * from DWARF, srcline.c); as text or as one JSON document (the probing/dump response body, see
 * docs/protocol.md).
 * `debug --pause [--address HOST:PORT]` and `debug --resume`: below. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf("usage: probing -p PID debug --dump [--locals] [--native[=all]] [--json]\n"
           "       probing -p PID debug --dump --no-inject [--json]\n"
           "       probing -p PID debug --pause [--address HOST:PORT]\n"
           "       probing -p PID debug --resume\n"
           "       ('d' and 'dbg' name debug too: probing -p PID d -d)\n"
           "\n"
           "Print every Python thread of the target: name, thread id, native id, whether it\n"
           "holds the GIL, and its frames innermost first (function, file, line). Works when\n"
           "a thread holds the GIL forever (stacks are read without the GIL).\n"
           "\n"
           "  -d, --dump      dump all threads' stacks\n"
           "      --locals    add each frame's local variables (bounded repr; needs the GIL:\n"
           "                  if it cannot be had in time, says so and shows stacks only)\n"
           "      --native    each thread's native (C) and Python frames merged, innermost\n"
           "                  first, each marked (Python) or (native): function+offset, object\n"
           "                  and file:line when the object has DWARF; CPython's own call\n"
           "                  machinery left out (--native=all keeps it). When the two stacks\n"
           "                  cannot be matched, says so and shows both\n"
           "      --no-inject read the stacks from outside (process_vm_readv), loading nothing\n"
           "                  into the target: no locals, thread names from the kernel\n"
           "      --json      print one JSON document instead of text\n"
           "  -p, --pause     stop every Python thread and keep the target stopped, serving\n"
           "                  DAP on TCP, until a debugger attaches and continues it or --resume\n"
           "  -a, --address HOST:PORT  where --pause listens (default 127.0.0.1:9922; port 0\n"
           "                  picks one); the token is $PROBING_TOKEN, else generated and printed\n"
           "      --resume    release a target stopped by --pause\n");
}

static pid_t dump_pid;

/* Adds file and line to the native frames of one list from DWARF (srcline.c). */
static void add_lines(const cJSON *frames)
{
    const cJSON *f;
    int i = 0;
    cJSON_ArrayForEach(f, frames)
    {
        const char *kind = cli_json_str(f, "kind"), *mod = cli_json_str(f, "module");
        const char *addr = cli_json_str(f, "address"), *bias = cli_json_str(f, "bias");
        char file[1024], func[512];
        int line = 0;
        unsigned long long off = 0;
        if (kind && strcmp(kind, "native") == 0 && mod && addr && bias) {
            unsigned long long pc = strtoull(addr, NULL, 16);
            /* return addresses (all but the innermost frame) point after their call */
            if (cli_srcline(dump_pid, mod, i > 0 && pc ? pc - 1 : pc, strtoull(bias, NULL, 16),
                            file, sizeof file, &line, func, sizeof func, &off) == 0) {
                if (file[0]) {
                    cJSON_AddStringToObject((cJSON *)f, "file", file);
                    cJSON_AddNumberToObject((cJSON *)f, "line", line);
                }
                /* a static function of a stripped object, named by its debug file */
                if (func[0] && !cli_json_str(f, "name")) {
                    cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)f, "name",
                                                           cJSON_CreateString(func));
                    cJSON_ReplaceItemInObjectCaseSensitive(
                        (cJSON *)f, "offset", cJSON_CreateNumber((double)(off + (i > 0))));
                }
            }
        }
        i++;
    }
}

static void add_native_lines(const cJSON *d)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d, "threads"))
        add_lines(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(t, "native"), "frames"));
}

static void print_nframe(const cJSON *f, const char *indent)
{
    const char *kind = cli_json_str(f, "kind");
    if (kind && strcmp(kind, "python") == 0) {
        printf("%s(Python) %s (%s:%d)\n", indent, cli_json_str(f, "name"),
               cli_json_str(f, "file"), (int)cli_json_num(f, "line", 0));
        return;
    }
    const char *name = cli_json_str(f, "name"), *mod = cli_json_str(f, "module");
    const char *base = mod ? strrchr(mod, '/') : NULL;
    if (name)
        printf("%s(native) %s+0x%llx", indent, name,
               (unsigned long long)cli_json_num(f, "offset", 0));
    else
        printf("%s(native) %s", indent, cli_json_str(f, "address"));
    printf(" in %s", base ? base + 1 : mod ? mod : "?");
    if (cli_json_str(f, "file"))
        printf(" (%s:%d)", cli_json_str(f, "file"), (int)cli_json_num(f, "line", 0));
    printf("\n");
}

/* The merged stack of thread t (debug --dump --native). */
static void print_native(const cJSON *t)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "native"), *f;
    if (!cli_json_true(n, "answered")) {
        printf("    note: native stack not read: %s\n", cli_json_str(n, "error"));
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
            printf("    (Python) %s (%s:%d)\n", cli_json_str(f, "name"), cli_json_str(f, "file"),
                   (int)cli_json_num(f, "line", 0));
        return;
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(n, "frames");
    if (cli_json_true(n, "merged")) {
        cJSON_ArrayForEach(f, frames)
            print_nframe(f, "    ");
        return;
    }
    printf("    note: unable to merge the native and Python stacks (%d eval-loop frames, %d "
           "Python entry frames): both shown\n    native:\n",
           (int)cli_json_num(n, "evalFrames", 0), (int)cli_json_num(n, "entryFrames", 0));
    cJSON_ArrayForEach(f, frames)
        print_nframe(f, "      ");
    printf("    Python:\n");
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(n, "pythonFrames"))
        print_nframe(f, "      ");
}

static void print_text(const cJSON *d)
{
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(d, "threads");
    const cJSON *gil = cJSON_GetObjectItemCaseSensitive(d, "gil");
    const cJSON *holder = cJSON_GetObjectItemCaseSensitive(gil, "holder");
    printf("Process %d, CPython %s, %d Python thread%s\n", (int)cli_json_num(d, "pid", 0),
           cli_json_str(d, "python") ? cli_json_str(d, "python") : "?", cJSON_GetArraySize(threads),
           cJSON_GetArraySize(threads) == 1 ? "" : "s");
    if (cJSON_IsNumber(holder))
        printf("GIL: held by thread %d\n", holder->valueint);
    else
        printf("GIL: not held\n");
    if (cli_json_str(d, "localsError"))
        printf("note: %s\n", cli_json_str(d, "localsError"));
    const cJSON *t;
    cJSON_ArrayForEach(t, threads)
    {
        char tags[128] = "";
        if (cli_json_true(t, "main"))
            strcat(tags, ", main");
        if (cli_json_true(t, "holdsGil"))
            strcat(tags, ", holds GIL");
        if (cli_json_true(t, "daemon"))
            strcat(tags, ", daemon");
        if (cli_json_true(t, "truncated"))
            strcat(tags, ", stack truncated");
        printf("\nThread %d \"%s\" (ident %.0f%s)\n", (int)cli_json_num(t, "id", 0),
               cli_json_str(t, "name") ? cli_json_str(t, "name") : "", cli_json_num(t, "ident", 0), tags);
        const cJSON *frames = cJSON_GetObjectItemCaseSensitive(t, "frames"), *f;
        if (cJSON_GetObjectItemCaseSensitive(t, "native")) {
            print_native(t);
            continue;
        }
        if (cJSON_GetArraySize(frames) == 0)
            printf("    (no Python frames)\n");
        cJSON_ArrayForEach(f, frames)
        {
            printf("    %s (%s:%d)\n", cli_json_str(f, "name"), cli_json_str(f, "file"),
                   (int)cli_json_num(f, "line", 0));
            cli_print_locals(f, "        ");
        }
    }
}

#define DEFAULT_ADDRESS "127.0.0.1:9922"

/* --pause: stop the target where it is and keep it stopped, serving DAP on TCP (with a token),
 * until a debugger attaches and continues it or --resume releases it; the way to debug a
 * process on a machine the debugger is not on (docs/cli.md). */
static int debug_pause(const struct cli_opts *o, const char *address)
{
    if (o->target.pid <= 0) {
        cli_error("debug --pause needs a local process: probing -p PID debug --pause");
        return CLI_USAGE;
    }
    struct pb_err err = {0};
    struct dap_client dc;
    char token[PB_TOKEN_MAX + 1];
    int generated = cli_token_choose(token, sizeof token, &err);
    if (generated < 0) {
        cli_error("debug --pause: %s", err.msg);
        return CLI_FAIL;
    }
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    cJSON *args = cJSON_CreateObject(), *body = NULL, *pbody = NULL;
    cJSON_AddStringToObject(args, "address", address ? address : DEFAULT_ADDRESS);
    cJSON_AddStringToObject(args, "token", token);
    int rc = dap_client_request(&dc, "probing/listen", args, &body, &err);
    if (rc == 0) {
        args = cJSON_CreateObject();
        cJSON_AddBoolToObject(args, "hold", 1);
        rc = dap_client_request(&dc, "probing/pause", args, &pbody, &err);
    }
    cli_disconnect(&dc);
    if (rc < 0) {
        cJSON_Delete(body);
        cli_error("debug --pause: %s", err.msg);
        return CLI_FAIL;
    }
    const char *addr = cli_json_str(body, "address");
    char host[128] = "127.0.0.1";
    int port = 9922;
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (colon) {
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        port = atoi(colon + 1);
    }
    printf("paused %d: it stays paused until a debugger attaches and continues it,\n"
           "or until: probing -p %d debug --resume\n"
           "DAP on %s:%d", (int)o->target.pid, (int)o->target.pid, host, port);
    if (generated)
        printf(", token %s\n", token);
    else
        printf(", token from $PROBING_TOKEN\n");
    printf("VS Code (probing extension), launch.json configuration:\n"
           "  {\"type\": \"probing\", \"request\": \"attach\", \"name\": \"probing %d\",\n"
           "   \"connect\": {\"host\": \"%s\", \"port\": %d}, \"token\": \"%s\"}\n"
           "Any other DAP client: connect to %s:%d and send \"token\" in the attach arguments.\n",
           (int)o->target.pid, host, port, generated ? token : "$PROBING_TOKEN", host, port);
    cJSON_Delete(body);
    cJSON_Delete(pbody);
    return CLI_OK;
}

static int debug_resume(const struct cli_opts *o)
{
    cJSON *body = cli_call(o, "debug --resume", "probing/resume", cJSON_CreateObject());
    int ok = body != NULL, was_stopped = cli_json_true(body, "wasStopped");
    cJSON_Delete(body);
    if (ok)
        printf(was_stopped ? "resumed %d\n" : "%d was not paused\n", (int)o->target.pid);
    return ok ? CLI_OK : CLI_FAIL;
}

int cli_cmd_debug(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"dump", no_argument, 0, 'd'}, {"locals", no_argument, 0, 'L'},
        {"native", optional_argument, 0, 'N'}, {"no-inject", no_argument, 0, 'R'},
        {"json", no_argument, 0, 'j'}, {"pause", no_argument, 0, 'p'},
        {"resume", no_argument, 0, 'r'}, {"address", required_argument, 0, 'a'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int dump = 0, locals = 0, json = 0, pause = 0, resume = 0, no_inject = 0, c;
    const char *address = NULL, *native = NULL;
    /* -d, -p, -a: the original Probing's short flags (docs/migrating.md). */
    while ((c = getopt_long(argc, argv, "hdpa:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dump = 1; break;
        case 'L': locals = 1; break;
        case 'R': no_inject = 1; break;
        case 'N':
            native = optarg ? optarg : "merged";
            if (strcmp(native, "merged") != 0 && strcmp(native, "all") != 0) {
                cli_error("debug: --native=%s: use --native or --native=all", native);
                return CLI_USAGE;
            }
            break;
        case 'j': json = 1; break;
        case 'p': pause = 1; break;
        case 'r': resume = 1; break;
        case 'a': address = optarg; break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("debug", argv);
        }
    }
    if (optind < argc)
        return cli_unexpected_arg("debug", argv);
    if (dump + pause + resume != 1) {
        cli_error("debug: use exactly one of --dump, --pause, --resume (see 'probing debug "
                  "--help')");
        return CLI_USAGE;
    }
    if ((address && !pause) || ((locals || json || native || no_inject) && !dump)) {
        cli_error("debug: %s only goes with %s",
                  address ? "--address" : "--locals/--native/--no-inject/--json",
                  address ? "--pause" : "--dump");
        return CLI_USAGE;
    }
    if (pause)
        return debug_pause(o, address);
    if (resume)
        return debug_resume(o);
    if (no_inject && (locals || native || o->target.pid <= 0)) {
        cli_error("debug --dump --no-inject: %s",
                  o->target.pid <= 0 ? "needs a local process (-p PID)"
                                     : "--locals and --native need the probe loaded");
        return CLI_USAGE;
    }
    if (no_inject) {
        cJSON *b = cli_read_dump(o->target.pid, 256);
        return b ? cli_print_body(b, json, print_text) : CLI_FAIL;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "locals", locals);
    if (native)
        cJSON_AddStringToObject(args, "native", native);
    cJSON *body = cli_call(o, "dump failed", "probing/dump", args);
    if (!body)
        return CLI_FAIL;
    dump_pid = o->target.pid;
    if (native)
        add_native_lines(body);
    return cli_print_body(body, json, print_text);
}
