/* SPDX-License-Identifier: MIT */
/* The unwinder's caches (unwind_cache.h). Signal-side code only. */
#include "unwind_cache.h"

#include <stdatomic.h>
#include <string.h>

enum { RA = UNWIND_RA, RBP = UNWIND_RBP, RSP = UNWIND_RSP };

int sig_unwind_cache_rule(const struct unwind_cfi_state *s, struct unwind_rule *e)
{
    if (s->r[RA].how == UNWIND_R_UNDEF) { /* the outermost frame (clone3, _start): the stack ends */
        e->cfa_reg = RSP;
        e->cfa_off = 0;
        e->ra_off = 0; /* never a caller's return address: the end mark */
        e->fp_off = 0;
        return 1;
    }
    if ((s->cfa_reg != RSP && s->cfa_reg != RBP) || s->cfa_off < INT32_MIN ||
        s->cfa_off > INT32_MAX || s->r[RA].how != UNWIND_R_OFF || s->r[RA].v < INT16_MIN ||
        s->r[RA].v > INT16_MAX)
        return 0;
    if (s->r[RBP].how == UNWIND_R_OFF) {
        if (s->r[RBP].v == 0 || s->r[RBP].v < INT16_MIN || s->r[RBP].v > INT16_MAX)
            return 0;
        e->fp_off = (int16_t)s->r[RBP].v;
    } else if (s->r[RBP].how == UNWIND_R_SAME) {
        e->fp_off = 0;
    } else {
        return 0;
    }
    e->cfa_reg = (int8_t)s->cfa_reg;
    e->cfa_off = (int32_t)s->cfa_off;
    e->ra_off = (int16_t)s->r[RA].v;
    return 1;
}

struct unwind_rule *sig_unwind_cache_slot(struct unwind_cache *c, uintptr_t pc)
{
    uintptr_t h = (pc ^ (pc >> 9) ^ (pc >> 20)) * 0x9E3779B97F4A7C15ull;
    return &c->e[(h >> 40) % UNWIND_CACHE];
}

/* ---- the thread's rows: an interrupted pc anywhere in a function body already seen is found
 * again without reading its FDE ---- */

int sig_unwind_cache_row_get(const struct unwind_cache *c, uintptr_t pc, unsigned gen,
                             struct unwind_rule *e)
{
    for (int i = 0; i < UNWIND_ROWS; i++)
        if (c->rows[i].gen == gen && c->rows[i].lo <= pc && pc < c->rows[i].hi) {
            *e = c->rows[i].r;
            e->pc = pc;
            e->gen = gen;
            return 0;
        }
    return -1;
}

void sig_unwind_cache_row_put(struct unwind_cache *c, const uintptr_t row[2],
                              const struct unwind_rule *r)
{
    struct unwind_row *w = &c->rows[c->row_next++ % UNWIND_ROWS];
    w->gen = 0;
    w->lo = row[0], w->hi = row[1];
    w->r = *r;
    w->gen = r->gen;
}

/* ---- the rows shared by every thread (a thread's first samples find what the others
 * learnt): rows of rules by pc range, in sets by the pc's page (SHARED_WAYS rows per set, a
 * row's way chosen by its start, so a row is never held twice in a set). A seqlock per entry,
 * written only by a handler that wins its sequence number with one compare-and-swap (never
 * waiting: a loser just does not cache), read by copying the words and checking the number did
 * not move. A row is put in the set of the pc that found it; other pages of a long row (an
 * interpreter loop's body) join as pcs there are found. ---- */
#define SHARED_SETS 1024
#define SHARED_WAYS 4
struct shared_rule {
    _Atomic unsigned seq;  /* odd while written */
    _Atomic uint64_t w[4]; /* lo, hi, gen << 32 | cfa_off, the rest of the rule */
};
static struct shared_rule shared[SHARED_SETS][SHARED_WAYS];

static struct shared_rule *shared_set(uintptr_t pc)
{
    uintptr_t h = (pc >> 12) * 0x9E3779B97F4A7C15ull;
    return shared[(h >> 40) % SHARED_SETS];
}

int sig_unwind_cache_shared_get(uintptr_t pc, unsigned gen, struct unwind_rule *out)
{
    struct shared_rule *set = shared_set(pc);
    for (int k = 0; k < SHARED_WAYS; k++) {
        struct shared_rule *g = &set[k];
        uint64_t w[4];
        unsigned s1 = atomic_load_explicit(&g->seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        for (int i = 0; i < 4; i++)
            w[i] = atomic_load_explicit(&g->w[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&g->seq, memory_order_relaxed) != s1 || pc < w[0] || pc >= w[1] ||
            (unsigned)(w[2] >> 32) != gen)
            continue;
        out->pc = pc;
        out->gen = gen;
        out->cfa_off = (int32_t)(uint32_t)w[2];
        out->cfa_reg = (int8_t)(uint8_t)w[3];
        out->signal = (uint8_t)(w[3] >> 8);
        out->ra_off = (int16_t)(uint16_t)(w[3] >> 16);
        out->fp_off = (int16_t)(uint16_t)(w[3] >> 32);
        return 0;
    }
    return -1;
}

void sig_unwind_cache_shared_put(const uintptr_t row[2], const struct unwind_rule *r)
{
    struct shared_rule *g = &shared_set(r->pc)[(row[0] >> 4) % SHARED_WAYS];
    uint64_t w[4] = {row[0], row[1], (uint64_t)r->gen << 32 | (uint32_t)r->cfa_off,
                     (uint64_t)(uint8_t)r->cfa_reg | (uint64_t)r->signal << 8 |
                         (uint64_t)(uint16_t)r->ra_off << 16 | (uint64_t)(uint16_t)r->fp_off << 32};
    unsigned s = atomic_load_explicit(&g->seq, memory_order_relaxed);
    if ((s & 1) || !atomic_compare_exchange_strong(&g->seq, &s, s + 1))
        return;
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < 4; i++)
        atomic_store_explicit(&g->w[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&g->seq, s + 2, memory_order_release);
}

/* ---- the thread's FDEs: an interrupted function is found again without its search ---- */

const struct unwind_fde *sig_unwind_cache_fde_get(const struct unwind_cache *c, uintptr_t pc,
                                                  unsigned gen)
{
    for (int i = 0; gen && i < UNWIND_FDES; i++)
        if (c->f[i].gen == gen && c->f[i].start <= pc && pc < c->f[i].end)
            return &c->f[i];
    return NULL;
}

void sig_unwind_cache_fde_put(struct unwind_cache *c, unsigned gen,
                              const struct sig_unwind_cfi_fde *f, const uint8_t *fde,
                              uint32_t fde_len, uintptr_t fde_addr, const uint8_t *cie,
                              uint32_t cie_len, uintptr_t cie_addr)
{
    if (!gen || fde_len > sizeof c->f[0].fde || cie_len > sizeof c->f[0].cie)
        return;
    struct unwind_fde *e = &c->f[c->f_next++ % UNWIND_FDES];
    e->gen = 0;
    memcpy(e->fde, fde, fde_len);
    memcpy(e->cie, cie, cie_len);
    e->fde_len = (uint16_t)fde_len, e->cie_len = (uint16_t)cie_len;
    e->fde_addr = fde_addr, e->cie_addr = cie_addr;
    e->start = f->start, e->end = f->end;
    e->gen = gen;
}
