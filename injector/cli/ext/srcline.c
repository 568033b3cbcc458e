/* SPDX-License-Identifier: MIT */
/* file:line of native frames from DWARF, on the CLI's side (elfutils' libdw, in the CLI's
 * private library: ext.h): the probe sends a native frame's address, object path and load bias
 * (probing/dump with native), and the CLI opens that object itself, through /proc/PID/root so
 * a container's files are the ones read, with its separate debug file when there is one
 * (.gnu_debuglink, build-id under /usr/lib/debug). Nothing of libdw is loaded into the target.
 * One Dwfl per object, kept for the command's life. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ext.h"
#include "pb.h"

#define MAX_OBJECTS 256

struct obj {
    char *path;
    unsigned long long bias;
    Dwfl *dwfl; /* NULL: the object could not be read */
    int parts_done, nparts;
    unsigned long parts[8]; /* the eval loop's detached parts (ext_eval_part) */
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
        fd = pb_open_regular(full, NULL); /* a core names any path: no FIFO, no device */
    }
    if (fd < 0) {
        snprintf(full, sizeof full, "%s", path);
        fd = pb_open_regular(full, NULL);
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

static struct obj *obj_get(pid_t pid, const char *path, unsigned long long bias)
{
    struct obj *o = NULL;
    if (!path || !*path || path[0] != '/')
        return NULL;
    for (int i = 0; i < nobjs && !o; i++)
        if (objs[i].bias == bias && strcmp(objs[i].path, path) == 0)
            o = &objs[i];
    if (!o) {
        if (nobjs == MAX_OBJECTS)
            return NULL;
        o = &objs[nobjs];
        o->path = strdup(path);
        if (!o->path)
            return NULL;
        o->bias = bias;
        o->dwfl = obj_open(pid, path, bias);
        nobjs++;
    }
    return o->dwfl ? o : NULL;
}

int ext_srcline(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias,
                char *file, size_t n, int *line, char *func, size_t fn, unsigned long long *off)
{
    struct obj *o = obj_get(pid, path, bias);
    if (!o)
        return -1;
    Dwfl_Module *m = dwfl_addrmodule(o->dwfl, (Dwarf_Addr)pc);
    Dwfl_Line *l = m ? dwfl_module_getsrc(m, (Dwarf_Addr)pc) : NULL;
    const char *src = l ? dwfl_lineinfo(l, NULL, line, NULL, NULL, NULL) : NULL;
    /* the symbol tables of the object and its debug file (static functions of a stripped
     * object have their names there) */
    GElf_Off so = 0;
    GElf_Sym es;
    const char *sym = m ? dwfl_module_addrinfo(m, (GElf_Addr)pc, &so, &es, NULL, NULL, NULL) : NULL;
    *off = so;
    file[0] = func[0] = '\0';
    if (sym)
        snprintf(func, fn, "%s", sym);
    if (src && *line > 0)
        snprintf(file, n, "%s", src);
    return file[0] || func[0] ? 0 : -1;
}

/* pb_detached_parts' callbacks over one module: the start of the unwind-table entry (FDE)
 * covering a pc, from the binary search table of .eh_frame_hdr (libdw's CFI API answers the
 * rules at a pc, not which FDE holds them), and its symbol tables. */
struct ehtab {
    Dwfl_Module *m;
    GElf_Addr bias, hdr; /* the table's runtime address: its entries are relative to it */
    const int32_t *t;    /* pairs (initial location, FDE), sorted */
    size_t count;
};

static int ehtab_open(Dwfl_Module *m, struct ehtab *h)
{
    memset(h, 0, sizeof *h);
    h->m = m;
    Elf *e = dwfl_module_getelf(m, &h->bias);
    size_t shstr;
    Elf_Scn *scn = NULL;
    if (!e || elf_getshdrstrndx(e, &shstr) != 0)
        return -1;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstr, sh.sh_name) : NULL;
        if (!name || strcmp(name, ".eh_frame_hdr") != 0)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        const unsigned char *p = d ? d->d_buf : NULL;
        /* version 1; the table's encoding: datarel sdata4 (0x3b), what binutils writes */
        if (!p || d->d_size < 12 || p[0] != 1 || p[3] != 0x3b || p[2] != 0x03)
            return -1;
        uint32_t n;
        size_t at = p[1] == 0xff ? 4 : 8; /* eh_frame_ptr omitted, or sdata4 */
        memcpy(&n, p + at, 4);
        if (at + 4 + (size_t)n * 8 > d->d_size)
            return -1;
        h->hdr = sh.sh_addr + h->bias;
        h->t = (const int32_t *)(p + at + 4);
        h->count = n;
        return 0;
    }
    return -1;
}

static unsigned long cfi_start(unsigned long pc, void *arg)
{
    const struct ehtab *h = arg;
    size_t lo = 0, hi = h->count;
    if (!hi || h->hdr + (GElf_Addr)(int64_t)h->t[0] > pc)
        return 0;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->hdr + (GElf_Addr)(int64_t)h->t[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return (unsigned long)(h->hdr + (GElf_Addr)(int64_t)h->t[2 * lo]);
}

static int sym_starts(unsigned long addr, void *arg)
{
    const struct ehtab *h = arg;
    GElf_Off off = 1;
    GElf_Sym s;
    return dwfl_module_addrinfo(h->m, addr, &off, &s, NULL, NULL, NULL) && off == 0;
}

/* The bytes of [addr, addr + n) of the module's file (its loaded segments), or NULL. */
static const unsigned char *module_bytes(Dwfl_Module *m, unsigned long addr, size_t n)
{
    GElf_Addr bias = 0;
    Elf *e = dwfl_module_getelf(m, &bias);
    size_t size = 0, nph = 0;
    const char *raw = e ? elf_rawfile(e, &size) : NULL;
    if (!raw || elf_getphdrnum(e, &nph) != 0)
        return NULL;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        unsigned long v = addr - bias;
        if (v >= ph.p_vaddr && pb_in_range(v - ph.p_vaddr, n, ph.p_filesz) &&
            pb_in_range(ph.p_offset, ph.p_filesz, size))
            return (const unsigned char *)raw + ph.p_offset + (v - ph.p_vaddr);
    }
    return NULL;
}

int ext_eval_part(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias)
{
    struct obj *o = obj_get(pid, path, bias);
    Dwfl_Module *m = o ? dwfl_addrmodule(o->dwfl, (Dwarf_Addr)pc) : NULL;
    struct ehtab h;
    if (!m || ehtab_open(m, &h) != 0)
        return 0;
    if (!o->parts_done) {
        o->parts_done = 1;
        for (int i = 0, n = dwfl_module_getsymtab(m); i < n; i++) {
            GElf_Sym s;
            GElf_Addr a;
            const char *name = dwfl_module_getsym_info(m, i, &s, &a, NULL, NULL, NULL);
            if (!name || strcmp(name, "_PyEval_EvalFrameDefault") != 0 || !s.st_size)
                continue;
            const unsigned char *code = module_bytes(m, a, s.st_size);
            if (code)
                o->nparts =
                    pb_detached_parts(code, s.st_size, a, cfi_start, sym_starts, &h, o->parts, 8);
            break;
        }
    }
    unsigned long s = o->nparts ? cfi_start(pc, &h) : 0;
    for (int i = 0; s && i < o->nparts; i++)
        if (o->parts[i] == s)
            return 1;
    return 0;
}
