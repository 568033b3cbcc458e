/* SPDX-License-Identifier: MIT */
/* The unwinder's caches (unwind.h), each with its own key and eviction; all keyed to the module
 * table's generation, so a new table voids them:
 *  - the thread's rule slots (struct unwind_cache e[]): one rule per pc, direct-mapped by a hash
 *    of the pc, overwritten on collision;
 *  - the thread's rows (rows[]): rules by pc range (a function body is usually one row), the
 *    UNWIND_ROWS most recent, round-robin;
 *  - the thread's FDEs (f[]): recent FDE and CIE bytes by function range, round-robin;
 *  - the rule rows shared by every thread: sets by the pc's page, a way chosen by the row's
 *    start, a seqlock per entry (lock-free, wait-free: a writer that loses its compare-and-swap
 *    just does not cache).
 * Only the simple shape most frames have is cached as a rule (sig_unwind_cache_rule). Async-signal-
 * safe: no allocation, no lock (tools/check_signal_safety.sh checks unwind_cache.o). */
#ifndef PROBE_UNWIND_CACHE_H
#define PROBE_UNWIND_CACHE_H

#include <stdint.h>

#include "unwind.h"
#include "unwind_cfi.h"

/* The rule of row s in the cached shape (CFA = rsp/rbp + n, RA and rbp saved at fixed offsets
 * or rbp untouched; the outermost frame as ra_off 0) into *e (pc, gen and signal left to the
 * caller): 1, or 0 when s has another shape. */
int sig_unwind_cache_rule(const struct unwind_cfi_state *s, struct unwind_rule *e);

/* The thread's rule slot for pc (hit when its pc and gen match). */
struct unwind_rule *sig_unwind_cache_slot(struct unwind_cache *c, uintptr_t pc);

/* The thread's rows: the row of generation gen holding pc into *e (keyed to pc): 0, or -1.
 * sig_unwind_cache_row_put keeps r for the locations [row[0], row[1]). */
int sig_unwind_cache_row_get(const struct unwind_cache *c, uintptr_t pc, unsigned gen,
                             struct unwind_rule *e);
void sig_unwind_cache_row_put(struct unwind_cache *c, const uintptr_t row[2],
                              const struct unwind_rule *r);

/* The shared rows, the same way (r->pc chooses the set). */
int sig_unwind_cache_shared_get(uintptr_t pc, unsigned gen, struct unwind_rule *out);
void sig_unwind_cache_shared_put(const uintptr_t row[2], const struct unwind_rule *r);

/* The thread's FDEs: the one of generation gen whose function holds pc, or NULL.
 * sig_unwind_cache_fde_put keeps the FDE f (fde_len bytes at fde, its record at fde_addr) and its
 * CIE (cie_len bytes at cie, at cie_addr) when both fit. */
const struct unwind_fde *sig_unwind_cache_fde_get(const struct unwind_cache *c, uintptr_t pc,
                                                  unsigned gen);
void sig_unwind_cache_fde_put(struct unwind_cache *c, unsigned gen,
                              const struct sig_unwind_cfi_fde *f, const uint8_t *fde,
                              uint32_t fde_len, uintptr_t fde_addr, const uint8_t *cie,
                              uint32_t cie_len, uintptr_t cie_addr);

#endif
