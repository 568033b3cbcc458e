/* SPDX-License-Identifier: MIT */
/* This node's ranks served by a few forked workers (local.c), not a child each: a fork and the
 * pages a child copies from the CLI on its first writes (about 120 faults of 3-4 us each on a
 * VM) were a third of what a rank cost the CLI in a first `cluster stacks` (docs/benchmarks.md).
 * Each worker takes the next rank from a counter the workers share, serves it as a child did
 * (inject if needed, then ask) and takes the next, so one worker is never in the middle of two
 * injections: a crash or a kill still touches one rank at most.
 *
 * A worker's stdout carries its ranks one after another, each between a start mark (0x1e, the
 * rank's index, a newline) and an end mark (0x1f); a rank's own bytes are as a child's were (a
 * space once past the injection, then one JSON object, whose text never holds those control
 * characters). Its stderr goes to the rank it serves.
 *
 * Deadlines are per rank, from when a worker starts it. A worker past its rank's deadline is
 * killed if it is not injecting (its state, shared: the worker moves from idle to injecting and
 * from injecting to safe by compare-and-swap, the parent swaps in "given up", so the worker
 * never starts an injection the parent is killing it for), else given up: it finishes the
 * injection, which restores the target, sees it was given up, and exits. A worker busy on one
 * rank for longer than CLUSTER_POOL_SLOW_MS no longer counts toward the pool: another is
 * started while ranks wait, so ranks that hang are asked side by side as before, not one
 * after another. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"

#define CLUSTER_POOL_SLOW_MS 150
#define MARK_START 0x1e
#define MARK_END 0x1f

enum { W_IDLE, W_INJECTING, W_SAFE, W_GIVEN_UP };

/* What the parent and the workers share (MAP_SHARED, anonymous). */
struct pool_shared {
    atomic_int next; /* the next rank to take */
    struct {
        atomic_int state; /* W_* */
        atomic_int cur;   /* the rank taken last */
    } slot[];
};

struct worker {
    pid_t pid;
    int out, err;
    int cur;     /* the rank being served, as its start mark said; -1: none */
    int idx_len; /* digits of a start mark read so far (-1: not in a start mark) */
    char idx[16];
    long long since; /* when cur started (ms) */
    int live;        /* forked and not yet reaped or given up */
};

/* In a worker: the shared state and its slot there (-1 outside a worker). */
static struct pool_shared *pool_sh;
static int pool_slot = -1;

int cli_cluster_pool_safe(void)
{
    if (pool_slot < 0) {
        fputc(' ', stdout);
        fflush(stdout);
        return 0;
    }
    int want = W_INJECTING;
    if (!atomic_compare_exchange_strong(&pool_sh->slot[pool_slot].state, &want, W_SAFE))
        return -1; /* given up while injecting: the injection is done, nothing more */
    fputc(' ', stdout);
    fflush(stdout);
    return 0;
}

static void worker_main(int slot, int n, void (*serve)(int, void *), void *ctx)
{
    pool_slot = slot;
    signal(SIGPIPE, SIG_IGN);
    atomic_int *state = &pool_sh->slot[slot].state;
    for (;;) {
        int want = W_IDLE;
        if (!atomic_compare_exchange_strong(state, &want, W_INJECTING))
            break; /* given up */
        int i = atomic_fetch_add(&pool_sh->next, 1);
        if (i >= n)
            break;
        atomic_store(&pool_sh->slot[slot].cur, i);
        printf("%c%d\n", MARK_START, i);
        fflush(stdout);
        serve(i, ctx);
        fflush(stderr);
        if (atomic_load(state) == W_GIVEN_UP)
            break;
        printf("%c", MARK_END);
        fflush(stdout);
        /* Idle again, from safe (or from injecting, where serve ended before saying safe),
         * unless the parent gave it up meanwhile. */
        for (want = atomic_load(state); want != W_GIVEN_UP;)
            if (atomic_compare_exchange_weak(state, &want, W_IDLE))
                break;
        if (want == W_GIVEN_UP)
            break;
    }
    fflush(stdout);
    _exit(0);
}

static int start_worker(struct worker *w, struct pool_shared *sh, int slot, int n,
                        void (*serve)(int, void *), void *ctx)
{
    int o[2], e[2];
    if (pipe2(o, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(e, O_CLOEXEC) < 0) {
        int rc = -errno;
        close(o[0]), close(o[1]);
        return rc;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(o[0]), close(o[1]), close(e[0]), close(e[1]);
        return rc;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        dup2(o[1], 1);
        dup2(e[1], 2);
        pool_sh = sh; /* here: the parent may run several pools, in threads (serve) */
        worker_main(slot, n, serve, ctx);
    }
    close(o[1]);
    close(e[1]);
    fcntl(o[0], F_SETFL, O_NONBLOCK); /* read what is there: see expire */
    fcntl(e[0], F_SETFL, O_NONBLOCK);
    *w = (struct worker){.pid = pid, .out = o[0], .err = e[0], .cur = -1, .idx_len = -1, .live = 1};
    return 0;
}

/* A worker's stdout bytes: marks and the ranks' own bytes. */
static void take_out(struct worker *w, struct cli_cluster_child *c, int n, const char *b,
                     size_t len)
{
    for (size_t k = 0; k < len;) {
        if (w->idx_len >= 0) { /* inside a start mark */
            char ch = b[k++];
            if (ch != '\n') {
                if (w->idx_len < (int)sizeof w->idx - 1)
                    w->idx[w->idx_len++] = ch;
                continue;
            }
            w->idx[w->idx_len] = '\0';
            w->idx_len = -1;
            int i = atoi(w->idx);
            if (i >= 0 && i < n && c[i].state == CLUSTER_CHILD_PENDING) {
                w->cur = i;
                w->since = cli_cluster_now_ms();
                c[i].state = CLUSTER_CHILD_RUNNING;
                c[i].pid = w->pid;
            }
            continue;
        }
        if (b[k] == MARK_START) {
            w->idx_len = 0;
            k++;
            continue;
        }
        if (b[k] == MARK_END) {
            if (w->cur >= 0 && c[w->cur].state == CLUSTER_CHILD_RUNNING)
                c[w->cur].state = CLUSTER_CHILD_DONE;
            w->cur = -1;
            k++;
            continue;
        }
        size_t run = k;
        while (run < len && b[run] != MARK_START && b[run] != MARK_END)
            run++;
        if (w->cur >= 0 && c[w->cur].state == CLUSTER_CHILD_RUNNING) {
            struct cli_cluster_child *x = &c[w->cur];
            if (x->olen + (run - k) > CLI_CLUSTER_MAX_OUTPUT)
                x->cut = 1;
            else
                cli_cluster_append(&x->obuf, &x->olen, &x->ocap, b + k, run - k);
        }
        k = run;
    }
}

/* Reads what is there on one pipe; 1 once both pipes are at their end. */
static int drain(struct worker *w, struct cli_cluster_child *c, int n, int which_out)
{
    char buf[65536];
    int *fd = which_out ? &w->out : &w->err;
    for (;;) {
        ssize_t got = *fd >= 0 ? read(*fd, buf, sizeof buf) : 0;
        if (got > 0) {
            if (which_out)
                take_out(w, c, n, buf, (size_t)got);
            else if (w->cur >= 0 && c[w->cur].elen < 65536)
                cli_cluster_append(&c[w->cur].ebuf, &c[w->cur].elen, &c[w->cur].ecap, buf,
                                   (size_t)got);
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got == 0 || errno != EAGAIN)
            cli_cluster_close_fd(fd);
        break;
    }
    return w->out < 0 && w->err < 0;
}

/* Everything on both pipes until they end (block) or until nothing more is there. */
static void drain_all(struct worker *w, struct cli_cluster_child *c, int n, int block)
{
    while (w->out >= 0 || w->err >= 0) {
        struct pollfd p[2] = {{.fd = w->out, .events = POLLIN}, {.fd = w->err, .events = POLLIN}};
        int rc = poll(p, 2, block ? 1000 : 0);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return;
        if (p[0].revents)
            drain(w, c, n, 1);
        if (p[1].revents)
            drain(w, c, n, 0);
    }
}

/* Both pipes at their end: the worker exited; a rank it had not finished failed with its
 * status (a crash), unless the rank was already given up. */
static void reap(struct worker *w, struct cli_cluster_child *c)
{
    int status = 0;
    if (waitpid(w->pid, &status, 0) != w->pid)
        status = -1;
    if (w->cur >= 0 && c[w->cur].state == CLUSTER_CHILD_RUNNING) {
        c[w->cur].status = status;
        c[w->cur].state = CLUSTER_CHILD_DONE;
    }
    w->cur = -1;
    w->live = 0;
}

/* The worker's rank is past its deadline, as far as its pipes said when they were last read. */
static void expire(struct worker *w, int slot, struct pool_shared *sh, struct cli_cluster_child *c,
                   int n, long long now, int timeout_ms)
{
    drain_all(w, c, n, 0); /* it may have finished that rank and moved on */
    if (w->cur < 0 || now < w->since + timeout_ms)
        return;
    int old = atomic_exchange(&sh->slot[slot].state, W_GIVEN_UP);
    if (old != W_INJECTING) {
        int i = w->cur;
        kill(w->pid, SIGKILL);
        drain_all(w, c, n, 1); /* what it wrote before the kill counts */
        if (w->cur >= 0 && c[w->cur].state == CLUSTER_CHILD_RUNNING)
            c[w->cur].state = CLUSTER_CHILD_TIMEDOUT;
        waitpid(w->pid, &c[i].status, 0);
    } else {
        /* Given up: it finishes the injection on its own (its signals are blocked meanwhile)
         * and exits; our pipes close, and it ignores SIGPIPE. The rank it injects is the one it
         * took last (its start mark may not have come through yet). */
        int i = atomic_load(&sh->slot[slot].cur);
        if (i >= 0 && i < n && i != w->cur &&
            (c[i].state == CLUSTER_CHILD_PENDING || c[i].state == CLUSTER_CHILD_RUNNING))
            c[i].state = CLUSTER_CHILD_TIMEDOUT;
        c[w->cur].state = CLUSTER_CHILD_TIMEDOUT;
        cli_cluster_close_fd(&w->out);
        cli_cluster_close_fd(&w->err);
    }
    w->cur = -1;
    w->live = 0;
}

void cli_cluster_run_pool(struct cli_cluster_child *c, int n, int workers, int timeout_ms,
                          void (*serve)(int i, void *ctx), void *ctx)
{
    int slots = workers + 2 * n + 1; /* each given-up, killed, slow or crashed worker replaced */
    size_t shsize =
        sizeof(struct pool_shared) + (size_t)slots * sizeof(((struct pool_shared *)0)->slot[0]);
    struct pool_shared *sh =
        mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct worker *w = calloc((size_t)slots, sizeof *w);
    struct pollfd *pfd = calloc((size_t)slots * 2 + 1, sizeof *pfd);
    int *who = calloc((size_t)slots * 2 + 1, sizeof *who);
    for (int i = 0; i < n; i++) {
        c[i].state = CLUSTER_CHILD_PENDING;
        c[i].out = c[i].err = -1;
    }
    if (sh == MAP_FAILED || !w || !pfd || !who) {
        for (int i = 0; i < n; i++)
            c[i].state = CLUSTER_CHILD_FAILED;
        goto out;
    }
    atomic_init(&sh->next, 0);
    for (int s = 0; s < slots; s++) {
        atomic_init(&sh->slot[s].state, W_IDLE);
        atomic_init(&sh->slot[s].cur, -1);
    }
    int used = 0;
    for (;;) {
        long long now = cli_cluster_now_ms();
        int fast = 0, live = 0;
        for (int s = 0; s < used; s++) {
            if (!w[s].live)
                continue;
            live++;
            fast += w[s].cur < 0 || now - w[s].since < CLUSTER_POOL_SLOW_MS;
        }
        while (atomic_load(&sh->next) < n && fast < workers && used < slots) {
            if (start_worker(&w[used], sh, used, n, serve, ctx) < 0)
                break;
            used++, fast++, live++;
        }
        if (live == 0)
            break;
        int np = 0;
        long long wait = 1000;
        for (int s = 0; s < used; s++) {
            if (!w[s].live)
                continue;
            if (w[s].cur >= 0) {
                long long left = w[s].since + timeout_ms - now;
                long long slow = w[s].since + CLUSTER_POOL_SLOW_MS - now;
                if (left < wait)
                    wait = left;
                if (slow > 0 && slow < wait && atomic_load(&sh->next) < n)
                    wait = slow;
            }
            np = cli_cluster_poll_add(pfd, who, np, w[s].out, w[s].err, s);
        }
        int rc = poll(pfd, (nfds_t)np, wait < 0 ? 0 : (int)wait);
        if (rc < 0 && errno != EINTR)
            break;
        for (int k = 0; rc > 0 && k < np; k++) {
            if (!pfd[k].revents)
                continue;
            int s = who[k] >= 0 ? who[k] : -who[k] - 1;
            if (w[s].live && drain(&w[s], c, n, who[k] >= 0))
                reap(&w[s], c);
        }
        now = cli_cluster_now_ms();
        for (int s = 0; s < used; s++)
            if (w[s].live && w[s].cur >= 0 && now >= w[s].since + timeout_ms)
                expire(&w[s], s, sh, c, n, now, timeout_ms);
    }
    /* Ranks no worker took (workers could not be started): failed. */
    for (int i = 0; i < n; i++)
        if (c[i].state == CLUSTER_CHILD_PENDING || c[i].state == CLUSTER_CHILD_RUNNING)
            c[i].state = CLUSTER_CHILD_FAILED;
out:
    if (sh != MAP_FAILED)
        munmap(sh, shsize);
    free(w);
    free(pfd);
    free(who);
}
