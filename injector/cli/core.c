/* SPDX-License-Identifier: MIT */
/* Python stacks from a core file (`probing dump --core FILE [--exe PATH]`): the core's memory
 * is its PT_LOAD segments, and where a segment was not written (file-backed mappings a core
 * leaves out) the mapped files of its NT_FILE note, read from disk; the interpreter's globals
 * come from the ELF symbols of libpython3.X (or the executable) at the address NT_FILE maps it;
 * the stacks are read by the probe's own walker (readonly.c, libprobing-read-3.X.so). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "corefile.h"
#include "injector/inject/inj.h"

static struct core_file core;
static const struct cli_ext *core_ext; /* --native: names and lines from DWARF (ext/srcline.c) */

static int core_task(long tid)
{
    for (int i = 0; i < core.ntids; i++)
        if (core.tids[i] == tid)
            return 1;
    return 0;
}

/* n bytes at addr, which may span segments (gcore writes one per mapping, and a read of a
 * thread's frames can cross from one mapping into the next). */
static int core_read(uintptr_t addr, void *dst, size_t n)
{
    return cli_core_file_read(&core, addr, dst, n);
}

static const char *base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

/* The mapping (at its lowest file offset) of the interpreter: exe when given, else
 * libpython3.X, else an executable named pythonX.Y; its version from the file's name. */
static const struct core_map *interp_map(const char *exe, int ver[3])
{
    char real[PATH_MAX];
    const char *path = NULL;
    const struct core_map *best = NULL;
    int a, c;
    if (exe) {
        if (!realpath(exe, real))
            return NULL;
        path = real;
    }
    for (int pass = 0; !path && pass < 2; pass++)
        for (int i = 0; i < core.nmaps && !path; i++)
            if (sscanf(base_of(core.maps[i].path), pass ? "python%d.%d" : "libpython%d.%d", &a,
                       &c) == 2)
                path = core.maps[i].path;
    for (int i = 0; path && i < core.nmaps; i++)
        if (strcmp(core.maps[i].path, path) == 0 && (!best || core.maps[i].off < best->off))
            best = &core.maps[i];
    ver[2] = -1;
    if (!best || (sscanf(base_of(best->path), "libpython%d.%d", &ver[0], &ver[1]) != 2 &&
                  sscanf(base_of(best->path), "python%d.%d", &ver[0], &ver[1]) != 2))
        return NULL;
    return best;
}

/* The core's libpython3.X mapping (its lowest file offset), or NULL. */
static const struct core_map *libpython_map(void)
{
    const struct core_map *best = NULL;
    int a, b;
    for (int i = 0; i < core.nmaps; i++)
        if (sscanf(base_of(core.maps[i].path), "libpython%d.%d", &a, &b) == 2 &&
            (!best || (strcmp(core.maps[i].path, best->path) == 0 && core.maps[i].off < best->off)))
            best = &core.maps[i];
    return best;
}

/* --exe PYTHON of a shared-libpython build (pyenv's, uv's: NEEDED libpython3.X.so) has no
 * _PyRuntime: the interpreter is the libpython the core maps, read from where the core says,
 * else from beside the executable (its ../lib/, as the executable's RUNPATH has it). *m and
 * ver become the library's; *symfile the file to read its symbols from (in buf). */
static void exe_libpython(const char *exe, const struct core_map **m, int ver[3],
                          const char **symfile, char *buf, size_t n)
{
    unsigned long rt = 0;
    const char *const name[1] = {"_PyRuntime"};
    const struct core_map *lib;
    if (!exe || !(lib = libpython_map()) ||
        (*m && ptrace_file_syms(exe, (*m)->start, (*m)->off, name, 1, &rt) == 0 && rt))
        return;
    int v[2];
    if (sscanf(base_of(lib->path), "libpython%d.%d", &v[0], &v[1]) != 2)
        return;
    *m = lib;
    ver[0] = v[0];
    ver[1] = v[1];
    ver[2] = -1;
    *symfile = lib->path;
    char real[PATH_MAX];
    if (access(lib->path, R_OK) != 0 && realpath(exe, real)) {
        char *slash = strrchr(real, '/');
        if (slash)
            *slash = '\0';
        snprintf(buf, n, "%s/../lib/%s", real, base_of(lib->path));
        if (access(buf, R_OK) == 0)
            *symfile = buf;
    }
}

/* A signal's name ("SIGSEGV"), NULL for one not listed. Not sigabbrev_np(): that is glibc 2.32's,
 * and the release runs on glibc 2.29+ (docs/testing.md "The release"). */
static const char *core_sig_name(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGCONT: return "SIGCONT";
    case SIGSTOP: return "SIGSTOP";
    case SIGTSTP: return "SIGTSTP";
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGURG: return "SIGURG";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGVTALRM: return "SIGVTALRM";
    case SIGPROF: return "SIGPROF";
    case SIGWINCH: return "SIGWINCH";
    case SIGIO: return "SIGIO";
    case SIGPWR: return "SIGPWR";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}

/* What the core says of the process beyond its threads (JSON and the text header): its
 * executable and libpython with their build ids, the signal that ended it. */
static void core_meta(cJSON *body, const struct core_map *interp)
{
    char hex[160];
    const struct core_map *x = cli_core_file_exe_map(&core);
    cJSON *e = cJSON_AddObjectToObject(body, "executable");
    char execfn[256] = "";
    if (core.at_execfn && cli_core_file_read(&core, core.at_execfn, execfn, sizeof execfn - 1) < 0)
        for (size_t i = 0;
             i < sizeof execfn - 1 &&
             cli_core_file_read(&core, core.at_execfn + i, &execfn[i], 1) == 0 && execfn[i];
             i++)
            ; /* near the stack's top: byte by byte up to its end */
    execfn[sizeof execfn - 1] = '\0';
    if (x)
        cJSON_AddStringToObject(e, "path", x->path);
    else if (execfn[0])
        cJSON_AddStringToObject(e, "path", execfn);
    else if (core.fname[0])
        cJSON_AddStringToObject(e, "path", core.fname);
    else
        cJSON_AddNullToObject(e, "path");
    if (x && cli_core_file_build_id(&core, x->start - x->off, hex, sizeof hex) == 0)
        cJSON_AddStringToObject(e, "buildId", hex);
    else
        cJSON_AddNullToObject(e, "buildId");
    if (core.psargs[0])
        cJSON_AddStringToObject(e, "args", core.psargs);
    const struct core_map *lib = libpython_map();
    if (!lib && interp && interp != x)
        lib = interp;
    if (lib && (!x || strcmp(lib->path, x->path) != 0)) {
        cJSON *l = cJSON_AddObjectToObject(body, "libpython");
        cJSON_AddStringToObject(l, "path", lib->path);
        if (cli_core_file_build_id(&core, lib->start - lib->off, hex, sizeof hex) == 0)
            cJSON_AddStringToObject(l, "buildId", hex);
        else
            cJSON_AddNullToObject(l, "buildId");
    }
    if (core.signo > 0) {
        cJSON *sg = cJSON_AddObjectToObject(body, "signal");
        const char *nm = core_sig_name(core.signo);
        cJSON_AddNumberToObject(sg, "number", core.signo);
        cJSON_AddStringToObject(sg, "name", nm ? nm : "unknown");
        cJSON_AddNumberToObject(sg, "code", core.sigcode);
    } else {
        cJSON_AddNullToObject(body, "signal");
    }
}

/* The mapped objects for the unwinder: per file, its range and the address of its offset 0. */
static int core_mods(struct cli_read_mod *mods, int max)
{
    int n = 0;
    for (int i = 0; i < core.nmaps && n < max; i++) {
        if (core.maps[i].off != 0)
            continue;
        struct cli_read_mod m = {core.maps[i].start, core.maps[i].end, core.maps[i].start};
        for (int k = 0; k < core.nmaps; k++)
            if (strcmp(core.maps[k].path, core.maps[i].path) == 0) {
                m.lo = core.maps[k].start < m.lo ? core.maps[k].start : m.lo;
                m.hi = core.maps[k].end > m.hi ? core.maps[k].end : m.hi;
            }
        mods[n++] = m;
    }
    return n;
}

static const struct core_map *map_of(uintptr_t pc)
{
    for (int i = 0; i < core.nmaps; i++)
        if (pc >= core.maps[i].start && pc < core.maps[i].end)
            return &core.maps[i];
    return NULL;
}

/* One native frame as the probe describes it (docs/protocol.md), named from DWARF and symbol
 * tables by libdw (ext/srcline.c); *is_eval and *internal for merging. */
static cJSON *core_nframe(uintptr_t pc, int depth, const char *interp, int *is_eval, int *internal)
{
    const struct core_map *m = map_of(pc);
    char file[1024] = "", func[512] = "", hex[32];
    unsigned long bias = 0;
    unsigned long long off = 0;
    int line = 0;
    cJSON *o = cJSON_CreateObject();
    if (m && ptrace_file_bias(m->path, m->start, m->off, &bias) == 0)
        core_ext->srcline(0, m->path, depth > 0 ? pc - 1 : pc, bias, file, sizeof file, &line, func,
                          sizeof func, &off);
    if (!func[0] && m && strcmp(m->path, interp) == 0 &&
        core_ext->eval_part(0, m->path, depth > 0 ? pc - 1 : pc, bias))
        snprintf(func, sizeof func, "_PyEval_EvalFrameDefault.cold"); /* as the probe names it */
    *is_eval = strncmp(func, "_PyEval_EvalFrameDefault", 24) == 0;
    *internal = *is_eval || (m && strcmp(m->path, interp) == 0 && pb_cpython_machinery(func));
    cJSON_AddStringToObject(o, "kind", "native");
    char dem[1024];
    const char *name = cli_demangle(func, dem, sizeof dem); /* C++ names from DWARF */
    cJSON_AddItemToObject(o, "name", name[0] ? cJSON_CreateString(name) : cJSON_CreateNull());
    cJSON_AddNumberToObject(o, "offset", (double)(off + (depth > 0)));
    cJSON_AddItemToObject(o, "module", m ? cJSON_CreateString(m->path) : cJSON_CreateNull());
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)pc);
    cJSON_AddStringToObject(o, "address", hex);
    if (file[0]) {
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddNumberToObject(o, "line", line);
    }
    if (*internal)
        cJSON_AddBoolToObject(o, "internal", 1);
    return o;
}

/* The Python frames of OS thread tid that its native stack runs, innermost first (a new
 * array): a thread running code in a subinterpreter has a thread state there and one in the
 * main interpreter (blocked in the call that runs it): the subinterpreters' frames (the highest
 * id first) above the main one's, as the probe's stack_sig handler lines them up. */
static cJSON *thread_py_frames(const cJSON *body, const cJSON *self, long tid)
{
    cJSON *all = cJSON_CreateArray(), *t, *f;
    double done = 1e300;
    if (tid <= 0) {
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(self, "frames"))
            cJSON_AddItemToArray(all, cJSON_Duplicate(f, 1));
        return all;
    }
    for (;;) { /* the thread's states by interpreter id, highest first */
        const cJSON *best = NULL;
        double bid = -1;
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(body, "threads"))
        {
            double id = cli_json_num(t, "interpreter", 0);
            if ((long)cli_json_num(t, "nativeId", -1) == tid && id < done && id > bid) {
                best = t;
                bid = id;
            }
        }
        if (!best)
            break;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(best, "frames"))
            cJSON_AddItemToArray(all, cJSON_Duplicate(f, 1));
        done = bid;
    }
    return all;
}

/* dump --core --native: each thread's native stack from its NT_PRSTATUS registers, merged with
 * its Python frames (pb_stack_merge) as debug --dump --native does. */
static void core_native(cJSON *body, const int ver[3], const char *interp, int all)
{
    static struct cli_read_mod mods[4096];
    uintptr_t pcs[128];
    struct pb_merge_step steps[128 + 256];
    int nmods = core_mods(mods, 4096);
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(body, "threads"))
    {
        struct pb_err err = {0};
        cJSON *nat = cJSON_CreateObject();
        long tid = (long)cli_json_num(t, "nativeId", -1);
        cJSON *py = thread_py_frames(body, t, tid);
        int k = 0, n = -1, np = cJSON_GetArraySize(py);
        while (k < core.ntids && core.tids[k] != tid)
            k++;
        if (k < core.ntids && np <= 256)
            n = cli_read_unwind(ver, core_read, core.regs[k], mods, nmods, pcs, 128, &err);
        cJSON_AddBoolToObject(nat, "answered", n > 0);
        cJSON_AddItemToObject(t, "native", nat);
        if (n <= 0) {
            cJSON_AddStringToObject(nat, "error",
                                    k < core.ntids ? "no native stack could be "
                                                     "read from its registers"
                                                   : "no such thread in the core");
            cJSON_Delete(py);
            continue;
        }
        unsigned char is_eval[128], entry[256];
        int internal[128], evals = 0, entries = 0;
        cJSON *nf[128];
        for (int i = 0; i < n; i++) {
            int e;
            nf[i] = core_nframe(pcs[i], i, interp, &e, &internal[i]);
            is_eval[i] = (unsigned char)e;
            evals += e;
        }
        for (int i = 0; i < np; i++) {
            entry[i] = (unsigned char)cli_json_true(cJSON_GetArrayItem(py, i), "entry");
            entries += entry[i];
        }
        int m = pb_stack_merge(is_eval, n, entry, np, steps);
        cJSON_AddBoolToObject(nat, "merged", m >= 0);
        cJSON_AddNumberToObject(nat, "evalFrames", evals);
        cJSON_AddNumberToObject(nat, "entryFrames", entries);
        cJSON *out = cJSON_AddArrayToObject(nat, "frames");
        for (int i = 0; i < (m >= 0 ? m : n); i++) {
            int ix = m >= 0 ? steps[i].index : i;
            if (m >= 0 && steps[i].kind == PB_MERGE_PY) {
                cJSON *f = cJSON_Duplicate(cJSON_GetArrayItem(py, ix), 1);
                cJSON_AddStringToObject(f, "kind", "python");
                cJSON_AddItemToArray(out, f);
            } else if (all || !internal[ix] || (m < 0 && is_eval[ix])) {
                cJSON_AddItemToArray(out, nf[ix]);
                nf[ix] = NULL;
            }
        }
        for (int i = 0; i < n; i++)
            cJSON_Delete(nf[i]);
        if (m < 0) {
            cJSON *pf = cJSON_AddArrayToObject(nat, "pythonFrames"), *f;
            cJSON_ArrayForEach(f, py)
            {
                cJSON *c = cJSON_Duplicate(f, 1);
                cJSON_AddStringToObject(c, "kind", "python");
                cJSON_AddItemToArray(pf, c);
            }
        }
        cJSON_Delete(py);
    }
}

/* The core's file paths looked for under sysroot first: each found there is replaced by a
 * copy with the prefix (freed by unroot). */
static char **rooted;

static void reroot(const char *sysroot)
{
    size_t n = strlen(sysroot);
    while (n > 1 && sysroot[n - 1] == '/')
        n--;
    rooted = calloc((size_t)core.nmaps + 1, sizeof *rooted);
    for (int i = 0; rooted && i < core.nmaps; i++) {
        const char *p = core.maps[i].path;
        size_t len = n + strlen(p) + 1;
        char *q = p[0] == '/' ? malloc(len) : NULL;
        if (q)
            snprintf(q, len, "%.*s%s", (int)n, sysroot, p);
        if (q && access(q, R_OK) == 0)
            core.maps[i].path = rooted[i] = q;
        else
            free(q);
    }
}

static void unroot(void)
{
    for (int i = 0; rooted && i < core.nmaps; i++)
        free(rooted[i]);
    free(rooted);
    rooted = NULL;
}

/* The offsets of ".AsyncioDebug" (CLI_ASYNCIO_NOFFS) from the first file the core maps that
 * may hold _asyncio and has them (through --sysroot when given: reroot). 0; 1 when none has
 * them and no _asyncio module is mapped (asyncio not imported); or -1 with why. */
static int core_asyncio_offsets(uint64_t *offs, char *why, size_t n)
{
    int mapped = 0;
    for (int i = 0; i < core.nmaps; i++) {
        int seen = 0;
        if (!ptrace_asyncio_candidate(core.maps[i].path))
            continue;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(core.maps[k].path, core.maps[i].path) == 0;
        if (seen)
            continue;
        mapped |= strstr(base_of(core.maps[i].path), "_asyncio.") != NULL;
        if (ptrace_file_section(core.maps[i].path, ".AsyncioDebug", offs,
                                CLI_ASYNCIO_NOFFS * sizeof *offs) == 0)
            return 0;
    }
    if (!mapped)
        return 1;
    snprintf(why, n,
             "the core's _asyncio module has no .AsyncioDebug section, or its file "
             "cannot be read: give the root it ran in with --sysroot DIR");
    return -1;
}

cJSON *cli_core_dump(const char *path, const char *exe, const char *sysroot, int max_frames,
                     int native, int locals, int tasks, struct pb_err *err)
{
    struct stat st;
    cJSON *body = NULL;
    const struct cli_ext *ext = NULL;
    if (native && !(ext = cli_ext_load(err)))
        return NULL;
    int ver[3], fd = pb_open_regular(path, &st); /* a FIFO would block */
    if (fd < 0) {
        if (fd == -EISDIR || (fd == -EINVAL && stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
            pb_err_set(err, PB_EBADARG, "%s is a directory: give a core file", path);
        else if (fd == -EINVAL)
            pb_err_set(err, PB_EBADARG, "%s is not a regular file: give a core file", path);
        else
            pb_err_set(err, fd, "cannot open %s: %s", path, pb_strerror(fd));
        return NULL;
    }
    if (st.st_size == 0) {
        close(fd);
        pb_err_set(err, PB_EBADARG, "%s is empty: not a core file", path);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        pb_err_set(err, -errno, "cannot map %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    if (cli_core_file_parse(&core, map, size) < 0) {
        pb_err_set(err, PB_EBADARG, "%s is not a 64-bit ELF core file", path);
        goto out;
    }
    core_ext = ext;
    if (sysroot) {
        struct stat rs;
        if (stat(sysroot, &rs) != 0 || !S_ISDIR(rs.st_mode)) {
            pb_err_set(err, PB_EBADARG,
                       "--sysroot %s is not a directory: give the root the "
                       "core's process saw as /",
                       sysroot);
            goto out;
        }
        reroot(sysroot);
    }
    const struct core_map *m = interp_map(exe, ver);
    const char *symfile = exe ? exe : m ? m->path : NULL;
    char beside[PATH_MAX + 16];
    exe_libpython(exe, &m, ver, &symfile, beside, sizeof beside);
    unsigned long addrs[CLI_READ_NSYMS];
    uint64_t want = cli_core_file_expected_size(&core);
    if (want > size) {
        PB_LOG(PB_LOG_INFO, "%s is truncated: %zu of %llu bytes", path, size,
               (unsigned long long)want);
    }
    if (!m && want > size) {
        pb_err_set(err, PB_EBADARG,
                   "%s is truncated (%zu of the %llu bytes its headers "
                   "describe: a full disk, ulimit -c or a copy in progress): its list of mapped "
                   "files is cut off; take the core again",
                   path, size, (unsigned long long)want);
        goto out;
    }
    if (!m) {
        pb_err_set(err, PB_ENOPYTHON,
                   "%s maps no libpython3.X%s: give the interpreter with "
                   "--exe PATH",
                   path, exe ? " nor the --exe file" : " nor a pythonX.Y executable");
        goto out;
    }
    if (tasks && cli_read_tasks_check(ver, "in a core", err) < 0)
        goto out;
    if (ptrace_file_syms(symfile, m->start, m->off, cli_read_syms, CLI_READ_NSYMS, addrs) < 0) {
        pb_err_set(err, -ENOENT,
                   "cannot read the symbols of %s (the core's interpreter): give "
                   "it with --exe PATH, or the root it ran in with --sysroot DIR",
                   symfile);
        goto out;
    }
    body = cli_read_stacks(core_read, core.pid, ver, addrs, symfile, max_frames, locals, err);
    if (!body && want > size)
        pb_err_set(err, PB_EBADARG,
                   "%s is truncated (%zu of the %llu bytes its headers describe: "
                   "a full disk, ulimit -c or a copy in progress): the interpreter's memory is cut "
                   "off; take the core again",
                   path, size, (unsigned long long)want);
    if (body) {
        cli_read_native_ids(body, core_read, core_task);
        cli_read_finish(body, 0);
        if (native)
            core_native(body, ver, m->path, native > 1);
        if (tasks) {
            uint64_t offs[CLI_ASYNCIO_NOFFS];
            char why[256] = "";
            int rc = core_asyncio_offsets(offs, why, sizeof why);
            cli_read_tasks_add(body, core_read, ver, addrs, rc == 0 ? offs : NULL,
                               rc == 1 ? NULL : why);
        }
        cJSON_AddStringToObject(body, "core", path);
        core_meta(body, m);
        if (want > size) {
            cJSON *tr = cJSON_AddObjectToObject(body, "truncated");
            cJSON_AddNumberToObject(tr, "size", (double)size);
            cJSON_AddNumberToObject(tr, "expected", (double)want);
            fprintf(stderr,
                    "probing: note: %s is truncated (%zu of the %llu bytes its headers "
                    "describe): frames and values past the cut are missing\n",
                    path, size, (unsigned long long)want);
        }
    }
out:
    unroot();
    cli_core_file_free(&core);
    munmap(map, size);
    memset(&core, 0, sizeof core);
    return body;
}
