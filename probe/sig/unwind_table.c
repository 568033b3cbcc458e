/* SPDX-License-Identifier: MIT */
/* The module table of unwind.h, built outside any signal handler: dl_iterate_phdr lists the
 * loaded objects (inside its callback they cannot be unmapped, so plain reads are fine there),
 * a new table is published by an atomic pointer swap when the loader's adds/subs counters
 * moved, and replaced tables are freed once no handler can hold them. One caller at a time
 * (the sampler's drain thread, or the loop thread while the drain thread does not run). */
#include "unwind.h"

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pyrt/read.h"

#define MAX_MODS 8192
#define MAX_RETIRED 64

static struct unwind_table *retired[MAX_RETIRED];
static int nretired;
static unsigned long long seen_adds, seen_subs;
static unsigned next_gen = 1;

/* Drain-thread scratch for a build (one builder at a time). */
static struct unwind_mod scratch[MAX_MODS];

struct build {
    int peek; /* only read the counters */
    int n;
    unsigned long long adds, subs;
};

static int build_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct build *bd = arg;
    struct unwind_mod m;
    if (bd->n == 0 && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        bd->adds = info->dlpi_adds, bd->subs = info->dlpi_subs;
    if (bd->peek)
        return 1;
    if (bd->n == MAX_MODS)
        return 1;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
            uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
            if (!m.lo || lo < m.lo)
                m.lo = lo;
            if (hi > m.hi)
                m.hi = hi;
        } else if (p->p_type == PT_GNU_EH_FRAME) {
            m.hdr = info->dlpi_addr + p->p_vaddr;
        }
    }
    if (m.hi && m.hdr)
        sig_unwind_hdr_parse(&m,
                             (const uint8_t *)m.hdr); /* mapped while the loader's lock is held */
    if (m.hi && m.table && m.count > 0) {
        uint32_t n = (m.count + UNWIND_STRIDE - 1) / UNWIND_STRIDE;
        int32_t *ix = malloc(n * sizeof *ix);
        if (ix) {
            const int32_t *t = (const int32_t *)m.table;
            for (uint32_t i = 0; i < n; i++)
                ix[i] = t[2 * (size_t)i * UNWIND_STRIDE];
            m.index = ix;
            m.nindex = n;
        }
    }
    scratch[bd->n++] = m; /* n counts callbacks; empty entries are dropped below */
    return 0;
}

static int mod_cmp(const void *a, const void *b)
{
    const struct unwind_mod *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void sig_unwind_loader_counts(unsigned long long *adds, unsigned long long *subs)
{
    struct build bd = {1, 0, 0, 0};
    dl_iterate_phdr(build_cb, &bd);
    *adds = bd.adds;
    *subs = bd.subs;
}

int sig_unwind_table_refresh(void)
{
    struct build bd = {1, 0, 0, 0};
    sig_unwind_loader_counts(&bd.adds, &bd.subs);
    if (atomic_load(&unwind_cur_table) && bd.adds == seen_adds && bd.subs == seen_subs)
        return 0;
    if (nretired == MAX_RETIRED)
        return -1; /* handlers never quiet yet: keep the current table for now */
    bd.peek = 0;
    bd.n = 0;
    dl_iterate_phdr(build_cb, &bd);
    int n = 0;
    for (int i = 0; i < bd.n; i++)
        if (scratch[i].hi)
            scratch[n++] = scratch[i];
    qsort(scratch, (size_t)n, sizeof scratch[0], mod_cmp);
    struct unwind_table *t = malloc(sizeof *t + (size_t)n * sizeof t->mods[0]);
    if (!t) {
        for (int i = 0; i < n; i++)
            free((void *)scratch[i].index);
        return -1;
    }
    memcpy(t->mods, scratch, (size_t)n * sizeof t->mods[0]);
    t->n = n;
    t->gen = next_gen++;
    if (next_gen == 0)
        next_gen = 1;
    seen_adds = bd.adds, seen_subs = bd.subs;
    struct unwind_table *old = atomic_exchange(&unwind_cur_table, t);
    if (old)
        retired[nretired++] = old;
    return 1;
}

static void table_free(struct unwind_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++)
        free((void *)t->mods[i].index);
    free(t);
}

void sig_unwind_table_reclaim(int (*quiet)(void))
{
    if (quiet && nretired && !quiet())
        return;
    for (int i = 0; i < nretired; i++)
        table_free(retired[i]);
    nretired = 0;
    if (!quiet) {
        table_free(atomic_exchange(&unwind_cur_table, NULL));
        seen_adds = seen_subs = 0;
    }
}

int sig_unwind_mod_index(struct unwind_mod *m)
{
    enum { CHUNK = 4096 }; /* entries per read (32 KiB) */
    if (!m->table || m->count == 0)
        return -1;
    uint32_t n = (m->count + UNWIND_STRIDE - 1) / UNWIND_STRIDE;
    int32_t *ix = malloc(n * sizeof *ix), *buf = malloc(CHUNK * 8);
    if (!ix || !buf) {
        free(ix);
        free(buf);
        return -1;
    }
    for (uint32_t at = 0; at < m->count; at += CHUNK) {
        uint32_t k = m->count - at < CHUNK ? m->count - at : CHUNK;
        if (pyrt_read(m->table + (uintptr_t)at * 8, buf, (size_t)k * 8) != 0) {
            free(ix);
            free(buf);
            return -1;
        }
        for (uint32_t i = 0; i < k; i += UNWIND_STRIDE) /* CHUNK is a multiple of the stride */
            ix[(at + i) / UNWIND_STRIDE] = buf[2 * (size_t)i];
    }
    free(buf);
    m->index = ix;
    m->nindex = n;
    return 0;
}
