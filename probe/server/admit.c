/* SPDX-License-Identifier: MIT */
/* Admission of connections: whether the agent keeps a connection it just accepted (caps on all
 * connections and on TCP ones not past `attach`, and descriptors left to the target), and when a
 * TCP connection not past `attach` must go. Pure decisions on numbers, so that the fuzz harness
 * (tests/fuzz/fuzz_conn_limits.c) drives the same code the agent runs; the settings they come
 * from are in core/settings.c, the threat model in docs/security.md. */
#include "admit.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>

int srv_admit(const struct probe_admit_limits *l, const struct probe_admit_counts *c, int tcp,
              long fds_open, long fds_max, struct pb_err *err)
{
    /* At the cap on TCP connections not past attach, the new one takes the place of the
     * oldest of them (closed): clients that only connect cannot lock out the token holder, whose
     * connection passes attach at once. Counted as if that one were closed already. */
    int evict = tcp && c->unauth >= l->max_unauth;
    if (evict && c->unauth == 0)
        return pb_err_set(err, -EMFILE,
                          "no TCP connection is allowed before attach "
                          "(net.max_unauthenticated is %d)",
                          l->max_unauth);
    if (c->conns - evict >= l->max_conns)
        return pb_err_set(err, -EMFILE, "%d connections open (net.max_connections)", c->conns);
    if (fds_open < 0)
        return pb_err_set(err, -EMFILE, "cannot count the open descriptors");
    if (fds_max >= 0 && fds_open - evict + l->fd_reserve > fds_max)
        return pb_err_set(err, -EMFILE,
                          "%ld of %ld descriptors open, %d kept for the target "
                          "(net.fd_reserve)",
                          fds_open, fds_max, l->fd_reserve);
    return evict ? PROBE_ADMIT_EVICT : 0;
}

int srv_auth_expired(long long accepted_ms, long long now_ms, int authed, long long timeout_ms)
{
    /* Bytes received do not move the deadline: a client sending one byte a second is no more
     * welcome than a silent one. */
    return !authed && now_ms - accepted_ms >= timeout_ms;
}

long srv_fds_max(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    return rl.rlim_cur > (rlim_t)0x7fffffff ? 0x7fffffff : (long)rl.rlim_cur;
}

long srv_fds_polled(long limit)
{
    struct pollfd p[256];
    long n = 0;
    for (long base = 0; base < limit; base += 256) {
        int k = limit - base < 256 ? (int)(limit - base) : 256;
        for (int i = 0; i < k; i++)
            p[i] = (struct pollfd){.fd = (int)(base + i), .events = 0};
        if (poll(p, (nfds_t)k, 0) < 0)
            return -1;
        for (int i = 0; i < k; i++)
            if (!(p[i].revents & POLLNVAL))
                n++;
    }
    return n;
}

long srv_fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        /* No /proc (a chroot or container that mounts none): asked of every descriptor below
         * the limit (at most 1M). Out of descriptors (EMFILE): keep nothing. */
        int e = errno;
        long max = srv_fds_max();
        if (e == EMFILE || e == ENFILE)
            return -1;
        return srv_fds_polled(max < 0 || max > (1L << 20) ? 1L << 20 : max);
    }
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* not the directory's own descriptor */
}
