/* SPDX-License-Identifier: MIT */
/* `probing -p PID debug --dump [--locals] [--native[=all]] [--tasks] [--json]`: every Python
 * thread's stack (name, Python thread id, native id, GIL), innermost frame first, optionally
 * with local variables, or with native and Python frames merged (file:line of native frames
 * added here from DWARF, ext/srcline.c; C++ names demangled, demangle.c) and the threads that
 * run no Python, and every asyncio task (--tasks); as text or as one JSON document (the
 * probing/dump response body, see docs/protocol.md).
 * `debug --pause [--address HOST:PORT]` and `debug --resume`: below. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "srccache.h"

static void help(void)
{
    printf("usage: probing -p PID debug --dump [--locals] [--native[=all]] [--tasks]\n"
           "                                  [--subprocesses] [--json]\n"
           "       probing -p PID debug --dump --no-inject [--locals] [--subprocesses] [--json]\n"
           "       probing -p PID debug --pause [--address HOST:PORT]\n"
           "       probing -p PID debug --resume\n"
           "       ('d' and 'dbg' name debug too: probing -p PID d -d)\n"
           "\n"
           "Print every Python thread of the target: name, thread id, native id, whether it\n"
           "holds the GIL, and its frames innermost first (function, file, line). Works when\n"
           "a thread holds the GIL forever (stacks are read without the GIL).\n"
           "\n"
           "  -d, --dump      dump all threads' stacks\n"
           "      --locals    add each frame's local variables (bounded repr with the GIL;\n"
           "                  if it cannot be had in time, says so and reads them from\n"
           "                  memory: int, float, bool, None, str, bytes, and tuples,\n"
           "                  lists, dicts of those by value, the rest as <TYPE object>)\n"
           "      --native    each thread's native (C) and Python frames merged, innermost\n"
           "                  first, each marked (Python) or (native): function+offset, object\n"
           "                  and file:line when the object has DWARF; CPython's own call\n"
           "                  machinery left out (--native=all keeps it). When the two stacks\n"
           "                  cannot be matched, says so and shows both. Then the threads\n"
           "                  that run no Python (a C/C++ library's own: torch's autograd,\n"
           "                  gloo), named by the kernel, with their native frames. C++\n"
           "                  names demangled (libstdc++)\n"
           "      --tasks     also every asyncio task of every event loop, as a tree of who\n"
           "                  awaits whom (each task's coroutines innermost first; await\n"
           "                  cycles named as deadlocks); read with the GIL, or on\n"
           "                  CPython 3.14+ without it when a thread holds it in C\n"
           "      --no-inject read the stacks from outside (process_vm_readv), loading nothing\n"
           "                  into the target: thread names from the kernel, --locals read\n"
           "                  from memory as above, --tasks (CPython 3.14+) the pending\n"
           "                  tasks read from memory as without the GIL\n"
           "      --subprocesses  also the target's child processes, recursively (at most 64):\n"
           "                  each Python one's threads read from outside as --no-inject\n"
           "                  does (nothing loaded into it, never stopped; Python frames\n"
           "                  only), with its role when known (\"DataLoader worker 1\");\n"
           "                  one that runs no Python, a zombie or another user's listed\n"
           "                  by pid and command line\n"
           "      --json      print one JSON document instead of text\n"
           "  -p, --pause     stop every Python thread and keep the target stopped, serving\n"
           "                  DAP on TCP, until a debugger attaches and continues it or --resume\n"
           "  -a, --address HOST:PORT  where --pause listens (default 127.0.0.1:9922; port 0\n"
           "                  picks one); the token is $PROBING_TOKEN, else generated and printed\n"
           "      --resume    release a target stopped by --pause\n");
}

static pid_t dump_pid;
static const struct cli_ext *dump_ext;

/* What srcline said for one (module, pc): a corrupted thread list may repeat one thread's
 * stack thousands of times, and each DWARF lookup costs (issue 37 item 10). */
struct line_memo {
    char *mod;
    unsigned long long pc, bias, off;
    int rc, line;
    char file[1024], func[512];
};
#define LINE_MEMO 512
static struct line_memo *line_memo;

/* The answers kept between runs, per object (srccache.h): most of a native dump's time was
 * reading DWARF for the same frames of the same objects as the run before. */
#define SRC_OBJECTS 64
static struct src_obj {
    char *mod;
    int usable; /* 0: the object cannot be stat'ed: no cache */
    struct cli_srccache c;
} src_objs[SRC_OBJECTS];
static int nsrc_objs;

static struct cli_srccache *src_cache(const char *mod)
{
    for (int i = 0; i < nsrc_objs; i++)
        if (strcmp(src_objs[i].mod, mod) == 0)
            return src_objs[i].usable ? &src_objs[i].c : NULL;
    if (nsrc_objs == SRC_OBJECTS || !(src_objs[nsrc_objs].mod = strdup(mod)))
        return NULL;
    struct src_obj *o = &src_objs[nsrc_objs++];
    o->usable = cli_srccache_open(&o->c, dump_pid, mod) == 0;
    return o->usable ? &o->c : NULL;
}

static int srcline_cached(const char *mod, unsigned long long pc, unsigned long long bias,
                          char *file, size_t nfile, int *line, char *func, size_t nfunc,
                          unsigned long long *off)
{
    struct cli_srccache *c = pc >= bias ? src_cache(mod) : NULL;
    const struct cli_srcent *e = c ? cli_srccache_find(c, pc - bias) : NULL;
    if (e) {
        snprintf(file, nfile, "%s", e->file);
        snprintf(func, nfunc, "%s", e->func);
        *line = e->line, *off = e->symoff;
        return e->rc;
    }
    if (!dump_ext) {
        static int said;
        struct pb_err err = {0};
        if (!(dump_ext = cli_ext_load(&err))) {
            if (!said++)
                fprintf(stderr, "probing: note: native frames without file:line: %s\n", err.msg);
            return -1;
        }
    }
    int rc = dump_ext->srcline(dump_pid, mod, pc, bias, file, nfile, line, func, nfunc, off);
    if (c) {
        struct cli_srcent ne = {.off = pc - bias,
                                .rc = rc == 0 ? 0 : -1,
                                .line = rc == 0 ? *line : 0,
                                .symoff = rc == 0 ? *off : 0,
                                .func = rc == 0 ? func : "",
                                .file = rc == 0 ? file : ""};
        cli_srccache_put(c, &ne);
    }
    return rc;
}

static void src_cache_close(void)
{
    for (int i = 0; i < nsrc_objs; i++) {
        cli_srccache_free(&src_objs[i].c);
        free(src_objs[i].mod);
    }
    nsrc_objs = 0;
}

static int srcline_memo(const char *mod, unsigned long long pc, unsigned long long bias, char *file,
                        size_t nfile, int *line, char *func, size_t nfunc, unsigned long long *off)
{
    unsigned long long h = pc * 0x9E3779B97F4A7C15ull;
    for (const char *c = mod; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001B3ull;
    struct line_memo *m = NULL;
    if (!line_memo)
        line_memo = calloc(LINE_MEMO, sizeof *line_memo);
    if (line_memo) {
        m = &line_memo[(h >> 32) % LINE_MEMO];
        if (m->mod && m->pc == pc && m->bias == bias && strcmp(m->mod, mod) == 0) {
            snprintf(file, nfile, "%s", m->file);
            snprintf(func, nfunc, "%s", m->func);
            *line = m->line, *off = m->off;
            return m->rc;
        }
    }
    int rc = srcline_cached(mod, pc, bias, file, nfile, line, func, nfunc, off);
    if (m) {
        free(m->mod);
        m->mod = strdup(mod);
        m->pc = pc, m->bias = bias, m->rc = rc, m->line = rc == 0 ? *line : 0;
        m->off = rc == 0 ? *off : 0;
        snprintf(m->file, sizeof m->file, "%s", rc == 0 ? file : "");
        snprintf(m->func, sizeof m->func, "%s", rc == 0 ? func : "");
    }
    return rc;
}

/* Adds file and line to the native frames of one list from DWARF (ext/srcline.c). */
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
            if (srcline_memo(mod, i > 0 && pc ? pc - 1 : pc, strtoull(bias, NULL, 16), file,
                             sizeof file, &line, func, sizeof func, &off) == 0) {
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
    cli_demangle_frames(frames); /* C++ names the target left mangled, or DWARF's */
}

static void add_native_lines(const cJSON *d)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d, "threads")) add_lines(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "native"), "frames"));
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(d, "nativeThreads")) add_lines(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "native"), "frames"));
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
           "DAP on %s:%d",
           (int)o->target.pid, (int)o->target.pid, host, port);
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
        {"dump", no_argument, 0, 'd'},         {"locals", no_argument, 0, 'L'},
        {"native", optional_argument, 0, 'N'}, {"no-inject", no_argument, 0, 'R'},
        {"json", no_argument, 0, 'j'},         {"pause", no_argument, 0, 'p'},
        {"resume", no_argument, 0, 'r'},       {"address", required_argument, 0, 'a'},
        {"tasks", no_argument, 0, 'T'},        {"subprocesses", no_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int dump = 0, locals = 0, json = 0, pause = 0, resume = 0, no_inject = 0, tasks = 0, c;
    int subprocesses = 0;
    const char *address = NULL, *native = NULL;
    /* -d, -p, -a: the original Probing's short flags (docs/migrating.md). */
    while ((c = getopt_long(argc, argv, "hdpa:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dump = 1; break;
        case 'L': locals = 1; break;
        case 'T': tasks = 1; break;
        case 'S': subprocesses = 1; break;
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
    if ((address && !pause) ||
        ((locals || json || native || no_inject || tasks || subprocesses) && !dump)) {
        cli_error("debug: %s only goes with %s",
                  address ? "--address"
                          : "--locals/--native/--no-inject/--tasks/--subprocesses/--json",
                  address ? "--pause" : "--dump");
        return CLI_USAGE;
    }
    if (pause)
        return debug_pause(o, address);
    if (resume)
        return debug_resume(o);
    if (subprocesses && o->target.pid <= 0) {
        cli_error("debug --dump --subprocesses: needs a local process (-p PID): children are "
                  "found in /proc");
        return CLI_USAGE;
    }
    if (no_inject && (native || o->target.pid <= 0)) {
        cli_error("debug --dump --no-inject: %s", o->target.pid <= 0
                                                      ? "needs a local process (-p PID)"
                                                      : "--native needs the probe loaded");
        return CLI_USAGE;
    }
    if (no_inject) {
        struct pb_err err = {0};
        cJSON *b = cli_read_dump_tasks(o->target.pid, 256, locals, tasks, &err);
        if (!b && err.code == PB_EUSAGE) { /* --tasks before 3.14 */
            cli_error("debug --dump --no-inject: %s: leave out --no-inject", err.msg);
            return CLI_USAGE;
        }
        if (!b)
            cli_error("dump --no-inject: %s", err.msg);
        else if (subprocesses)
            cli_children_add(b, o->target.pid, locals, 256);
        return b ? cli_print_body(b, json, cli_dump_print) : CLI_FAIL;
    }
    struct pb_err err = {0};
    /* file:line from DWARF is the private library's: checked before the target is touched,
     * loaded when a frame is not in the cache of earlier runs (srccache.h) */
    if (native && cli_ext_check(&err) < 0) {
        cli_error("debug --dump --native: %s", err.msg);
        return CLI_FAIL;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "locals", locals);
    if (tasks)
        cJSON_AddBoolToObject(args, "tasks", 1);
    if (native)
        cJSON_AddStringToObject(args, "native", native);
    cJSON *body = cli_call_read(o, "dump failed", "probing/dump", args);
    if (!body)
        return CLI_FAIL;
    dump_pid = o->target.pid;
    if (native) {
        add_native_lines(body);
        src_cache_close();
    }
    if (subprocesses && o->target.pid > 0)
        cli_children_add(body, o->target.pid, locals, 256);
    return cli_print_body(body, json, cli_dump_print);
}
