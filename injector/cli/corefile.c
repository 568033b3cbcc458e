/* SPDX-License-Identifier: MIT */
/* An ELF core file read as memory (corefile.h): the program headers, the notes of its PT_NOTE
 * segments, and reads at an address from a PT_LOAD segment or an NT_FILE mapping. Bounds are
 * checked as pb_in_range does (off <= size && len <= size - off), never as off + len > size,
 * which a value near 2^64 wraps past. */
#include "corefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pb.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef NT_SIGINFO
#define NT_SIGINFO 0x53494749
#endif

/* NT_FILE's descriptor d of n bytes: count, page size, count (start, end, page offset)
 * triples, then count NUL-terminated names. Mappings whose name does not end within the
 * descriptor are dropped, and so is every one after it. */
static void file_note(struct core_file *c, const unsigned char *d, size_t n)
{
    uint64_t count, page;
    if (n < 16 || c->maps)
        return;
    memcpy(&count, d, 8);
    memcpy(&page, d + 8, 8);
    if (count > 65536 || count * 24 > n - 16)
        return;
    c->maps = calloc(count + 1, sizeof *c->maps);
    const char *names = (const char *)d + 16 + count * 24, *stop = (const char *)d + n;
    for (uint64_t i = 0; c->maps && i < count && names < stop; i++) {
        const char *nul = memchr(names, '\0', (size_t)(stop - names));
        if (!nul)
            break; /* unterminated: it would run past the note */
        uint64_t v[3];
        memcpy(v, d + 16 + i * 24, sizeof v);
        c->maps[c->nmaps++] = (struct core_map){v[0], v[1], v[2] * page, names};
        names = nul + 1;
    }
}

/* The notes of one PT_NOTE segment: NT_PRSTATUS, NT_PRPSINFO, NT_FILE. */
static void notes_read(struct core_file *c, const Elf64_Phdr *p)
{
    if (p->p_offset % 4 || !pb_in_range(p->p_offset, p->p_filesz, c->size))
        return;
    size_t at = p->p_offset, end = p->p_offset + p->p_filesz;
    while (end - at >= sizeof(Elf64_Nhdr)) {
        const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(c->data + at);
        /* in 64 bits: a 32-bit size near 2^32 rounds up past 2^32, not to 0 */
        uint64_t name = ((uint64_t)nh->n_namesz + 3) & ~(uint64_t)3;
        uint64_t desc = ((uint64_t)nh->n_descsz + 3) & ~(uint64_t)3;
        at += sizeof *nh;
        if (name > end - at || desc > end - at - name)
            break;
        const unsigned char *d = c->data + at + name;
        size_t dn = nh->n_descsz;
        at += name + desc;
        if (nh->n_type == NT_PRSTATUS && dn >= 36 && c->ntids < CORE_MAX_THREADS) {
            memcpy(&c->tids[c->ntids], d + 32, sizeof(int)); /* elf_prstatus.pr_pid */
#if defined(__x86_64__)
            /* pr_reg (user_regs_struct) at 112: rbp is its 5th word, rip the 17th, rsp the 20th */
            if (dn >= 112 + 27 * 8) {
                memcpy(&c->regs[c->ntids][0], d + 112 + 16 * 8, 8);
                memcpy(&c->regs[c->ntids][1], d + 112 + 19 * 8, 8);
                memcpy(&c->regs[c->ntids][2], d + 112 + 4 * 8, 8);
            }
#endif
            if (c->ntids == 0 && c->signo == 0) {
                short cursig; /* elf_prstatus.pr_cursig, after pr_info's three ints */
                memcpy(&cursig, d + 12, sizeof cursig);
                c->signo = cursig > 0 && cursig < 128 ? cursig : 0;
            }
            c->ntids++;
        } else if (nh->n_type == NT_SIGINFO && dn >= 12) {
            int si[3]; /* siginfo_t: si_signo, si_errno, si_code */
            memcpy(si, d, sizeof si);
            if (si[0] > 0 && si[0] < 128) {
                c->signo = si[0];
                c->sigcode = si[2];
            }
        } else if (nh->n_type == NT_PRPSINFO && dn >= 28 && c->pid == 0) {
            int pid;
            memcpy(&pid, d + 24, sizeof pid); /* struct elf_prpsinfo.pr_pid (x86-64, aarch64) */
            c->pid = pid;
            if (dn >= 136) { /* pr_fname[16] at 40, pr_psargs[80] at 56 */
                memcpy(c->fname, d + 40, 16);
                memcpy(c->psargs, d + 56, 80);
            }
        } else if (nh->n_type == NT_AUXV) {
            for (size_t i = 0; i + 16 <= dn; i += 16) {
                uint64_t kv[2];
                memcpy(kv, d + i, sizeof kv);
                if (kv[0] == AT_NULL)
                    break;
                if (kv[0] == AT_PHDR)
                    c->at_phdr = kv[1];
                else if (kv[0] == AT_EXECFN)
                    c->at_execfn = kv[1];
            }
        } else if (nh->n_type == NT_FILE) {
            file_note(c, d, dn);
        }
    }
}

int cli_core_file_parse(struct core_file *c, const void *data, size_t size)
{
    const Elf64_Ehdr *eh = data;
    memset(c, 0, sizeof *c);
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_type != ET_CORE ||
        eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff % 8 ||
        !pb_in_range(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), size))
        return -ENOEXEC;
    c->data = data;
    c->size = size;
    c->ph = (const Elf64_Phdr *)(c->data + eh->e_phoff);
    c->nph = eh->e_phnum;
    for (int i = 0; i < c->nph; i++)
        if (c->ph[i].p_type == PT_NOTE)
            notes_read(c, &c->ph[i]);
    return 0;
}

void cli_core_file_free(struct core_file *c)
{
    if (c) {
        free(c->maps);
        c->maps = NULL;
        c->nmaps = 0;
    }
}

long cli_core_file_read_one(const struct core_file *c, uintptr_t addr, void *dst, size_t n)
{
    for (int i = 0; i < c->nph; i++) {
        const Elf64_Phdr *p = &c->ph[i];
        if (p->p_type != PT_LOAD || addr < p->p_vaddr || addr - p->p_vaddr >= p->p_memsz)
            continue;
        uint64_t in = addr - p->p_vaddr;
        if (n > p->p_memsz - in)
            n = p->p_memsz - in;
        if (in < p->p_filesz) {
            if (n > p->p_filesz - in)
                n = p->p_filesz - in;
            if (!pb_in_range(p->p_offset, p->p_filesz, c->size))
                return -1;
            memcpy(dst, c->data + p->p_offset + in, n);
            return (long)n;
        }
        break; /* not in the core: perhaps in a mapped file */
    }
    for (int i = 0; i < c->nmaps; i++) {
        const struct core_map *m = &c->maps[i];
        if (addr < m->start || addr >= m->end)
            continue;
        if (n > m->end - addr)
            n = m->end - addr;
        uint64_t at = m->off + (addr - m->start);
        if (at < m->off || at > INT64_MAX)
            return -1;
        int fd = pb_open_regular(m->path, NULL); /* the core names it: no FIFO, no device */
        if (fd < 0)
            return -1;
        ssize_t r = pread(fd, dst, n, (off_t)at);
        close(fd);
        return r > 0 ? (long)r : -1;
    }
    return -1;
}

int cli_core_file_read(const struct core_file *c, uintptr_t addr, void *dst, size_t n)
{
    while (n > 0) {
        long r = cli_core_file_read_one(c, addr, dst, n);
        if (r <= 0)
            return -1;
        addr += (size_t)r;
        dst = (char *)dst + r;
        n -= (size_t)r;
    }
    return 0;
}

uint64_t cli_core_file_expected_size(const struct core_file *c)
{
    uint64_t want = 0;
    for (int i = 0; i < c->nph; i++) {
        const Elf64_Phdr *p = &c->ph[i];
        uint64_t end = p->p_offset + p->p_filesz;
        if (end < p->p_offset)
            end = UINT64_MAX;
        if ((p->p_type == PT_LOAD || p->p_type == PT_NOTE) && end > want)
            want = end;
    }
    return want;
}

const struct core_map *cli_core_file_exe_map(const struct core_file *c)
{
    for (int i = 0; c->at_phdr && i < c->nmaps; i++)
        if (c->at_phdr >= c->maps[i].start && c->at_phdr < c->maps[i].end)
            return &c->maps[i];
    return NULL;
}

int cli_core_file_build_id(const struct core_file *c, uintptr_t start, char *hex, size_t cap)
{
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    unsigned char notes[4096];
    uintptr_t bias = UINTPTR_MAX;
    if (cap < 129 || cli_core_file_read(c, start, &eh, sizeof eh) != 0 ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64 ||
        eh.e_phoff > 65536 ||
        cli_core_file_read(c, start + eh.e_phoff, ph, eh.e_phnum * sizeof *ph))
        return -1;
    for (int i = 0; i < eh.e_phnum && bias == UINTPTR_MAX; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            bias = start - (uintptr_t)ph[i].p_vaddr; /* wraps as the loader's does */
    for (int i = 0; i < eh.e_phnum && bias != UINTPTR_MAX; i++) {
        size_t n = ph[i].p_filesz < sizeof notes ? (size_t)ph[i].p_filesz : sizeof notes;
        if (ph[i].p_type != PT_NOTE || n < sizeof(Elf64_Nhdr) ||
            cli_core_file_read(c, bias + (uintptr_t)ph[i].p_vaddr, notes, n) != 0)
            continue;
        size_t at = 0;
        while (n - at >= sizeof(Elf64_Nhdr)) {
            Elf64_Nhdr nh;
            memcpy(&nh, notes + at, sizeof nh);
            uint64_t name = ((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3;
            uint64_t desc = ((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3;
            at += sizeof nh;
            if (name > n - at || desc > n - at - name)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                memcmp(notes + at, "GNU", 4) == 0 && nh.n_descsz > 0 && nh.n_descsz <= 64) {
                for (uint32_t k = 0; k < nh.n_descsz; k++)
                    snprintf(hex + 2 * k, 3, "%02x", notes[at + name + k]);
                return 0;
            }
            at += name + desc;
        }
    }
    return -1;
}
