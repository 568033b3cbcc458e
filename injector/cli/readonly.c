/* SPDX-License-Identifier: MIT */
/* `debug --dump --no-inject` and `cluster stacks --no-inject`: a live process's Python stacks
 * read from outside, loading nothing into it. The CLI finds the interpreter's globals in the
 * target's ELF symbols (ptrace_pysyms), dlopens the reader built from the probe's own frame walker
 * for the target's CPython (libprobing-read-3.X.so, probe/sig/pyrt_remote.c) and lets it read the
 * target with process_vm_readv; then adds what the probe would have added from /proc: thread
 * names (the kernel's), native ids before 3.11 (the tid field of glibc's struct pthread at the
 * thread's pthread_t, its offset found on the main thread, whose tid is the pid), the GIL
 * holder. Locals (when asked) are read from memory by the reader, simple values only
 * (pyrt/memlocals.c): nothing runs in the target. asyncio tasks (--tasks, CPython 3.14+) are
 * the reader's too (pyrt/asyncio_mem.c, as the probe reads them without the GIL), with the
 * offsets of the _asyncio module's ".AsyncioDebug" section read here from its file. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "cli.h"
#include "injector/inject/inj.h"

typedef char *(*read_dump_fn)(cli_read_fn rd, int pid, const uintptr_t *syms, int nsyms,
                              int max_frames, int locals, char *err, size_t errn);

static pid_t live_pid;

static int live_read(uintptr_t addr, void *buf, size_t n)
{
    struct iovec l = {buf, n}, r = {(void *)addr, n};
    return process_vm_readv(live_pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int task_exists(pid_t pid, long tid)
{
    char p[64];
    struct stat st;
    snprintf(p, sizeof p, "/proc/%d/task/%ld", (int)pid, tid);
    return tid > 0 && stat(p, &st) == 0;
}

static int live_task(long tid)
{
    return task_exists(live_pid, tid);
}

/* Native ids the reader could not give (before 3.11): the tid in each pthread_t (read with
 * rd), kept when is_task says the process has that thread. */
void cli_read_native_ids(cJSON *body, cli_read_fn rd, int (*is_task)(long tid))
{
    int pid = (int)cli_json_num(body, "pid", 0);
    cJSON *threads = cJSON_GetObjectItemCaseSensitive(body, "threads");
    const cJSON *t;
    unsigned long main_ident = 0;
    int off = -1;
    cJSON_ArrayForEach(t, threads) if (cli_json_true(t, "main")) main_ident =
        (unsigned long)cli_json_num(t, "ident", 0);
    int buf[512];
    if (!main_ident || pid <= 0 || rd(main_ident, buf, sizeof buf) < 0)
        return;
    for (int i = 0; i < 512 && off < 0; i++)
        if (buf[i] == (int)pid)
            off = i * (int)sizeof(int);
    if (off < 0)
        return;
    cJSON_ArrayForEach(t, threads)
    {
        int tid;
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "nativeId")) ||
            rd((unsigned long)cli_json_num(t, "ident", 0) + (unsigned long)off, &tid, sizeof tid) <
                0 ||
            !is_task(tid))
            continue;
        cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)t, "nativeId", cJSON_CreateNumber(tid));
        double id = tid + cli_json_num(t, "interpreter", 0) * 4194304.0; /* pyrt_thread_id */
        cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)t, "id", cJSON_CreateNumber(id));
    }
}

/* The entry point name of the reader for CPython ver (*h: its handle, to dlclose). NULL with
 * err filled. */
static void (*reader_sym(const int ver[3], const char *name, void **h, struct pb_err *err))(void)
{
    char dir[4096], lib[4200];
    void (*fn)(void) = NULL;
    cli_libdir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/libprobing-read-%d.%d.so", dir, ver[0], ver[1]);
    *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (*h)
        fn = (void (*)(void))(uintptr_t)dlsym(*h, name);
    if (!fn) {
        pb_err_set(err, -ENOENT, "no reader for CPython %d.%d (%s): build it with make", ver[0],
                   ver[1], *h ? "an entry point is missing" : dlerror());
        if (*h)
            dlclose(*h);
        *h = NULL;
    }
    return fn;
}

typedef int (*read_unwind_fn)(cli_read_fn rd, const uintptr_t regs[3],
                              const struct cli_read_mod *mods, int nmods, uintptr_t *out, int max);

int cli_read_unwind(const int ver[3], cli_read_fn rd, const uintptr_t regs[3],
                    const struct cli_read_mod *mods, int nmods, uintptr_t *out, int max,
                    struct pb_err *err)
{
    void *h = NULL;
    read_unwind_fn fn = (read_unwind_fn)reader_sym(ver, "probing_read_unwind", &h, err);
    if (!fn)
        return -1;
    int n = fn(rd, regs, mods, nmods, out, max);
    dlclose(h);
    if (n < 0)
        pb_err_set(err, -ENOMEM, "out of memory");
    return n;
}

const char *const cli_read_syms[CLI_READ_NSYMS] = {
    "_PyRuntime",      "PyCode_Type", "PyFrame_Type",   "PyUnicode_Type", "PyBytes_Type",
    "PyLong_Type",     "PyBool_Type", "PyFloat_Type",   "PyTuple_Type",   "PyList_Type",
    "PyDict_Type",     "PyCell_Type", "_Py_NoneStruct", "PyCoro_Type",    "PyGen_Type",
    "PyAsyncGen_Type", "PySet_Type"};

typedef char *(*read_tasks_fn)(cli_read_fn rd, const uintptr_t *syms, int nsyms,
                               const uint64_t *offs, int noffs, char *err, size_t errn);

int cli_read_tasks_check(const int ver[3], const char *how, struct pb_err *err)
{
    if (ver[0] == 3 && ver[1] < 14)
        return pb_err_set(err, PB_EUSAGE,
                          "--tasks needs CPython 3.14+ %s (%d.%d keeps no task "
                          "lists that can be read from memory)",
                          how, ver[0], ver[1]);
    return 0;
}

void cli_read_tasks_add(cJSON *body, cli_read_fn rd, const int ver[3],
                        const unsigned long addrs[CLI_READ_NSYMS], const uint64_t *offs,
                        const char *why)
{
    uintptr_t syms[CLI_READ_NSYMS];
    char msg[256] = "";
    cJSON *a = NULL;
    struct pb_err err = {0};
    void *h = NULL;
    for (int i = 0; i < CLI_READ_NSYMS; i++)
        syms[i] = addrs[i];
    read_tasks_fn fn = NULL;
    if (!offs && !why) { /* no _asyncio loaded: no task (as the probe says then) */
        a = cJSON_CreateObject();
        cJSON_AddArrayToObject(a, "tasks");
        cJSON_AddBoolToObject(a, "read", 1);
        cJSON_AddStringToObject(a, "via", "memory");
        cJSON_AddBoolToObject(a, "truncated", 0);
        cJSON_AddArrayToObject(a, "cycles");
        cJSON_AddItemToObject(body, "asyncio", a);
        return;
    }
    if (!offs)
        snprintf(msg, sizeof msg, "%s", why ? why : "the _asyncio module's offsets are unknown");
    else if (!(fn = (read_tasks_fn)reader_sym(ver, "probing_read_tasks", &h, &err)))
        snprintf(msg, sizeof msg, "%s", err.msg);
    if (fn) {
        char *text = fn(rd, syms, CLI_READ_NSYMS, offs, CLI_ASYNCIO_NOFFS, msg, sizeof msg);
        a = text ? cJSON_Parse(text) : NULL;
        free(text);
        dlclose(h);
    }
    if (!a) {
        a = cJSON_CreateObject();
        cJSON_AddBoolToObject(a, "read", 0);
        cJSON_AddStringToObject(a, "error", msg[0] ? msg : "the reader's answer is unreadable");
    }
    cJSON_AddItemToObject(body, "asyncio", a);
}

cJSON *cli_read_stacks(cli_read_fn rd, int pid, const int ver[3],
                       const unsigned long addrs[CLI_READ_NSYMS], const char *source,
                       int max_frames, int locals, struct pb_err *err)
{
    uintptr_t syms[CLI_READ_NSYMS];
    char msg[256] = "";
    for (int i = 0; i < CLI_READ_NSYMS; i++) {
        syms[i] = addrs[i];
        if (i < 5 && !addrs[i] && !(i == 2 && ver[1] >= 11)) { /* PyFrame_Type: before 3.11 only */
            pb_err_set(err, PB_ENOPYTHON,
                       "%s has no symbol %s: the interpreter's state cannot be "
                       "found",
                       source, cli_read_syms[i]);
            return NULL;
        }
    }
    void *h = NULL;
    read_dump_fn fn = (read_dump_fn)reader_sym(ver, "probing_read_dump_v2", &h, err);
    if (!fn)
        return NULL;
    char *text = fn(rd, pid, syms, CLI_READ_NSYMS, max_frames, locals, msg, sizeof msg);
    cJSON *body = text ? cJSON_Parse(text) : NULL;
    free(text);
    dlclose(h);
    if (!body) {
        pb_err_set(err, PB_EUNKNOWN, "%s", msg[0] ? msg : "the reader's answer is unreadable");
        return NULL;
    }
    char v[32];
    snprintf(v, sizeof v, ver[2] >= 0 ? "%d.%d.%d" : "%d.%d", ver[0], ver[1], ver[2]);
    cJSON_AddStringToObject(body, "python", v);
    return body;
}

void cli_read_finish(cJSON *body, pid_t live)
{
    cJSON *threads = cJSON_GetObjectItemCaseSensitive(body, "threads"), *t;
    cJSON_ArrayForEach(t, threads)
    {
        char comm[64] = "?";
        if (cli_json_text(t, "name")) { /* threading's, read by the reader */
            cJSON_AddNullToObject(t, "daemon");
            if (cli_json_true(t, "holdsGil"))
                cJSON_ReplaceItemInObjectCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(body, "gil"), "holder",
                    cJSON_CreateNumber(cli_json_num(t, "id", 0)));
            continue;
        }
        long tid = (long)cli_json_num(t, "nativeId", -1);
        if (tid > 0 && live > 0) {
            char p[64];
            snprintf(p, sizeof p, "/proc/%d/task/%ld/comm", (int)live, tid);
            FILE *f = fopen(p, "r");
            if (f) {
                if (fgets(comm, sizeof comm, f))
                    comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
            }
        }
        cJSON_AddStringToObject(t, "name", comm);
        cJSON_AddStringToObject(t, "nameSource", "os");
        cJSON_AddNullToObject(t, "daemon");
        if (cli_json_true(t, "holdsGil"))
            cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "gil"),
                                                   "holder",
                                                   cJSON_CreateNumber(cli_json_num(t, "id", 0)));
    }
}

cJSON *cli_read_dump(pid_t pid, int max_frames, int locals, struct pb_err *err)
{
    return cli_read_dump_tasks(pid, max_frames, locals, 0, err);
}

cJSON *cli_read_dump_tasks(pid_t pid, int max_frames, int locals, int tasks, struct pb_err *err)
{
    unsigned long addrs[CLI_READ_NSYMS];
    struct ptrace_pyver v;
    if (ptrace_pyver_detect(pid, &v, err) < 0)
        return NULL;
    int ver[3] = {v.major, v.minor, v.micro};
    if (tasks && cli_read_tasks_check(ver, "without the probe", err) < 0)
        return NULL;
    if (ptrace_pysyms(pid, cli_read_syms, CLI_READ_NSYMS, addrs, err) < 0)
        return NULL;
    live_pid = pid;
    /* Reading another process's memory needs what attaching needs (Yama's ptrace_scope): a
     * refusal is said as such, not as an unreadable interpreter. */
    char byte;
    if (live_read(addrs[0], &byte, 1) < 0 && (errno == EPERM || errno == EACCES)) {
        char what[64];
        snprintf(what, sizeof what, "reading the memory of %d", (int)pid);
        ptrace_access_denied(what, err);
        return NULL;
    }
    cJSON *body =
        cli_read_stacks(live_read, (int)pid, ver, addrs, v.source, max_frames, locals, err);
    if (body) {
        cli_read_native_ids(body, live_read, live_task);
        cli_read_finish(body, pid);
    }
    if (body && tasks) { /* the offsets from the target's _asyncio file (its /proc/PID/root) */
        uint64_t offs[CLI_ASYNCIO_NOFFS];
        struct pb_err e = {0};
        int rc = ptrace_asyncio_section(pid, ".AsyncioDebug", offs, sizeof offs, &e);
        cli_read_tasks_add(body, live_read, ver, addrs, rc == 0 ? offs : NULL,
                           rc == 1 ? NULL : e.msg);
    }
    return body;
}
