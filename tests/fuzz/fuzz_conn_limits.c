/* SPDX-License-Identifier: MIT */
/* libFuzzer harness and property test of the limits before authentication (docs/security.md),
 * on the code the probe runs. The first byte picks the property:
 *   0  message size: bytes from a peer into a TCP session with a net.preauth_max_bytes limit
 *      (the real srv_session); until `attach` succeeds the session never holds more than the
 *      limit plus a header, and after it requests as large as before are taken;
 *   1  connection count and descriptors: a sequence of accepts (Unix/TCP), attaches, closes and
 *      changes of the target's own descriptors through srv_admit; the caps and the reserve
 *      always hold, nothing is refused that fits them, and a TCP one at the unauthenticated
 *      cap takes the place of one not past attach;
 *   2  attach deadline: bytes arriving at fuzzed times into a real TCP session; the connection
 *      expires exactly when it is not past `attach` at the deadline, however it trickles bytes.
 * Invariant violations abort (a crash is a failure for libFuzzer and for `make fuzz-replay`). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/admit.h"
#include "dap/dap.h"

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_conn_limits: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#include "fuzz_sink.h"

static unsigned take(const uint8_t **d, size_t *n)
{
    if (*n == 0)
        return 0;
    (*n)--;
    return *(*d)++;
}

/* 0: message size. Bytes: limit (2), chunk size (1), then the stream. */
static void body_limit(const uint8_t *d, size_t n)
{
    size_t limit = 1024 + ((take(&d, &n) << 8 | take(&d, &n)) % 16384);
    size_t chunk = take(&d, &n) * 64 + 1;
    int closed = 0;
    struct srv_session *s = srv_session_new(&sink, &closed, SRV_TRANSPORT_TCP);
    srv_session_set_preauth_max(s, limit);
    for (size_t off = 0; off < n && !closed; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        int rc = srv_session_feed(s, (const char *)d + off, k);
        if (!srv_session_is_authed(s))
            CHECK(srv_session_buffered(s) <= limit + DAP_MAX_HEADER);
        else
            CHECK(srv_session_buffered(s) <= DAP_DEFAULT_MAX_BODY + DAP_MAX_HEADER);
        if (rc < 0)
            break;
    }
    srv_session_detach_io(s);
    srv_session_unref(s);
}

/* 1: connection count and descriptors: a model of the agent's connections. */
static void conn_limits(const uint8_t *d, size_t n)
{
    struct probe_admit_limits l = {
        .max_conns = (int)(take(&d, &n) % 64) + 1,
        .max_unauth = (int)(take(&d, &n) % 64) + 1,
        .fd_reserve = (int)(take(&d, &n) % 65),
    };
    unsigned m = take(&d, &n);
    long fds_max = m == 255 ? -1 : 16 + (long)m * 4;
    long own = take(&d, &n) % 200; /* the target's own descriptors */
    int authed[128], conns = 0, unauth = 0;
    while (n > 0) {
        unsigned op = take(&d, &n), arg = take(&d, &n);
        switch (op % 5) {
        case 0:   /* accept, Unix socket */
        case 1: { /* accept, TCP */
            int tcp = op % 5 == 1;
            long fds_open = own + conns + 1;
            struct probe_admit_counts c = {conns, unauth};
            struct pb_err err = {0};
            /* At the unauthenticated cap a TCP one replaces the oldest of them. */
            int evict = tcp && unauth >= l.max_unauth;
            int fits = conns - evict < l.max_conns && (!evict || unauth > 0) &&
                       (fds_max < 0 || fds_open - evict + l.fd_reserve <= fds_max);
            int rc = srv_admit(&l, &c, tcp, fds_open, fds_max, &err);
            CHECK(rc < 0 ? !fits && err.msg[0] : fits && rc == (evict ? PROBE_ADMIT_EVICT : 0));
            if (rc == PROBE_ADMIT_EVICT) { /* the agent closes one not past attach */
                for (int i = 0; i < conns; i++)
                    if (!authed[i]) {
                        authed[i] = authed[--conns];
                        unauth--;
                        break;
                    }
            }
            if (rc >= 0 && conns < 128) {
                authed[conns++] = !tcp;
                unauth += tcp;
            }
            break;
        }
        case 2: /* a TCP connection passes attach */
            for (int i = 0; i < conns; i++)
                if (!authed[(i + (int)arg) % conns]) {
                    authed[(i + (int)arg) % conns] = 1;
                    unauth--;
                    break;
                }
            break;
        case 3: /* a connection closes */
            if (conns > 0) {
                int i = (int)arg % conns;
                unauth -= !authed[i];
                authed[i] = authed[--conns];
            }
            break;
        default: /* the target opens or closes descriptors of its own */
            own = arg % 2 ? own + arg : (own > arg ? own - arg : 0);
            break;
        }
        CHECK(conns <= l.max_conns && unauth <= l.max_unauth && unauth >= 0);
    }
    /* Without a descriptor to count them with, nothing is kept. */
    struct probe_admit_counts none = {0, 0};
    CHECK(srv_admit(&l, &none, 0, -1, fds_max, NULL) < 0);
}

/* 2: attach deadline. Bytes: timeout (2), then (delay, length, bytes...) steps. */
static void auth_deadline(const uint8_t *d, size_t n)
{
    long long timeout = 100 + ((take(&d, &n) << 8 | take(&d, &n)) % 20000);
    long long now = 0;
    int closed = 0, expired = 0;
    struct srv_session *s = srv_session_new(&sink, &closed, SRV_TRANSPORT_TCP);
    srv_session_set_preauth_max(s, 8192);
    while (n > 0 && !closed) {
        now += (long long)take(&d, &n) * 50;
        size_t k = take(&d, &n);
        if (k > n)
            k = n;
        int authed_before = srv_session_is_authed(s);
        int e = srv_auth_expired(0, now, authed_before, timeout);
        CHECK(e == (!authed_before && now >= timeout));
        if (e) { /* the agent closes it here: bytes after the deadline are never read */
            expired = 1;
            break;
        }
        if (srv_session_feed(s, (const char *)d, k) < 0)
            break;
        d += k;
        n -= k;
        /* Once past attach, no time expires it. */
        if (srv_session_is_authed(s))
            CHECK(!srv_auth_expired(0, now + 1000000000LL, 1, timeout));
    }
    CHECK(!expired || !srv_session_is_authed(s));
    srv_session_detach_io(s);
    srv_session_unref(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0: body_limit(data + 1, size - 1); break;
    case 1: conn_limits(data + 1, size - 1); break;
    default: auth_deadline(data + 1, size - 1); break;
    }
    return 0;
}
