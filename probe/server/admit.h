/* SPDX-License-Identifier: MIT */
/* Which connections the agent keeps (admit.c): pure decisions on numbers, shared by the agent
 * and the fuzz harness tests/fuzz/fuzz_conn_limits.c. No GIL, no locks; any thread. */
#ifndef PROBE_ADMIT_H
#define PROBE_ADMIT_H

#include "pb.h"

/* Whether to keep a connection just accepted. Counts are the connections open before the new
 * one; fds_open counts the new one; fds_max is RLIMIT_NOFILE's soft limit (-1: none). Returns 0
 * (keep it), PROBE_ADMIT_EVICT (keep it and close the oldest TCP connection not past attach:
 * that cap, net.max_unauthenticated, is reached), or -EMFILE with the limit that refused it in
 * err. */
#define PROBE_ADMIT_EVICT 1
struct probe_admit_limits {
    int max_conns, max_unauth, fd_reserve;
};
struct probe_admit_counts {
    int conns, unauth;
};
int srv_admit(const struct probe_admit_limits *l, const struct probe_admit_counts *c, int tcp,
              long fds_open, long fds_max, struct pb_err *err);
/* Whether a connection accepted at accepted_ms must be closed at now_ms: not authenticated
 * within timeout_ms (net.auth_timeout_ms), whatever it sent meanwhile. */
int srv_auth_expired(long long accepted_ms, long long now_ms, int authed, long long timeout_ms);
/* RLIMIT_NOFILE's soft limit (-1: unlimited), and how many descriptors are open (-1 when they
 * cannot be counted, e.g. none is left to open /proc/self/fd; without /proc, srv_fds_polled).
 * srv_fds_polled: how many of the descriptors 0..limit-1 are open, asked with poll(). */
long srv_fds_max(void);
long srv_fds_open(void);
long srv_fds_polled(long limit);

#endif
