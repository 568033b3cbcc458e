/* SPDX-License-Identifier: MIT */
/* The sampler's data (prof.h): samples, deduplicated stacks and frames, thread names, and the
 * live tables perf.samples, perf.stacks and perf.frames built from them.
 * Symbolisation happens here, on the drain thread, never in the signal handler: native pcs
 * through dladdr1 (the symbol must contain the pc, else "[module]"), C++ names
 * demangled with the process's own __cxa_demangle when one is loaded (symbols.c); Python frames
 * through sig_pyrt_describe as "func (file:line)".
 * Merging (pb_stack_merge, shared with debug --dump --native): the native stack is walked
 * innermost first; each interpreter eval-loop frame (_PyEval_EvalFrameDefault, or a detached part of
 * it: evalpart.c) is replaced by
 * the Python frames that C call ran: the Python frames up to and including the next entry frame
 * (pyrt_sig_frame.entry). When the counts of
 * eval-loop frames and entry frames differ (a frame being pushed or popped at that instant),
 * all Python frames go in place of the innermost eval-loop frame, the other eval-loop frames
 * are dropped, and without any eval-loop frame (wall-mode reads, unwind failure) the Python
 * frames go on top of the native ones. Names never hold ';' or newlines (':' and ' ').
 * One mutex guards everything: the drain thread adds, the task thread fills tables. */
#include "prof.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings.h"
#include "core/rows.h"

enum { K_PY, K_NATIVE };

struct pframe {
    int kind;
    int is_eval;
    unsigned char internal, startup; /* native: prof_sym_internal, prof_sym_startup */
    char *name;                      /* folded-safe */
    char *func;
    char *file;
    int line;
    uintptr_t addr;
};

struct pstack {
    int n;
    int *fids; /* innermost first */
    uint64_t hash;
};

struct psample {
    double ts;
    int tid;
    int sid;
    unsigned char on_cpu, wall;
    signed char gil; /* prof_raw.gil */
};

struct pthreadname {
    int tid;
    int from_python;
    int has_samples;
    char name[64];
};

/* Open-addressing map from a 64-bit key to an int (value + 1 stored; 0 = empty). */
struct imap {
    uint64_t *keys;
    int *vals;
    size_t cap, n;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct pframe *frames;
static size_t nframes, capframes;
static struct pstack *stacks;
static size_t nstacks, capstacks;
static struct psample *samples;
static size_t nsamples, capsamples;
static long long lost_full;
/* perf.max_samples, read at the start and once a second (prof_store_tick), not per sample:
 * a setting read takes the settings' lock. */
static long long max_samples;
static struct pthreadname *tnames;
static size_t ntnames, captnames;
static struct imap native_map;  /* pc -> fid */
static struct imap pycache_map; /* hash(code, lasti) -> fid, cleared every tick */
static struct imap pyname_map;  /* hash(name) -> fid (collisions checked) */
static struct imap stack_map;   /* hash(fids) -> sid (collisions checked) */
/* Code objects read this tick (code address -> index in codes): a loop's frames differ only
 * in lasti, so its code object is read once, not once per instruction. Cleared every tick. */
struct pcode {
    uintptr_t code;
    int kind;                /* sig_pyrt_code_get's answer */
    struct pyrt_sig_code *c; /* when kind == 0 */
    unsigned gen;            /* the tick it was last read or checked in (code_gen) */
};
/* Code objects may be freed and their addresses reused: an entry is checked again (one read:
 * sig_pyrt_code_same) at its first use in each tick, read afresh when it changed, and dropped
 * at a tick when it was not used in the one before. */
static unsigned code_gen;
static struct imap code_map;
static struct pcode *codes;
static size_t ncodes, capcodes;
static struct pyrt_sig_code code_scratch;

/* perf.samples_by_stack: the samples per (thread, stack), kept as samples are added so that
 * the usual GROUP BY stack_id reads one row per stack instead of every sample. */
struct pcount {
    int tid, sid;
    long long samples, on_cpu;
    double first, last;
};
static struct pcount *counts;
static size_t ncounts, capcounts;
static struct imap count_map; /* tid << 32 | sid -> index in counts */

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h ? h : 1;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return mix(h);
}

static void imap_free(struct imap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static int imap_grow(struct imap *m)
{
    struct imap nm;
    nm.cap = m->cap ? m->cap * 2 : 1024;
    nm.n = 0;
    nm.keys = calloc(nm.cap, sizeof *nm.keys);
    nm.vals = calloc(nm.cap, sizeof *nm.vals);
    if (!nm.keys || !nm.vals) {
        free(nm.keys);
        free(nm.vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->vals[i])
            continue;
        size_t j = mix(m->keys[i]) & (nm.cap - 1);
        while (nm.vals[j])
            j = (j + 1) & (nm.cap - 1);
        nm.keys[j] = m->keys[i];
        nm.vals[j] = m->vals[i];
        nm.n++;
    }
    imap_free(m);
    *m = nm;
    return 0;
}

/* Visits the entries of key: returns each value in turn via *it (start *it at 0); -1 when
 * there is no more. */
static int imap_next(const struct imap *m, uint64_t key, size_t *it)
{
    if (!m->cap)
        return -1;
    size_t j = (mix(key) + *it) & (m->cap - 1);
    for (; *it < m->cap; (*it)++, j = (j + 1) & (m->cap - 1)) {
        if (!m->vals[j])
            return -1;
        if (m->keys[j] == key) {
            (*it)++;
            return m->vals[j] - 1;
        }
    }
    return -1;
}

static int imap_put(struct imap *m, uint64_t key, int val)
{
    if ((m->n + 1) * 2 > m->cap && imap_grow(m) < 0)
        return -1;
    size_t j = mix(key) & (m->cap - 1);
    while (m->vals[j])
        j = (j + 1) & (m->cap - 1);
    m->keys[j] = key;
    m->vals[j] = val + 1;
    m->n++;
    return 0;
}

static void clean_name(char *s)
{
    for (; *s; s++)
        if (*s == ';')
            *s = ':';
        else if (*s == '\n' || *s == '\r')
            *s = ' ';
}

/* arr (cap elements, n used) with room for one more: itself, or moved and doubled (from 1024).
 * NULL when out of memory; arr is then unchanged and still the caller's. Drain thread. */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return arr;
    size_t nc = *cap ? *cap * 2 : 1024;
    void *na = realloc(arr, nc * elem);
    if (na)
        *cap = nc;
    return na;
}

static int frame_new(int kind, const char *name, const char *func, const char *file, int line,
                     uintptr_t addr, int is_eval)
{
    struct pframe *nf = grow(frames, &capframes, nframes, sizeof *frames);
    if (!nf)
        return -1;
    frames = nf;
    struct pframe *f = &frames[nframes];
    f->kind = kind;
    f->is_eval = is_eval;
    f->name = strdup(name);
    f->func = func ? strdup(func) : NULL;
    f->file = file ? strdup(file) : NULL;
    f->line = line;
    f->addr = addr;
    if (!f->name) {
        free(f->func);
        free(f->file);
        return -1;
    }
    clean_name(f->name);
    return (int)nframes++;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Native frame of pc (depth > 0: a return address, looked up at pc - 1). */
static int native_fid(uintptr_t pc, int depth)
{
    size_t it = 0;
    int fid = imap_next(&native_map, pc, &it);
    struct prof_sym sy;
    char name[sizeof sy.module + 4];
    if (fid >= 0)
        return fid;
    prof_sym_describe(pc, depth, &sy);
    if (sy.name[0])
        pb_strlcpy(name, sy.name, sizeof name);
    else if (sy.module[0])
        /* Unknown function of a stripped object: one name per object, so its time adds up
         * in one frame rather than one per pc (perf.frames.address keeps the pc). */
        snprintf(name, sizeof name, "[%s]", base_name(sy.module));
    else
        snprintf(name, sizeof name, "0x%lx", (unsigned long)pc);
    fid = frame_new(K_NATIVE, name, sy.name[0] ? name : NULL, sy.module[0] ? sy.module : NULL, -1,
                    pc, sy.is_eval);
    if (fid >= 0) {
        frames[fid].internal = (unsigned char)prof_sym_internal(&sy);
        frames[fid].startup = (unsigned char)prof_sym_startup(&sy);
        imap_put(&native_map, pc, fid);
    }
    return fid;
}

static void codes_clear(void)
{
    for (size_t i = 0; i < ncodes; i++)
        free(codes[i].c);
    free(codes);
    codes = NULL;
    ncodes = capcodes = 0;
    imap_free(&code_map);
}

/* Reads what describing frames of the code object at code needs into p. */
static void code_fill(struct pcode *p, uintptr_t code)
{
    free(p->c);
    p->code = code;
    p->c = NULL;
    p->gen = code_gen;
    p->kind = sig_pyrt_code_get(code, &code_scratch);
    if (p->kind == 0) {
        size_t n = offsetof(struct pyrt_sig_code, table) + code_scratch.tn;
        p->c = malloc(n);
        if (p->c)
            memcpy(p->c, &code_scratch, n);
        else
            p->kind = -1;
    }
}

/* What describing frames of the code object at code needs: read at its first frame, checked
 * at its first frame of each later tick; NULL when it is not a (readable) code object. */
static const struct pyrt_sig_code *code_get(uintptr_t code)
{
    size_t it = 0;
    int i = imap_next(&code_map, (uint64_t)code, &it);
    if (i < 0) {
        struct pcode *nc = grow(codes, &capcodes, ncodes, sizeof *codes);
        if (!nc)
            return NULL;
        codes = nc;
        codes[ncodes].c = NULL;
        code_fill(&codes[ncodes], code);
        i = (int)ncodes++;
        imap_put(&code_map, (uint64_t)code, i);
    } else if (codes[i].gen != code_gen) {
        if (codes[i].kind == 0 && sig_pyrt_code_same(code, codes[i].c))
            codes[i].gen = code_gen;
        else
            code_fill(&codes[i], code);
    }
    return codes[i].kind == 0 ? codes[i].c : NULL;
}

/* A tick: entries not used since the tick before go. */
static void codes_age(void)
{
    size_t n = 0;
    imap_free(&code_map);
    for (size_t i = 0; i < ncodes; i++) {
        if (code_gen - codes[i].gen >= 2) {
            free(codes[i].c);
            continue;
        }
        codes[n] = codes[i];
        imap_put(&code_map, (uint64_t)codes[n].code, (int)n);
        n++;
    }
    ncodes = n;
}

static int py_fid(const struct pyrt_sig_frame *pf)
{
    uint64_t key = mix((uint64_t)pf->code * 31 + (uint64_t)(unsigned)pf->lasti);
    size_t it = 0;
    int fid;
    char name[1400]; /* func (256), " (", file (1024), ":line)" */
    int line = -1;
    fid = imap_next(&pycache_map, key, &it);
    if (fid >= 0 || fid == -2)
        return fid >= 0 ? fid : -1; /* -2: a frame to leave out */
    const struct pyrt_sig_code *c = code_get(pf->code);
    if (!c || pf->lasti < c->prologue) { /* not code, or incomplete (sig_pyrt_frames_fast) */
        imap_put(&pycache_map, key, -2);
        return -1;
    }
    line = sig_pyrt_code_line(c, pf->lasti);
    snprintf(name, sizeof name, "%s (%s:%d)", c->func, c->file, line);
    clean_name(name);
    uint64_t nk = str_hash(name);
    it = 0;
    while ((fid = imap_next(&pyname_map, nk, &it)) >= 0)
        if (frames[fid].kind == K_PY && strcmp(frames[fid].name, name) == 0)
            break;
    if (fid < 0) {
        fid = frame_new(K_PY, name, c->func, c->file, line, 0, 0);
        if (fid < 0)
            return -1;
        imap_put(&pyname_map, nk, fid);
    }
    imap_put(&pycache_map, key, fid);
    return fid;
}

static int stack_id(const int *fids, int n)
{
    uint64_t h = 7;
    size_t it = 0;
    int sid;
    for (int i = 0; i < n; i++)
        h = mix(h * 1000003ULL + (uint64_t)fids[i]);
    while ((sid = imap_next(&stack_map, h, &it)) >= 0)
        if (stacks[sid].n == n && memcmp(stacks[sid].fids, fids, (size_t)n * sizeof *fids) == 0)
            return sid;
    struct pstack *ns = grow(stacks, &capstacks, nstacks, sizeof *stacks);
    if (!ns)
        return -1;
    stacks = ns;
    struct pstack *s = &stacks[nstacks];
    s->n = n;
    s->hash = h;
    s->fids = malloc((size_t)(n ? n : 1) * sizeof *fids);
    if (!s->fids)
        return -1;
    memcpy(s->fids, fids, (size_t)n * sizeof *fids);
    imap_put(&stack_map, h, (int)nstacks);
    return (int)nstacks++;
}

static struct pthreadname *tname_get(int tid, int create)
{
    for (size_t i = 0; i < ntnames; i++)
        if (tnames[i].tid == tid)
            return &tnames[i];
    if (!create)
        return NULL;
    if (ntnames == captnames) {
        size_t nc = captnames ? captnames * 2 : 64;
        struct pthreadname *nt = realloc(tnames, nc * sizeof *nt);
        if (!nt)
            return NULL;
        tnames = nt;
        captnames = nc;
    }
    memset(&tnames[ntnames], 0, sizeof tnames[0]);
    tnames[ntnames].tid = tid;
    return &tnames[ntnames++];
}

void prof_store_thread_name(int tid, const char *name, int from_python)
{
    pthread_mutex_lock(&mu);
    struct pthreadname *t = tname_get(tid, 1);
    if (t && (from_python || !t->from_python)) {
        snprintf(t->name, sizeof t->name, "%s", name);
        t->from_python = from_python;
    }
    pthread_mutex_unlock(&mu);
}

int prof_store_has_thread_name(int tid)
{
    pthread_mutex_lock(&mu);
    int r = tname_get(tid, 0) != NULL;
    pthread_mutex_unlock(&mu);
    return r;
}

static void count_sample(const struct psample *s)
{
    uint64_t key = (uint64_t)(uint32_t)s->tid << 32 | (uint32_t)s->sid;
    size_t it = 0;
    int i = imap_next(&count_map, key, &it);
    if (i < 0) {
        struct pcount *nc = grow(counts, &capcounts, ncounts, sizeof *counts);
        if (!nc || imap_put(&count_map, key, (int)ncounts) < 0)
            return;
        counts = nc;
        i = (int)ncounts++;
        counts[i] = (struct pcount){s->tid, s->sid, 0, 0, s->ts, s->ts};
    }
    struct pcount *c = &counts[i];
    c->samples++;
    c->on_cpu += s->on_cpu;
    c->first = s->ts < c->first ? s->ts : c->first;
    c->last = s->ts > c->last ? s->ts : c->last;
}

void prof_store_add(const struct prof_raw *r, int wall)
{
    int fids[PROF_MAX_NATIVE + PROF_MAX_PY];
    int nat[PROF_MAX_NATIVE], py[PROF_MAX_PY];
    int nn = 0, np = 0, n = 0, evals = 0;
    pthread_mutex_lock(&mu);
    long long maxs = max_samples;
    if (maxs > 0 && (long long)nsamples >= maxs) {
        lost_full++;
        pthread_mutex_unlock(&mu);
        return;
    }
    unsigned char is_eval[PROF_MAX_NATIVE], entry[PROF_MAX_PY];
    struct pb_merge_step steps[PROF_MAX_NATIVE + PROF_MAX_PY];
    for (int i = 0; i < r->nnative && i < PROF_MAX_NATIVE; i++) {
        int f = native_fid(r->native[i], i);
        if (f < 0)
            continue;
        is_eval[nn] = (unsigned char)frames[f].is_eval;
        nat[nn++] = f;
        evals += frames[f].is_eval;
    }
    /* Python frames, and which ones start an eval-loop call (entry frames). */
    for (int i = 0; i < r->npy && i < PROF_MAX_PY; i++) {
        int f = py_fid(&r->py[i]);
        if (f < 0)
            continue;
        entry[np] = (unsigned char)(r->py[i].entry != 0);
        py[np++] = f;
    }
    int m = np > 0 && evals > 0 ? pb_stack_merge(is_eval, nn, entry, np, steps) : -1;
    if (m >= 0) {
        for (int i = 0; i < m; i++)
            if (steps[i].kind == PB_MERGE_PY)
                fids[n++] = py[steps[i].index];
            else if (!is_eval[steps[i].index])
                fids[n++] = nat[steps[i].index];
    } else if (np > 0 && evals > 0) {
        int done = 0;
        for (int i = 0; i < nn; i++) {
            if (!frames[nat[i]].is_eval) {
                fids[n++] = nat[i];
            } else if (!done) {
                for (int k = 0; k < np; k++)
                    fids[n++] = py[k];
                done = 1;
            }
        }
    } else {
        for (int k = 0; k < np; k++)
            fids[n++] = py[k];
        for (int i = 0; i < nn; i++)
            fids[n++] = nat[i];
    }
    int sid = n > 0 ? stack_id(fids, n) : -1;
    if (sid >= 0) {
        if (nsamples == capsamples) {
            size_t nc = capsamples ? capsamples * 2 : 4096;
            struct psample *ns = realloc(samples, nc * sizeof *ns);
            if (!ns) {
                lost_full++;
                pthread_mutex_unlock(&mu);
                return;
            }
            samples = ns;
            capsamples = nc;
        }
        struct psample *s = &samples[nsamples++];
        s->ts = r->ts;
        s->tid = r->tid;
        s->sid = sid;
        s->on_cpu = (unsigned char)r->on_cpu;
        s->gil = (signed char)r->gil;
        s->wall = (unsigned char)wall;
        struct pthreadname *t = tname_get(r->tid, 1);
        if (t)
            t->has_samples = 1;
        count_sample(s);
    }
    pthread_mutex_unlock(&mu);
}

void prof_store_tick(void)
{
    long long maxs = core_setting_int("perf.max_samples");
    /* Code objects may be freed and their addresses reused: forget the (code, lasti) cache,
     * check each code object again at its next use. */
    pthread_mutex_lock(&mu);
    max_samples = maxs;
    imap_free(&pycache_map);
    code_gen++;
    codes_age();
    pthread_mutex_unlock(&mu);
}

void prof_store_clear(void)
{
    long long maxs = core_setting_int("perf.max_samples");
    pthread_mutex_lock(&mu);
    max_samples = maxs;
    for (size_t i = 0; i < nframes; i++) {
        free(frames[i].name);
        free(frames[i].func);
        free(frames[i].file);
    }
    free(frames);
    frames = NULL;
    nframes = capframes = 0;
    for (size_t i = 0; i < nstacks; i++)
        free(stacks[i].fids);
    free(stacks);
    stacks = NULL;
    nstacks = capstacks = 0;
    free(samples);
    samples = NULL;
    nsamples = capsamples = 0;
    free(tnames);
    tnames = NULL;
    ntnames = captnames = 0;
    lost_full = 0;
    free(counts);
    counts = NULL;
    ncounts = capcounts = 0;
    imap_free(&count_map);
    imap_free(&native_map);
    imap_free(&pycache_map);
    codes_clear();
    imap_free(&pyname_map);
    imap_free(&stack_map);
    prof_sym_reset();
    pthread_mutex_unlock(&mu);
}

void prof_store_counts(long long *ns, long long *nst, int *threads, long long *lost)
{
    int t = 0;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < ntnames; i++)
        t += tnames[i].has_samples;
    if (ns)
        *ns = (long long)nsamples;
    if (nst)
        *nst = (long long)nstacks;
    if (threads)
        *threads = t;
    if (lost)
        *lost = lost_full;
    pthread_mutex_unlock(&mu);
}

/* ---- the tables ---- */

int prof_samples_fill(struct probe_rows *r, struct pb_err *err)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; !core_rows_error(r) && i < nsamples; i++) {
        const struct psample *s = &samples[i];
        const struct pthreadname *t = tname_get(s->tid, 0);
        core_rows_add_real(r, s->ts);
        core_rows_add_int(r, s->tid);
        core_rows_add_text(r, t ? t->name : NULL);
        core_rows_add_int(r, s->sid);
        core_rows_add_int(r, s->on_cpu);
        core_rows_add_text(r, s->wall ? "wall" : "cpu");
        s->gil < 0 ? core_rows_add_null(r) : core_rows_add_int(r, s->gil);
    }
    pthread_mutex_unlock(&mu);
    int rc = core_rows_error(r);
    return rc < 0 ? pb_err_set(err, rc, "perf.samples: out of memory") : 0;
}

int prof_stack_counts_fill(struct probe_rows *r, struct pb_err *err)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; !core_rows_error(r) && i < ncounts; i++) {
        const struct pcount *c = &counts[i];
        const struct pthreadname *t = tname_get(c->tid, 0);
        core_rows_add_int(r, c->tid);
        core_rows_add_text(r, t ? t->name : NULL);
        core_rows_add_int(r, c->sid);
        core_rows_add_int(r, c->samples);
        core_rows_add_int(r, c->on_cpu);
        core_rows_add_real(r, c->first);
        core_rows_add_real(r, c->last);
    }
    pthread_mutex_unlock(&mu);
    int rc = core_rows_error(r);
    return rc < 0 ? pb_err_set(err, rc, "perf.samples_by_stack: out of memory") : 0;
}

/* The range of stack ids to list: all, one, or none (an id not there). */
static void sid_range(long long only, size_t *lo, size_t *hi)
{
    *lo = 0;
    *hi = nstacks;
    if (only >= 0) {
        *lo = only < (long long)nstacks ? (size_t)only : nstacks;
        *hi = *lo < nstacks ? *lo + 1 : *lo;
    } else if (only < -1) {
        *hi = 0;
    }
}

/* The clean view of stack s (the same rule as debug --dump --native, prof_sym_internal and
 * prof_sym_startup): keep[k] = 0 for CPython's own frames anywhere and for start-up frames at
 * the root; all kept when that would leave nothing. Returns how many are kept. */
static int clean_view(const struct pstack *s, unsigned char *keep)
{
    int root = s->n, n = 0;
    while (root > 0 && frames[s->fids[root - 1]].kind == K_NATIVE &&
           frames[s->fids[root - 1]].startup)
        root--;
    for (int k = 0; k < s->n; k++) {
        const struct pframe *f = &frames[s->fids[k]];
        keep[k] = (unsigned char)(k < root && !(f->kind == K_NATIVE && f->internal));
        n += keep[k];
    }
    if (n == 0)
        for (int k = 0; k < s->n; k++)
            keep[k] = 1, n++;
    return n;
}

/* Frame names of s outermost first joined by ';' (those keep marks, all when keep is NULL). */
static char *folded_of(const struct pstack *s, const unsigned char *keep)
{
    size_t len = 1, off = 0;
    for (int k = 0; k < s->n; k++)
        len += strlen(frames[s->fids[k]].name) + 1;
    char *folded = malloc(len);
    if (!folded)
        return NULL;
    for (int k = s->n - 1; k >= 0; k--) { /* outermost first */
        if (keep && !keep[k])
            continue;
        size_t l = strlen(frames[s->fids[k]].name);
        if (off)
            folded[off++] = ';';
        memcpy(folded + off, frames[s->fids[k]].name, l);
        off += l;
    }
    folded[off] = '\0';
    return folded;
}

int prof_stacks_fill(struct probe_rows *r, long long only_sid, struct pb_err *err)
{
    int rc = 0;
    size_t lo, hi;
    pthread_mutex_lock(&mu);
    sid_range(only_sid, &lo, &hi);
    for (size_t i = lo; rc == 0 && !core_rows_error(r) && i < hi; i++) {
        const struct pstack *s = &stacks[i];
        unsigned char *keep = malloc((size_t)s->n + 1);
        char *clean = NULL, *all = NULL;
        if (keep)
            clean_view(s, keep);
        if (!keep || !(clean = folded_of(s, keep)) || !(all = folded_of(s, NULL))) {
            free(keep);
            free(clean);
            rc = -ENOMEM;
            break;
        }
        core_rows_add_int(r, (long long)i);
        core_rows_add_int(r, s->n);
        core_rows_add_text(r, clean);
        core_rows_add_text(r, all);
        free(keep);
        free(clean);
        free(all);
    }
    pthread_mutex_unlock(&mu);
    if (rc == 0)
        rc = core_rows_error(r);
    return rc < 0 ? pb_err_set(err, rc, "perf.stacks: out of memory") : 0;
}

int prof_frames_fill(struct probe_rows *r, long long only_sid, struct pb_err *err)
{
    int rc = 0;
    size_t lo, hi;
    pthread_mutex_lock(&mu);
    sid_range(only_sid, &lo, &hi);
    for (size_t i = lo; rc == 0 && !core_rows_error(r) && i < hi; i++) {
        const struct pstack *s = &stacks[i];
        unsigned char *keep = malloc((size_t)s->n + 1);
        if (!keep) {
            rc = -ENOMEM;
            break;
        }
        clean_view(s, keep);
        for (int k = 0; !core_rows_error(r) && k < s->n; k++) {
            const struct pframe *f = &frames[s->fids[k]];
            core_rows_add_int(r, (long long)i);
            core_rows_add_int(r, k);
            core_rows_add_text(r, f->kind == K_PY ? "python" : "native");
            core_rows_add_text(r, f->name);
            core_rows_add_text(r, f->func);
            core_rows_add_text(r, f->file);
            f->kind == K_PY ? core_rows_add_int(r, f->line) : core_rows_add_null(r);
            f->kind == K_NATIVE ? core_rows_add_int(r, (long long)f->addr) : core_rows_add_null(r);
            core_rows_add_int(r, !keep[k]);
        }
        free(keep);
    }
    pthread_mutex_unlock(&mu);
    if (rc == 0)
        rc = core_rows_error(r);
    return rc < 0 ? pb_err_set(err, rc, "perf.frames: out of memory") : 0;
}
