/* SPDX-License-Identifier: MIT */
/* The CLI's private library (probing-cli.so, injector/cli/ext/ext.h), loaded on demand: the
 * commands that need libdw, libelf, libedit or SQLite (debug --dump --native, dump --core
 * --native, repl on a terminal, cluster query --reduce) call cli_ext_load first; every other
 * command never maps those libraries nor the six they bring, so the dynamic loader starts the
 * CLI with libcjson and libc only. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const struct cli_ext *cli_ext_load(struct pb_err *err)
{
    static const struct cli_ext *ext;
    if (ext)
        return ext;
    char dir[4096], lib[4200];
    cli_libdir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/%s", dir, CLI_EXT_LIB);
    /* never closed: libedit and libdw keep state for the command's life */
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h)
        ext = dlsym(h, CLI_EXT_ENTRY);
    if (!ext)
        pb_err_set(err, -ENOENT,
                   "cannot load the CLI's private library: %s: reinstall probing "
                   "('make install': it belongs beside the probes) or set PROBING_LIBDIR",
                   h ? "it has no " CLI_EXT_ENTRY " (from another build of probing)" : dlerror());
    return ext;
}

int cli_ext_check(struct pb_err *err)
{
    char dir[4096], lib[4200];
    cli_libdir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/%s", dir, CLI_EXT_LIB);
    if (access(lib, R_OK) == 0)
        return 0;
    return pb_err_set(err, -ENOENT,
                      "cannot load the CLI's private library: %s: %s: reinstall "
                      "probing ('make install': it belongs beside the probes) or set "
                      "PROBING_LIBDIR",
                      lib, strerror(errno));
}
