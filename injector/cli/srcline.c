/* SPDX-License-Identifier: MIT */
/* file:line of native frames from DWARF, on the CLI's side (elfutils' libdw): the probe sends a
 * native frame's address, object path and load bias (probing/dump with native), and the CLI
 * opens that object itself, through /proc/PID/root so a container's files are the ones read,
 * with its separate debug file when there is one (.gnu_debuglink, build-id under /usr/lib/debug).
 * Nothing of libdw is loaded into the target. One Dwfl per object, kept for the command's life. */
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define MAX_OBJECTS 256

struct obj {
    char *path;
    unsigned long long bias;
    Dwfl *dwfl; /* NULL: the object could not be read */
};

static struct obj objs[MAX_OBJECTS];
static int nobjs;
static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static Dwfl *obj_open(pid_t pid, const char *path, unsigned long long bias)
{
    char full[4096];
    int fd = -1;
    if (pid > 0) {
        snprintf(full, sizeof full, "/proc/%d/root%s", (int)pid, path);
        fd = open(full, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        snprintf(full, sizeof full, "%s", path);
        fd = open(full, O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0)
        return NULL;
    Dwfl *d = dwfl_begin(&callbacks);
    if (!d) {
        close(fd);
        return NULL;
    }
    /* libdw owns fd from here. add_p_vaddr: bias is the load bias, so runtime addresses look
     * up as they are. */
    if (!dwfl_report_elf(d, path, full, fd, (GElf_Addr)bias, true)) {
        dwfl_end(d);
        return NULL;
    }
    dwfl_report_end(d, NULL, NULL);
    return d;
}

int cli_srcline(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias,
                char *file, size_t n, int *line, char *func, size_t fn,
                unsigned long long *off)
{
    struct obj *o = NULL;
    if (!path || !*path || path[0] != '/')
        return -1;
    for (int i = 0; i < nobjs && !o; i++)
        if (objs[i].bias == bias && strcmp(objs[i].path, path) == 0)
            o = &objs[i];
    if (!o) {
        if (nobjs == MAX_OBJECTS)
            return -1;
        o = &objs[nobjs];
        o->path = strdup(path);
        if (!o->path)
            return -1;
        o->bias = bias;
        o->dwfl = obj_open(pid, path, bias);
        nobjs++;
    }
    if (!o->dwfl)
        return -1;
    Dwfl_Module *m = dwfl_addrmodule(o->dwfl, (Dwarf_Addr)pc);
    Dwfl_Line *l = m ? dwfl_module_getsrc(m, (Dwarf_Addr)pc) : NULL;
    const char *src = l ? dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL) : NULL;
    /* the symbol tables of the object and its debug file (static functions of a stripped
     * object have their names there) */
    GElf_Off so = 0;
    GElf_Sym es;
    const char *sym = m ? dwfl_module_addrinfo(m, (GElf_Addr)pc, &so, &es, NULL, NULL, NULL)
                        : NULL;
    *off = so;
    file[0] = func[0] = '\0';
    if (sym)
        snprintf(func, fn, "%s", sym);
    if (src && *line > 0)
        snprintf(file, n, "%s", src);
    return file[0] || func[0] ? 0 : -1;
}
