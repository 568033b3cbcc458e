/* SPDX-License-Identifier: MIT */
/* Whose process holds the other end of a loopback TCP connection: the uid of the one socket in
 * state ESTABLISHED whose 4-tuple is the mirror of ours (its local address and port are our
 * peer's, its remote ones our local ones). Asked of the kernel by NETLINK_SOCK_DIAG
 * (inet_diag, as ss(8) does); where that is not available (no tcp_diag), read from
 * /proc/net/tcp or tcp6 with the same rule. Anything else (a closed or closing socket, a
 * TIME_WAIT one, whose uid reads 0, no line, several) is "unknown": the caller refuses. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve.h"

/* One end of a connection: family, address (4 or 16 bytes, network order) and port. */
struct end {
    int family;
    unsigned char addr[16];
    unsigned port;
};

static int end_of(const struct sockaddr_storage *ss, struct end *e)
{
    memset(e, 0, sizeof *e);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
        e->family = AF_INET;
        memcpy(e->addr, &s4->sin_addr, 4);
        e->port = ntohs(s4->sin_port);
        return 0;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        e->port = ntohs(s6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) { /* the peer's socket is an AF_INET one */
            e->family = AF_INET;
            memcpy(e->addr, s6->sin6_addr.s6_addr + 12, 4);
        } else {
            e->family = AF_INET6;
            memcpy(e->addr, &s6->sin6_addr, 16);
        }
        return 0;
    }
    return -1;
}

/* Counts the peer's ESTABLISHED sockets (local = peer, remote = me) by inet_diag, the uid of
 * the last in *uid. Returns the count, or -1 when the kernel did not answer (no tcp_diag). */
static int diag_count(const struct end *peer, const struct end *me, long *uid)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0)
        return -1;
    struct {
        struct nlmsghdr nlh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.nlh.nlmsg_len = sizeof req;
    req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.nlh.nlmsg_seq = 1;
    req.r.sdiag_family = (uint8_t)peer->family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = 1u << TCP_ESTABLISHED;
    /* A dump filters on the ports itself; the addresses are compared below. */
    req.r.id.idiag_sport = htons((uint16_t)peer->port);
    req.r.id.idiag_dport = htons((uint16_t)me->port);
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        close(fd);
        return -1;
    }
    size_t alen = peer->family == AF_INET ? 4 : 16;
    int count = 0, done = 0, failed = 0;
    long buf[8192 / sizeof(long)]; /* aligned for the nlmsghdr */
    while (!done && !failed) {
        struct sockaddr_nl from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || from.nl_pid != 0) { /* only the kernel answers */
            failed = 1;
            break;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE) {
                done = 1;
                break;
            }
            if (h->nlmsg_seq != req.nlh.nlmsg_seq || h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
                failed = 1;
                break;
            }
            const struct inet_diag_msg *m = NLMSG_DATA(h);
            if (m->idiag_family == peer->family && m->idiag_state == TCP_ESTABLISHED &&
                ntohs(m->id.idiag_sport) == peer->port && ntohs(m->id.idiag_dport) == me->port &&
                memcmp(m->id.idiag_src, peer->addr, alen) == 0 &&
                memcmp(m->id.idiag_dst, me->addr, alen) == 0) {
                count++;
                *uid = (long)m->idiag_uid;
            }
        }
    }
    close(fd);
    return failed ? -1 : count;
}

/* "0100007F" (the bytes of the address as the kernel holds them, each 32-bit word printed as
 * a host-order number) back into bytes. Returns 0, or -1 when malformed. */
static int proc_addr(const char *hex, unsigned char *out, size_t alen)
{
    if (strlen(hex) != alen * 2)
        return -1;
    for (size_t w = 0; w < alen / 4; w++) {
        char word[9];
        memcpy(word, hex + 8 * w, 8);
        word[8] = '\0';
        char *end;
        uint32_t v = (uint32_t)strtoul(word, &end, 16);
        if (*end)
            return -1;
        memcpy(out + 4 * w, &v, 4);
    }
    return 0;
}

/* The same count from /proc/net/tcp or tcp6 (state 01 is ESTABLISHED). -1 when unreadable. */
static int proc_count(const struct end *peer, const struct end *me, long *uid)
{
    FILE *f = fopen(peer->family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp", "re");
    if (!f)
        return -1;
    size_t alen = peer->family == AF_INET ? 4 : 16;
    char line[512];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        char lhex[40], rhex[40];
        unsigned lport, rport, state;
        long u;
        unsigned char la[16], ra[16];
        if (sscanf(line, " %*d: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %x %*x:%*x %*x:%*x %*x %ld",
                   lhex, &lport, rhex, &rport, &state, &u) != 6)
            continue;
        if (state != TCP_ESTABLISHED || lport != peer->port || rport != me->port ||
            proc_addr(lhex, la, alen) < 0 || proc_addr(rhex, ra, alen) < 0)
            continue;
        if (memcmp(la, peer->addr, alen) == 0 && memcmp(ra, me->addr, alen) == 0) {
            count++;
            *uid = u;
        }
    }
    fclose(f);
    return count;
}

/* The peer's sockets by inet_diag, else /proc: a count, or -1 when neither answered. */
static int count(const struct end *peer, const struct end *me, long *uid)
{
    int n = diag_count(peer, me, uid);
    return n >= 0 ? n : proc_count(peer, me, uid);
}

/* An IPv4 end as an IPv6 socket connected to it holds it: ::ffff:a.b.c.d. */
static struct end mapped(const struct end *e)
{
    struct end m = {.family = AF_INET6, .port = e->port};
    m.addr[10] = m.addr[11] = 0xff;
    memcpy(m.addr + 12, e->addr, 4);
    return m;
}

long cli_serve_peer_uid(int fd)
{
    struct sockaddr_storage l, p;
    socklen_t ll = sizeof l, pl = sizeof p;
    struct end me, peer;
    if (getsockname(fd, (struct sockaddr *)&l, &ll) < 0 ||
        getpeername(fd, (struct sockaddr *)&p, &pl) < 0 || end_of(&l, &me) < 0 ||
        end_of(&p, &peer) < 0 || me.family != peer.family)
        return -1;
    long uid = -1;
    int n = count(&peer, &me, &uid);
    if (n >= 0 && peer.family == AF_INET) {
        /* The client's socket may be an IPv6 one that connected to a v4-mapped address. */
        struct end p6 = mapped(&peer), m6 = mapped(&me);
        int n6 = count(&p6, &m6, &uid);
        n += n6 > 0 ? n6 : 0;
    }
    return n == 1 ? uid : -1;
}
