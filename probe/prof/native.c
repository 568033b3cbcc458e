/* SPDX-License-Identifier: MIT */
/* Native and Python stacks merged, on demand (prof.h; `debug --dump --native`, the
 * python.native_backtrace table). The stacks come from the asked threads themselves
 * (sig/stack_sig.h: SIGPROF queued to each, the sampler's handler unwinds with the sampler's
 * unwinder and walks the Python frames at the same instant), so the two agree; they are named
 * here (prof_sym_describe, sig_pyrt_describe) and merged like the sampler does (store.c): each
 * eval-loop frame (_PyEval_EvalFrameDefault) stands for the Python frames that C call runs, up
 * to and including the next entry frame. When the counts differ the merge is not trusted and
 * both stacks are kept apart. The handler is installed only for the ask, unless the sampler
 * holds it already. Any thread but a signal handler: one mutex (prof_sig_lock, which the
 * sampler's start and stop take too) makes callers and the sampler's install take turns.
 * prof_native_others lists the threads that run no Python (read the same way: without a
 * Python thread state, their stacks are native only). */
#include "prof.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "sig/stack_sig.h"
#include "sig/unwind.h"

#define NATIVE_WAIT_MS \
    1000                     /* for each batch of threads to answer (a loaded machine may run a
                             * niced target late) */
#define NATIVE_TOTAL_MS 3000 /* for one call, all batches together: threads left are not asked */
#define ASK_ROUNDS 4         /* looks at a thread that alternates between running and waiting */

static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int asking;     /* 1 while prof_native_stacks asks threads (under sig_mu) */
static _Atomic int asking_own; /* ... with the handler installed for it (not the sampler's) */

void prof_sig_lock(void)
{
    pthread_mutex_lock(&sig_mu);
}

void prof_sig_unlock(void)
{
    pthread_mutex_unlock(&sig_mu);
}

void prof_native_fork_prepare(void)
{
    sig_stack_fork_prepare();
}

void prof_native_fork_parent(void)
{
    sig_stack_fork_parent();
}

void prof_native_fork_child(void)
{
    /* The thread that held the lock, or asked, is not in the child. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    sig_mu = fresh;
    sig_stack_fork_child();
    if (atomic_exchange(&asking, 0) && atomic_exchange(&asking_own, 0))
        sig_prof_fork_child(); /* the parent's handler, installed for the ask: removed */
}

static int native_frame(struct prof_nframe *f, uintptr_t pc, int depth)
{
    struct prof_sym sy;
    prof_sym_describe(pc, depth, &sy);
    memset(f, 0, sizeof *f);
    f->kind = PROF_NF_NATIVE;
    f->pc = pc;
    f->offset = sy.offset;
    f->bias = sy.bias;
    f->is_eval = sy.is_eval;
    f->internal = prof_sym_internal(&sy);
    f->startup = prof_sym_startup(&sy);
    f->line = -1;
    f->name = sy.name[0] ? strdup(sy.name) : NULL;
    f->file = sy.module[0] ? strdup(sy.module) : NULL;
    return (sy.name[0] && !f->name) || (sy.module[0] && !f->file) ? -ENOMEM : 0;
}

/* The code objects described during one prof_native_stacks (under sig_mu): threads that run
 * the same code (64 workers of one pool) read its name, file and line table once, each later
 * use checking with one read that the object is still the one described (the address may have
 * been freed and reused). 32 slots, a code looked for in its own and the next three; NULL
 * outside a call or when it could not be had. */
#define CODE_MEMO 32
struct code_memo {
    uintptr_t code; /* 0: empty */
    unsigned seen;  /* the merge (memo_merge) that last checked it */
    struct pyrt_sig_code c;
};
static struct code_memo *memo;
/* Counts merges: one thread's frames, read at one instant, check each code they share once
 * (a pool's worker recursing shows one code many times). */
static unsigned memo_merge;

static int py_frame(struct prof_nframe *f, const struct pyrt_sig_frame *pf)
{
    char func[256], file[1024];
    memset(f, 0, sizeof *f);
    f->kind = PROF_NF_PYTHON;
    struct code_memo *m = NULL;
    if (memo) { /* the code's slot and the next 3: codes that share a slot do not evict each
                   other frame after frame (a thread's stack alternates them) */
        unsigned h = (unsigned)((pf->code * 0x9E3779B97F4A7C15ull) >> 59);
        for (unsigned i = 0; i < 4 && (!m || m->code != pf->code); i++) {
            struct code_memo *e = &memo[(h + i) % CODE_MEMO];
            if (e->code == pf->code || (!m && !e->code))
                m = e;
        }
        if (!m)
            m = &memo[h]; /* all four taken by others: the code's own slot */
    }
    if (!m) {
        sig_pyrt_describe(pf, func, sizeof func, file, sizeof file, &f->line);
        f->name = strdup(func);
        f->file = strdup(file);
    } else {
        if (!(m->code && m->code == pf->code &&
              (m->seen == memo_merge || sig_pyrt_code_same(pf->code, &m->c))))
            m->code = sig_pyrt_code_get(pf->code, &m->c) == 0 ? pf->code : 0;
        m->seen = memo_merge;
        f->line = sig_pyrt_code_line(&m->c, pf->lasti); /* -1 when unreadable (tn 0) */
        f->name = strdup(m->c.func);
        f->file = strdup(m->c.file);
    }
    return f->name && f->file ? 0 : -ENOMEM;
}

static void frames_free(struct prof_nframe *f, int n)
{
    for (int i = 0; f && i < n; i++) {
        free(f[i].name);
        free(f[i].file);
    }
    free(f);
}

void prof_nstack_free(struct prof_nstack *s)
{
    if (!s)
        return;
    frames_free(s->f, s->n);
    frames_free(s->py, s->npy);
    memset(s, 0, sizeof *s);
}

/* Moves *src into dst (the strings change owner). */
static void take(struct prof_nframe *dst, struct prof_nframe *src)
{
    *dst = *src;
    src->name = src->file = NULL;
}

/* A deep copy of frames f[0..n) (NULL when f is), or NULL with *bad set when out of memory. */
static struct prof_nframe *frames_dup(const struct prof_nframe *f, int n, int *bad)
{
    struct prof_nframe *d;
    if (!f)
        return NULL;
    if (!(d = calloc((size_t)n + 1, sizeof *d))) {
        *bad = 1;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        d[i] = f[i];
        d[i].name = f[i].name ? strdup(f[i].name) : NULL;
        d[i].file = f[i].file ? strdup(f[i].file) : NULL;
        if ((f[i].name && !d[i].name) || (f[i].file && !d[i].file))
            *bad = 1;
    }
    return d;
}

/* dst (zeroed) becomes a copy of src: a thread listed twice (a corrupted thread list) is
 * asked once. 0, or -ENOMEM. */
static int nstack_dup(struct prof_nstack *dst, const struct prof_nstack *src)
{
    int bad = 0;
    *dst = *src;
    dst->f = frames_dup(src->f, src->n, &bad);
    dst->py = frames_dup(src->py, src->npy, &bad);
    if (bad) {
        prof_nstack_free(dst);
        return -ENOMEM;
    }
    return 0;
}

struct tid_at {
    long tid;
    int at;
};

static int tid_at_cmp(const void *a, const void *b)
{
    const struct tid_at *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Names and merges one thread's raw stacks into s (pb_stack_merge). all: keep CPython's
 * internals. */
static int merge(const struct stack_sig_result *r, int all, struct prof_nstack *s)
{
    int nn = r->nnative, np = r->npy, rc = -ENOMEM;
    unsigned char is_eval[STACK_SIG_NATIVE], entry[STACK_SIG_PY];
    struct pb_merge_step steps[STACK_SIG_NATIVE + STACK_SIG_PY];
    struct prof_nframe *nat = calloc((size_t)nn + 1, sizeof *nat);
    memo_merge++;
    s->py = calloc((size_t)np + 1, sizeof *s->py);
    s->f = calloc((size_t)nn + (size_t)np + 1, sizeof *s->f);
    if (!nat || !s->py || !s->f)
        goto out;
    for (int i = 0; i < nn; i++) {
        if (native_frame(&nat[i], r->native[i], i) < 0)
            goto out;
        is_eval[i] = (unsigned char)nat[i].is_eval;
        s->evals += nat[i].is_eval;
    }
    for (; s->npy < np; s->npy++) {
        if (py_frame(&s->py[s->npy], &r->py[s->npy]) < 0) {
            s->npy++;
            goto out;
        }
        entry[s->npy] = (unsigned char)r->py[s->npy].entry;
        s->entries += r->py[s->npy].entry != 0;
    }
    int m = pb_stack_merge(is_eval, nn, entry, np, steps);
    s->merged = m >= 0;
    if (s->merged) { /* the Python frames move into f */
        for (int i = 0; i < m; i++) {
            struct prof_nframe *f =
                steps[i].kind == PB_MERGE_PY ? &s->py[steps[i].index] : &nat[steps[i].index];
            if (f->kind == PROF_NF_PYTHON || all || !f->internal)
                take(&s->f[s->n++], f);
        }
        frames_free(s->py, s->npy);
        s->py = NULL;
        s->npy = 0;
        /* the process's or thread's start-up below the outermost Python frame */
        while (!all && s->n > 1 && s->f[s->n - 1].kind == PROF_NF_NATIVE &&
               s->f[s->n - 1].startup) {
            s->n--;
            free(s->f[s->n].name);
            free(s->f[s->n].file);
            s->f[s->n].name = s->f[s->n].file = NULL;
        }
    } else { /* native frames apart, the eval-loop ones kept to show where Python runs */
        for (int i = 0; i < nn; i++)
            if (all || !nat[i].internal || nat[i].is_eval)
                take(&s->f[s->n++], &nat[i]);
    }
    rc = 0;
out:
    frames_free(nat, nn);
    return rc;
}

/* ---- threads blocked in a system call: read, never signalled ---- */

/* A signal with a handler makes a blocked nanosleep, poll, epoll_wait or select return EINTR
 * (even with SA_RESTART), and a ptrace stop does it to epoll_wait too: C code that does not
 * retry would go on as if the time had passed. So a thread the kernel reports blocked in a
 * system call (/proc/self/task/TID/syscall: its number, then the user sp and pc saved at
 * entry) is read without being touched: its native stack unwound from that pc and sp, its
 * Python frames from its thread state. The thread does not run while it is blocked, so its
 * stack is stable; the read is kept only if the same system call at the same sp and pc is still
 * reported afterwards with no context switch in between (the thread never ran). */

/* A thread's /proc/self/task/TID/syscall and schedstat, opened once for the reads before and
 * after its stack's (each read from the start gives the kernel's values of that moment); -1
 * where one could not be opened. */
struct task_files {
    int tid, sys, sched;
};

static void task_files_open(int tid, struct task_files *f)
{
    char path[64];
    f->tid = tid;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    f->sys = open(path, O_RDONLY | O_CLOEXEC);
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    f->sched = f->sys >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
}

static void task_files_close(struct task_files *f)
{
    if (f->sys >= 0)
        close(f->sys);
    if (f->sched >= 0)
        close(f->sched);
}

/* The text of fd from its start, NUL-terminated: its length, or <= 0. */
static long text_at_start(int fd, char *buf, size_t n)
{
    ssize_t k;
    if (fd < 0)
        return -1;
    do
        k = pread(fd, buf, n - 1, 0);
    while (k < 0 && errno == EINTR);
    buf[k > 0 ? k : 0] = '\0';
    return (long)k;
}

/* 1 and *nr, *sp, *pc when the thread is blocked in a system call, else 0 (running, or blocked
 * outside one, or gone). The line is "NR ARG1..ARG6 SP PC" (hex but NR), or "running", or
 * "-1 SP PC" when blocked outside a system call. */
static int blocked_in_syscall(const struct task_files *f, long *nr, uintptr_t *sp, uintptr_t *pc)
{
    char buf[256], *at, *end;
    unsigned long v[8];
    if (text_at_start(f->sys, buf, sizeof buf) <= 0)
        return 0;
    long n = strtol(buf, &end, 10);
    if (end == buf || n < 0)
        return 0;
    for (int i = 0; i < 8; i++) {
        at = end;
        v[i] = strtoul(at, &end, 16);
        if (end == at || (*end != ' ' && *end != '\n' && *end != '\0'))
            return 0;
    }
    if (!v[6] || !v[7])
        return 0;
    *nr = n, *sp = (uintptr_t)v[6], *pc = (uintptr_t)v[7];
    return 1;
}

/* How many times the thread was put on a CPU so far (schedstat's third field: one short line;
 * else, where the kernel keeps no scheduler statistics, the voluntary plus involuntary context
 * switches of its status file, a page of text); 0 when unknown. */
static unsigned long long switches(const struct task_files *f)
{
    char path[64], buf[4096], *end;
    unsigned long long sum = 0;
    if (text_at_start(f->sched, buf, sizeof buf) > 0) {
        const char *p = buf;
        strtoull(p, &end, 10);       /* time on a CPU */
        strtoull(p = end, &end, 10); /* time waiting for one */
        unsigned long long runs = strtoull(p = end, &end, 10);
        if (end != p && runs) /* "0 0 0": scheduler statistics are off */
            return runs;
    }
    snprintf(path, sizeof path, "/proc/self/task/%d/status", f->tid);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    for (const char *k = buf; (k = strstr(k, "ctxt_switches:")) != NULL;) {
        k += sizeof "ctxt_switches:" - 1;
        sum += strtoull(k, &end, 10);
    }
    return sum;
}

/* 1 when the native frames nat[0..nn) hold the eval-loop frames the Python frames py[0..np)
 * need (pb_stack_merge would merge them). */
static int merges(const uintptr_t *nat, int nn, const struct pyrt_sig_frame *py, int np)
{
    unsigned char is_eval[STACK_SIG_NATIVE], entry[STACK_SIG_PY];
    struct pb_merge_step steps[STACK_SIG_NATIVE + STACK_SIG_PY];
    struct prof_sym sy;
    for (int i = 0; i < nn; i++) {
        prof_sym_describe(nat[i], i, &sy);
        is_eval[i] = (unsigned char)sy.is_eval;
    }
    for (int i = 0; i < np; i++)
        entry[i] = (unsigned char)py[i].entry;
    return pb_stack_merge(is_eval, nn, entry, np, steps) >= 0;
}

/* 1 when tid blocks SIGPROF now (/proc/self/task/TID/status, SigBlk): asking it would only
 * wait out the batch (many a C++ library's worker thread blocks every signal). */
static int sigprof_blocked(int tid)
{
    char path[64], buf[4096];
    unsigned long long blk = 0;
    const char *p;
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    if (pb_read_file(path, buf, sizeof buf) <= 0 || !(p = strstr(buf, "\nSigBlk:")) ||
        sscanf(p + 8, "%llx", &blk) != 1)
        return 0;
    return (blk >> (SIGPROF - 1)) & 1;
}

/* Every thread state of the process, listed once per prof_native_stacks (sig_pyrt_threads), and
 * what the frame walks learnt of each code object, kept across the threads read. */
struct tstates {
    uintptr_t ts[256];
    long ids[256];
    long long interps[256];
    int n;
    struct pyrt_code_memo walk_memo[256]; /* the frame walks' code checks, across threads */
};

#define READ_TRIES 8  /* reads of a blocked thread's stack, each checked against a wake */
#define WAKE_POLLS 10 /* looks, 1 ms apart, at a thread that woke while it was read */

/* 1 when tid is blocked in a system call and its stacks were read into r, 0 when it is not
 * blocked (the caller may signal it), -1 when it is blocked but no consistent read was had
 * (r then holds its Python frames only, or nothing). A thread that woke while it was read (its
 * call returned) is most often in its next call within a millisecond (a loop around the call):
 * it is looked at again, 1 ms apart, WAKE_POLLS times at most, and read once it waits again;
 * one that still runs then is -1 as before (seen blocked once, never signalled). */
static int read_blocked(int tid, uintptr_t tstate, struct tstates *all, struct stack_sig_result *r,
                        struct unwind_cache *cache)
{
    long nr, nr2;
    uintptr_t sp, pc, sp2, pc2;
    struct task_files f;
    int rc = -1, polls = 0;
    task_files_open(tid, &f);
    for (int tries = 0; tries < READ_TRIES; tries++) {
        unsigned long long sw = switches(&f);
        if (!blocked_in_syscall(&f, &nr, &sp, &pc)) {
            if (tries > 0 && polls++ < WAKE_POLLS) {
                struct timespec ms = {0, 1000000L};
                nanosleep(&ms, NULL);
                tries--;
                continue;
            }
            rc = tries ? -1 : 0;
            break;
        }
        int nalt = 0;
        memset(cache, 0, offsetof(struct unwind_cache, rows));
        r->nnative = sig_unwind_native_pcsp(pc, sp, r->native, STACK_SIG_NATIVE, cache, 0, &nalt);
        /* every thread state of this OS thread (a subinterpreter's above the main one's), as
         * the signal handler reads them */
        r->npy = tstate ? sig_pyrt_frames_listed(tid, all->ts, all->ids, all->interps, all->n,
                                                 tstate, all->walk_memo, 256, r->py, STACK_SIG_PY)
                        : 0;
        /* A guessed frame pointer (unwind.c) that does not give as many eval-loop frames as
         * the Python frames need: the other guesses that end well, lowest first, and the first
         * that does. */
        for (int alt = 1;
             alt <= nalt && alt <= 4 && r->npy && !merges(r->native, r->nnative, r->py, r->npy);
             alt++) {
            uintptr_t alts[STACK_SIG_NATIVE];
            memset(cache, 0, offsetof(struct unwind_cache, rows));
            int n = sig_unwind_native_pcsp(pc, sp, alts, STACK_SIG_NATIVE, cache, alt, NULL);
            if (n > 0 && merges(alts, n, r->py, r->npy)) {
                memcpy(r->native, alts, (size_t)n * sizeof *alts);
                r->nnative = n;
            }
        }
        if (blocked_in_syscall(&f, &nr2, &sp2, &pc2) && nr2 == nr && sp2 == sp && pc2 == pc &&
            switches(&f) == sw) {
            rc = 1;
            break;
        }
    }
    task_files_close(&f);
    if (rc < 0)
        r->nnative = 0;
    return rc;
}

/* 1 when tid waits in a system call now (/proc/self/task/TID/syscall), else 0: sig_stack_ask's
 * and sig_stack_wait's last look before a signal, and at a thread asked by event. */
static int waits_in_syscall(int tid)
{
    struct task_files f;
    long nr;
    uintptr_t sp, pc;
    task_files_open(tid, &f);
    int w = blocked_in_syscall(&f, &nr, &sp, &pc);
    task_files_close(&f);
    return w;
}

static uintptr_t tstate_of(const struct tstates *all, long tid)
{
    uintptr_t tstate = 0;
    for (int j = 0; j < all->n; j++)
        if (all->ids[j] == tid)
            tstate = all->ts[j];
    return tstate;
}

/* s read where it waits (read_blocked's b: 1 read, -1 kept waking): 0, or -ENOMEM with err. */
static int take_blocked(struct prof_nstack *s, int b, const struct stack_sig_result *one, int all,
                        struct pb_err *err)
{
    s->blocked = b > 0 ? 1 : 2;
    s->answered = b > 0;
    if (b > 0 && merge(one, all, s) < 0)
        return pb_err_set(err, -ENOMEM, "out of memory");
    return 0;
}

int prof_native_stacks(const long *tids, int n, int all, struct prof_nstack *out,
                       struct pb_err *err)
{
    struct stack_sig_result *res, one;
    struct unwind_cache *blk;
    struct tid_at *ord = NULL;
    struct tstates *all_ts = NULL;
    int *first = NULL, *uniq = NULL, nu = 0;
    int own = 0, rc = 0;
    long long deadline = now_ms() + NATIVE_TOTAL_MS;
    memset(out, 0, (size_t)n * sizeof *out);
    if (sig_pyrt_prepare() < 0)
        return pb_err_set(err, -ENOSYS,
                          "no signal-safe memory read (process_vm_readv is "
                          "refused here): native stacks cannot be read");
    /* Each thread once (a corrupted thread list may name one thread thousands of times: each
     * copy asked would wait out its batch, one signal answering for all), in tids' order. */
    ord = calloc((size_t)n + 1, sizeof *ord);
    first = calloc((size_t)n + 1, sizeof *first);
    uniq = calloc((size_t)n + 1, sizeof *uniq);
    if (!ord || !first || !uniq) {
        free(ord);
        free(first);
        free(uniq);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++)
        ord[i].tid = tids[i], ord[i].at = i, first[i] = i;
    qsort(ord, (size_t)n, sizeof *ord, tid_at_cmp);
    for (int i = 1; i < n; i++)
        if (ord[i].tid == ord[i - 1].tid)
            first[ord[i].at] = first[ord[i - 1].at];
    free(ord);
    for (int i = 0; i < n; i++) {
        out[i].tid = tids[i];
        if (tids[i] > 0 && first[i] == i)
            uniq[nu++] = i;
    }
    prof_sig_lock();
    if (!sig_prof_installed()) { /* else the sampler's: it keeps the module table fresh */
        if ((rc = sig_prof_install(err)) < 0) {
            prof_sig_unlock();
            free(first);
            free(uniq);
            return rc;
        }
        own = 1;
    }
    atomic_store(&asking_own, own);
    atomic_store(&asking, 1);
    res = calloc(STACK_SIG_BATCH, sizeof *res);
    blk = calloc(1, sizeof *blk);
    all_ts = calloc(1, sizeof *all_ts);
    memo = calloc(CODE_MEMO, sizeof *memo); /* without it, each frame is described alone */
    if (all_ts)
        all_ts->n = sig_pyrt_threads(all_ts->ts, all_ts->ids, all_ts->interps, 256);
    if (!res || !blk || !all_ts) {
        rc = pb_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    for (int at = 0; at < nu && rc == 0; at += STACK_SIG_BATCH) {
        int np = nu - at < STACK_SIG_BATCH ? nu - at : STACK_SIG_BATCH;
        int pend[STACK_SIG_BATCH]; /* out's indexes still to read this round */
        memcpy(pend, uniq + at, (size_t)np * sizeof *pend);
        /* Rounds: a thread asked by event or timer that waits in a system call before it
         * answers is taken back and looked at again in the next round. */
        for (int round = 0; round < ASK_ROUNDS && np > 0 && rc == 0; round++) {
            int idx[STACK_SIG_BATCH], k = 0, again = 0;
            long long left = deadline - now_ms();
            for (int i = 0; i < np && rc == 0; i++) {
                struct prof_nstack *s = &out[pend[i]];
                int b = read_blocked((int)s->tid, tstate_of(all_ts, s->tid), all_ts, &one, blk);
                if (b > 0 || (b < 0 && round == ASK_ROUNDS - 1)) {
                    rc = take_blocked(s, b, &one, all, err);
                    continue;
                }
                /* Running (b 0), or seen waiting but woken at each read (b -1: asked only in
                 * a way that cannot cut a wait short, never by a plain signal). */
                if (sigprof_blocked((int)s->tid)) {
                    if (b < 0)
                        rc = take_blocked(s, b, &one, all, err);
                    else
                        s->masked = 1; /* it would not answer: not asked, no wait */
                    continue;
                }
                if (left <= 0 || round == ASK_ROUNDS - 1) {
                    if (b < 0)
                        rc = take_blocked(s, b, &one, all, err);
                    else
                        s->unasked = 1; /* the call has waited NATIVE_TOTAL_MS already */
                    continue;
                }
                /* Asked right after the look (sig_stack_ask). */
                int a = sig_stack_ask(k, (int)s->tid, b < 0 ? NULL : waits_in_syscall, b < 0);
                if (a == SIG_STACK_EVENT || a == SIG_STACK_TIMER || a == SIG_STACK_SIGNAL)
                    idx[k++] = pend[i];
                else if (a == SIG_STACK_BLOCKED)
                    pend[again++] = pend[i]; /* it waits now: read it there next round */
                else if (b < 0)
                    rc = take_blocked(s, b, &one, all, err);
            }
            if (rc < 0 || k == 0) {
                np = again;
                continue;
            }
            sig_stack_wait(k, res, left < NATIVE_WAIT_MS ? (int)left : NATIVE_WAIT_MS,
                           waits_in_syscall);
            for (int i = 0; i < k && rc == 0; i++) {
                struct prof_nstack *s = &out[idx[i]];
                if (res[i].blocked) { /* it waits in a system call since it was asked */
                    pend[again++] = idx[i];
                    continue;
                }
                s->answered = res[i].answered;
                if (s->answered && merge(&res[i], all, s) < 0)
                    rc = pb_err_set(err, -ENOMEM, "out of memory");
            }
            np = again;
        }
    }
    for (int i = 0; i < n && rc == 0; i++)
        if (tids[i] > 0 && first[i] != i && nstack_dup(&out[i], &out[first[i]]) < 0)
            rc = pb_err_set(err, -ENOMEM, "out of memory");
out:
    free(res);
    free(blk);
    free(all_ts);
    free(memo);
    memo = NULL;
    free(first);
    free(uniq);
    atomic_store(&asking, 0);
    atomic_store(&asking_own, 0);
    if (own)
        sig_prof_uninstall();
    prof_sig_unlock();
    if (rc < 0)
        for (int i = 0; i < n; i++)
            prof_nstack_free(&out[i]);
    return rc;
}

/* ---- threads that run no Python ---- */

static int long_cmp(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int prof_native_others(const long *skip, int nskip, long *tids, char (*names)[PROF_COMM], int max,
                       int *more, struct pb_err *err)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long me = (long)syscall(SYS_gettid), *all = NULL;
    int n = 0, cap = 0;
    *more = 0;
    /* A root without /proc (a chroot that mounts none): the threads that run no Python cannot
     * be listed; the Python threads' native stacks still can (they are asked by signal). */
    if (!d && errno == ENOENT && access("/proc/self", F_OK) < 0)
        return 0;
    if (!d)
        return pb_err_set(err, -errno, "native threads: cannot read /proc/self/task: %s",
                          strerror(errno));
    while ((e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        int skipped = tid <= 0 || *end || tid == me || core_thread_is_ours(tid);
        for (int i = 0; i < nskip && !skipped; i++)
            skipped = skip[i] == tid;
        if (skipped)
            continue;
        if (n == cap) {
            long *na = realloc(all, (size_t)(cap ? cap * 2 : 64) * sizeof *all);
            if (!na) {
                closedir(d);
                free(all);
                return pb_err_set(err, -ENOMEM, "out of memory");
            }
            all = na;
            cap = cap ? cap * 2 : 64;
        }
        all[n++] = tid;
    }
    closedir(d);
    if (n > 1)
        qsort(all, (size_t)n, sizeof *all, long_cmp);
    if (n > max) {
        *more = n - max;
        n = max;
    }
    for (int i = 0; i < n; i++) {
        char path[64];
        long k;
        tids[i] = all[i];
        if (!names)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", all[i]);
        k = pb_read_file(path, names[i], PROF_COMM);
        if (k <= 0)
            k = 0; /* it ended since: named "" (its stack then is not read either) */
        else if (names[i][k - 1] == '\n')
            k--;
        names[i][k < PROF_COMM ? k : PROF_COMM - 1] = '\0';
    }
    free(all);
    return n;
}
