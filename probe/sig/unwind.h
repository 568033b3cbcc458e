/* SPDX-License-Identifier: MIT */
/* Native stack unwinding from a signal handler (probe-internal; docs/architecture.md, "signal
 * handlers"). The unwinder reads the DWARF call-frame information (.eh_frame through each
 * module's .eh_frame_hdr search table) itself: every read of the target's memory is
 * fault-proof (pyrt_read, process_vm_readv on our own pid), it takes no lock, allocates
 * nothing and never calls into the dynamic loader, so a thread interrupted while it holds the
 * loader's lock (dlopen, dlclose, dl_iterate_phdr) cannot make a handler wait.
 * Which module holds a pc comes from a module table built outside any handler with
 * dl_iterate_phdr (sig_unwind_table_refresh, the sampler's drain thread) and published by an
 * atomic pointer swap; a replaced table is freed only once no handler can still hold it
 * (sig_unwind_table_reclaim with the caller's "no handler running" test). A module unloaded after
 * the table was built costs at most a wrong or short stack, never a fault. A handler without
 * the table (crash capture) passes sig_unwind_maps_find instead: modules from /proc/self/maps
 * read in the handler (unwind_maps.c). Both users go through the one entry, sig_unwind_native,
 * with the same fallback: where no module or no CFI covers a pc, the frame-pointer chain is
 * followed. x86-64 only; elsewhere the frame pointer chain alone. */
#ifndef PROBE_UNWIND_H
#define PROBE_UNWIND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

/* One loaded object: its executable range and .eh_frame_hdr search table. */
#define UNWIND_STRIDE 128 /* search table entries per index entry (struct unwind_mod.index) */
struct unwind_mod {
    uintptr_t lo, hi; /* union of its executable PT_LOAD segments */
    uintptr_t hdr;    /* .eh_frame_hdr (0: none) */
    uintptr_t table;  /* its sorted (initial location, FDE) table, 0 if unusable */
    uint32_t count;   /* entries in table */
    /* In a published table: the initial location of every UNWIND_STRIDE-th entry of table,
     * copied when the table was built (the table's own memory), so that a search reads one
     * block of UNWIND_STRIDE entries instead of one entry per halving (a dozen system calls for
     * libpython); NULL elsewhere. */
    const int32_t *index;
    uint32_t nindex;
};

/* A published module table: sorted by lo, never changed once published. */
struct unwind_table {
    unsigned gen; /* nonzero, new for every table */
    int n;
    struct unwind_mod mods[];
};
extern _Atomic(struct unwind_table *) unwind_cur_table; /* unwind.c */
/* Reads the search table's place and size from the .eh_frame_hdr bytes h (32 of them) of m->hdr
 * into m (0 when its layout is not the usual one). */
void sig_unwind_hdr_parse(struct unwind_mod *m, const uint8_t *h);

/* Finds the module holding pc into *m: 0, or -1. Must be async-signal-safe. */
typedef int (*unwind_find_fn)(uintptr_t pc, struct unwind_mod *m, void *arg);

/* A per-thread cache of unwind rules by pc, and scratch space (preallocated by the caller,
 * only ever used by one thread at a time): entries carry the module table's generation, so a
 * new table voids them. */
#define UNWIND_CACHE 512
struct unwind_rule {
    uintptr_t pc;
    unsigned gen;
    int8_t cfa_reg; /* 6 rbp or 7 rsp */
    uint8_t signal; /* the frame is a signal trampoline ('S') */
    int16_t ra_off; /* return address at CFA + ra_off */
    int16_t fp_off; /* rbp saved at CFA + fp_off; 0: rbp unchanged */
    int32_t cfa_off;
};
#define UNWIND_MAXREC 1024 /* the longest CIE read (GCC's are a few dozen bytes) */
/* The longest FDE read. Most are a few hundred bytes; a PGO+LTO interpreter's eval loop has one
 * of about 7 KB (Debian sid's python3.13-3.15: up to 6,956 bytes), libtorch 2.x's up to 2.5 KB.
 * Scratch pages past what an unwind reads are never touched (not resident). */
#define UNWIND_MAXFDE 16384
#define UNWIND_WINDOW 8192 /* stack bytes copied per read (a Python stack needs 2-4) */
#define UNWIND_FDES 16     /* recent FDEs kept whole: an interrupted function is found again */
struct unwind_fde {
    uintptr_t start, end, fde_addr, cie_addr;
    unsigned gen;
    uint16_t fde_len, cie_len;
    uint8_t fde[448], cie[192];
};
#define UNWIND_ROWS 8 /* recent rule rows by pc range (a function body is usually one row) */
struct unwind_row {
    uintptr_t lo, hi;
    unsigned gen; /* 0: empty */
    struct unwind_rule r;
};
struct unwind_cache {
    /* What every unwind writes comes first, before e[], and the window (the sampler makes
     * these bytes resident when it makes a thread's slot: a first sample, which does not know
     * the thread's stack yet, reads it through the window; it takes no page fault here). */
    int pid;
    unsigned row_next, f_next;
    /* Set by the caller before each unwind, 0 for none: [stack_lo, stack_hi) is memory of the
     * calling thread's own stack known to be mapped (from the interrupted sp to the top of the
     * mapping that holds it), read directly instead of through the window. */
    uintptr_t stack_lo, stack_hi;
    uintptr_t win_lo;
    size_t win_len;
    struct unwind_row rows[UNWIND_ROWS];
    uint8_t win[UNWIND_WINDOW]; /* a copy of the stack being unwound (a first sample's) */
    struct unwind_rule e[UNWIND_CACHE];
    struct unwind_fde f[UNWIND_FDES];
    uint8_t fde[UNWIND_MAXFDE], cie[UNWIND_MAXREC]; /* scratch of one unwind */
    int32_t blk[2 * UNWIND_STRIDE];                 /* one block of a search table */
};

/* Async-signal-safe. The native stack from the interrupted context uc, innermost first (the
 * first pc exact, the others return addresses), at most max. find (NULL: the published module
 * table, whose rules are then cached in cache) locates modules; cache (required) is the calling
 * thread's own. Returns the count (>= 1 when uc has a pc). */
int sig_unwind_native(const ucontext_t *uc, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                      struct unwind_cache *cache);

/* The same from a pc and a stack pointer alone (a thread blocked in a system call, read from
 * /proc/self/task/TID/syscall without stopping it: prof/native.c), with the published module
 * table: no frame pointer is known, so where a frame's rules need the caller's rbp (not saved
 * by an inner frame) it is guessed from the stack (unwind.c, guess_rbp). alt 0 takes the best
 * guess; alt k > 0 the k-th other guess that also ends at the outermost frame, for a caller
 * that can tell a wrong guess; *nalt (may be NULL) gets how many other such guesses there are.
 * Async-signal-safe; cache is the caller's own. */
int sig_unwind_native_pcsp(uintptr_t pc, uintptr_t sp, uintptr_t *out, int max,
                           struct unwind_cache *cache, int alt, int *nalt);

/* How far below rbp the stack pointer is at pc in the function that starts at start, from its
 * prologue: endbr64, push %rbp, mov %rsp,%rbp, then pushes of registers, moves between
 * registers and subtractions from rsp, as compilers lay out a function built with frame
 * pointers (and ASan's interceptors, a 2 KiB frame); the frame pointer of a thread read
 * without its registers is then sp + that, where its frame's CFA is rbp + 16. Decoding stops at
 * the first other instruction: the depth counts only when every instruction up to pc was read,
 * or a subtraction from rsp was (a frame's fixed size comes last). -1 for anything else
 * (rsp realigned, a frame pointer set up otherwise, a start more than 64 bytes before pc that
 * the decoding does not get past). Reads the code with pyrt_read; async-signal-safe. */
int64_t sig_unwind_prologue_depth(uintptr_t start, uintptr_t pc);

/* Not in a signal handler. Rebuilds and publishes the module table when the loader's object
 * list changed since the last build (dl_iterate_phdr's adds/subs counters), keeping the
 * replaced one until sig_unwind_table_reclaim frees it. Returns 1 if a table was published, 0 if
 * nothing changed, -1 when it could not (memory, or too many tables awaiting reclaim). */
int sig_unwind_table_refresh(void);
/* Not in a signal handler. The loader's counts of objects loaded and unloaded so far
 * (dl_iterate_phdr's dlpi_adds/dlpi_subs, read from its first object: the call stops there). */
void sig_unwind_loader_counts(unsigned long long *adds, unsigned long long *subs);
/* Not in a signal handler. Frees replaced tables when quiet() says that no handler is running
 * now (one that started before the swap has then ended); with quiet NULL, frees them all and
 * the current one too (the caller knows no handler can run). */
void sig_unwind_table_reclaim(int (*quiet)(void));
/* Async-signal-safe: the published table's module holding pc (unwind_find_fn shape). */
int sig_unwind_table_find(uintptr_t pc, struct unwind_mod *m, void *arg);
/* ---- unwind_maps.c: modules from /proc/self/maps (no table needed; crash capture) ---- */

/* The caller's buffer for /proc/self/maps (preallocated: a large process has thousands of
 * lines). */
struct unwind_maps {
    char *buf;
    size_t cap, len;
};
/* One line of it. */
struct unwind_mapline {
    unsigned long long lo, hi, off;
    const char *path, *path_end; /* empty for an anonymous mapping */
};
/* Reads /proc/self/maps into m (cut at m->cap - 1 bytes). Async-signal-safe. */
void sig_unwind_maps_read(struct unwind_maps *m);
/* The line of m holding pc. 0, or -1. */
int sig_unwind_maps_line(const struct unwind_maps *m, uintptr_t pc, struct unwind_mapline *ml);
/* The mapping holding addr, asked of the kernel (the PROCMAP_QUERY ioctl of Linux 6.11+ on fd,
 * an open /proc/self/maps: one lookup, no text) into ml, its name (a path, "[stack]", or empty
 * for an anonymous mapping) into name (cap bytes), which ml->path then points at. 0; -1 when
 * nothing answers (no mapping there, a longer name); -2 when the kernel has no such ioctl (read
 * the file instead). Async-signal-safe. */
int sig_unwind_maps_query(int fd, uintptr_t addr, struct unwind_mapline *ml, char *name,
                          size_t cap);
/* Where the file of ml is mapped at offset 0 (its ELF header). 0, or -1. */
int sig_unwind_maps_base(const struct unwind_maps *m, const struct unwind_mapline *ml,
                         uintptr_t *base);
/* unwind_find_fn over the maps in arg (a struct unwind_maps *) and the ELF headers in memory.
 * Async-signal-safe. */
int sig_unwind_maps_find(uintptr_t pc, struct unwind_mod *m, void *arg);

/* The bounds [range[0], range[1]) of the function (or detached part of one) whose FDE in
 * module m covers pc, read fault-proof. Async-signal-safe. 0, or -1 (no FDE covers pc). */
int sig_unwind_fde_bounds(const struct unwind_mod *m, uintptr_t pc, uintptr_t range[2]);

/* Not in a signal handler: gives m (from sig_unwind_mod_from_image) an index of its search table
 * like a published table's, read fault-proof (malloc'd: free m->index after). 0, or -1. */
int sig_unwind_mod_index(struct unwind_mod *m);

/* Fills m from the ELF image whose file offset 0 is mapped at base (its headers read
 * fault-proof); *bias (may be NULL) gets the load bias. Async-signal-safe. 0, or -1. */
int sig_unwind_mod_from_image(uintptr_t base, struct unwind_mod *m, uintptr_t *bias);

#endif
