/* SPDX-License-Identifier: MIT */
/* What the probe's static libuv refers to in its place. Debian's libuv_a.a is built as PIE, not
 * PIC: it reads three data symbols of libc PC-relatively, which a shared object cannot do with a
 * symbol defined in another object. The Makefile renames those references in its copy of the
 * archive (objcopy --redefine-sym, PROBE_UV_SYMS) to the hidden definitions below:
 * - probe_uv_in6addr_any: the same constant as libc's in6addr_any (udp.c; unused by the probe).
 * - probe_uv_environ: an empty environment; libuv reads `environ` only in uv_os_environ and in
 *   uv_spawn without an env, which the probe never calls (a child of ours would get no
 *   environment rather than the target's: the probe spawns nothing).
 * - probe_uv_stderr: a stream that discards what is written: libuv writes to stderr only for
 *   ancillary data on IPC pipes, which the probe never opens, and the probe never writes to its
 *   host's stderr anyway. Set by core_uv_static_init() before the loop exists. */
#include <netinet/in.h>
#include <stdio.h>

#include "core.h"

const struct in6_addr probe_uv_in6addr_any = IN6ADDR_ANY_INIT;
static char *no_environ[] = {NULL};
char **probe_uv_environ = no_environ;
FILE *probe_uv_stderr;

static ssize_t discard(void *cookie, const char *buf, size_t n)
{
    (void)cookie;
    (void)buf;
    return (ssize_t)n;
}

int core_uv_static_init(void)
{
    if (!probe_uv_stderr)
        probe_uv_stderr = fopencookie(NULL, "w", (cookie_io_functions_t){.write = discard});
    return probe_uv_stderr ? 0 : -1;
}
