/* SPDX-License-Identifier: MIT */
/* CPython 3.14+ lets a process refuse the code of external debuggers (PEP 768): with
 * PYTHON_DISABLE_REMOTE_DEBUG set, -X disable-remote-debug, or an embedder's
 * PyConfig.remote_debug = 0, its interpreter's config.remote_debug is 0 and sys.remote_exec is
 * refused. Injecting the probe runs our code in it as surely, so the injector respects that
 * choice too. The value is read from the target's memory, which covers every way of setting it:
 * _PyRuntime starts with _Py_DebugOffsets (cookie, version, then offsets into the interpreter's
 * structures), whose debugger_support.remote_debugging_enabled is the offset of
 * config.remote_debug in PyInterpreterState. Where that offset sits inside _Py_DebugOffsets
 * changes between minor versions (Include/internal/pycore_debug_offsets.h): known per version
 * below, checked against the neighbouring debugger_script_path_size (always 512). */
#include "internal.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "inj.h"

/* offsetof(_Py_DebugOffsets, debugger_support.remote_debugging_enabled) on 64-bit builds. */
static const struct {
    int minor;
    size_t enabled;
} layouts[] = {{14, 728}, {15, 856}};
#define OFF_VERSION 8             /* uint64_t version (PY_VERSION_HEX) */
#define OFF_FREE_THREADED 16      /* uint64_t free_threaded */
#define OFF_INTERPRETERS_HEAD 40  /* runtime_state.interpreters_head */
#define SCRIPT_PATH_SIZE_AFTER 24 /* debugger_script_path_size, 3 fields after */
#define MAX_SCRIPT_PATH_SIZE 512  /* _Py_MAX_SCRIPT_PATH_SIZE */

static int peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec l = {buf, n}, r = {(void *)(uintptr_t)addr, n};
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static uint64_t u64_at(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 1 enabled, 0 disabled, -1 unknown (a version without a known layout, unreadable memory). */
static int enabled(pid_t pid, const struct ptrace_pyver *v)
{
    size_t at = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (v->major == 3 && layouts[i].minor == v->minor)
            at = layouts[i].enabled;
    struct ptrace_maps m;
    if (!at || ptrace_maps_read(pid, &m) < 0)
        return -1;
    const struct ptrace_map *mp = NULL;
    for (size_t i = 0; i < m.n && !mp; i++)
        if (strcmp(m.v[i].path, v->source) == 0)
            mp = &m.v[i];
    struct ptrace_module mod;
    if (!mp || ptrace_module_open(pid, &m, mp, &mod) < 0) {
        ptrace_maps_free(&m);
        return -1;
    }
    unsigned long runtime = ptrace_module_sym(&mod, "_PyRuntime", NULL);
    ptrace_module_close(&mod);
    ptrace_maps_free(&m);
    unsigned char off[1024];
    uint64_t interp = 0;
    int flag = 0;
    if (!runtime || at + SCRIPT_PATH_SIZE_AFTER + 8 > sizeof off ||
        peek(pid, runtime, off, at + SCRIPT_PATH_SIZE_AFTER + 8) < 0)
        return -1;
    uint64_t ver = u64_at(off + OFF_VERSION);
    if (memcmp(off, "xdebugpy", 8) != 0 || (ver >> 24) != 3 ||
        ((ver >> 16) & 0xff) != (uint64_t)v->minor || u64_at(off + OFF_FREE_THREADED) != 0 ||
        u64_at(off + at + SCRIPT_PATH_SIZE_AFTER) != MAX_SCRIPT_PATH_SIZE)
        return -1;
    if (peek(pid, runtime + u64_at(off + OFF_INTERPRETERS_HEAD), &interp, sizeof interp) < 0 ||
        !interp || peek(pid, interp + u64_at(off + at), &flag, sizeof flag) < 0)
        return -1;
    return flag == 1;
}

int ptrace_remote_debug_check(pid_t pid, const struct ptrace_pyver *v, struct pb_err *err)
{
    if (enabled(pid, v) != 0)
        return 0;
    return pb_err_set(err, PB_EAUTH,
                      "process %d (CPython %d.%d) disabled remote debugging "
                      "(PYTHON_DISABLE_REMOTE_DEBUG, -X disable-remote-debug or its embedder's "
                      "PyConfig.remote_debug): probing does not inject into it; start it without "
                      "that to probe it",
                      (int)pid, v->major, v->minor);
}
