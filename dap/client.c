/* SPDX-License-Identifier: MIT */
/* A blocking DAP client for the CLI: connect over a Unix socket or TCP, send a request, wait for
 * its response with a timeout (events seen meanwhile go to a callback). Each message is written
 * with one write; TCP_NODELAY is set. */
#include "dap.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

void dap_client_init(struct dap_client *c, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    dap_reader_init(&c->r, 256u << 20);
}

int dap_client_connect_unix(struct dap_client *c, const char *path, struct pb_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return pb_err_set(err, -ENAMETOOLONG, "socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return pb_err_set(err, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        return pb_err_set(err, -e, "connect to %s: %s", path, strerror(e));
    }
    c->fd = fd;
    return 0;
}

int dap_client_connect_tcp(struct dap_client *c, const char *host, int port, struct pb_err *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    int g = getaddrinfo(host, ports, &hints, &res);
    if (g != 0)
        return pb_err_set(err, -EHOSTUNREACH, "cannot resolve %s: %s", host, gai_strerror(g));
    int rc = -ECONNREFUSED, e = ECONNREFUSED;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
            rc = 0;
            break;
        }
        e = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (rc < 0)
        return pb_err_set(err, -e, "connect to %s:%d: %s", host, port, strerror(e));
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* After the probe closed the connection: the pid of its process if that process is exiting
 * or gone, else 0. The kernel keeps a Unix-socket peer's pid (SO_PEERCRED, as our pid
 * namespace sees it); a process's descriptors close only once every thread is in exit, so
 * its main thread is then exiting (PF_EXITING) or a zombie. Unknown (TCP): 0. */
static pid_t peer_exited(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
        return 0;
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)cr.pid);
    long n = pb_read_file(path, stat, sizeof stat);
    if (n == -ENOENT || n == -ESRCH)
        return cr.pid;
    const char *p = n > 0 ? strrchr(stat, ')') : NULL;
    char state = 0;
    unsigned long flags = 0;
    /* ") S ppid pgrp session tty_nr tpgid flags" */
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2)
        return 0;
    return state == 'Z' || state == 'X' || (flags & 0x4 /* PF_EXITING */) ? cr.pid : 0;
}

static int closed_error(struct dap_client *c, struct pb_err *err)
{
    if (c->refused[0])
        return pb_err_set(err, -ECONNREFUSED, "the probe refused the connection: %s", c->refused);
    pid_t pid = peer_exited(c->fd);
    if (pid > 0)
        return pb_err_set(err, -ECONNRESET,
                          "process %d exited before answering (the "
                          "connection closed)",
                          (int)pid);
    return pb_err_set(err, -ECONNRESET, "the probe closed the connection");
}

/* Keeps the reason and fix of a probing/refused event ("REASON: FIX"; a probe from before
 * the fix was sent gives the reason alone): the connection closes next and closed_error says
 * why. */
static void note_refusal(struct dap_client *c, const cJSON *m)
{
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(m, "event");
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(m, "body");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(body, "reason");
    const cJSON *fix = cJSON_GetObjectItemCaseSensitive(body, "fix");
    if (cJSON_IsString(ev) && strcmp(ev->valuestring, "probing/refused") == 0 &&
        cJSON_IsString(why))
        snprintf(c->refused, sizeof c->refused, "%s%s%s", why->valuestring,
                 cJSON_IsString(fix) ? ": " : "", cJSON_IsString(fix) ? fix->valuestring : "");
}

/* After a write found the connection closed: reads what the probe sent before it
 * closed (a refusal says why it did; a Unix socket keeps it for us). 1 when the
 * probe said it refused the connection. */
static int read_left(struct dap_client *c)
{
    struct pb_err ignored = {0};
    char buf[4096];
    for (int i = 0; i < 16 && !c->refused[0]; i++) {
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0 || dap_reader_feed(&c->r, buf, (size_t)n, &ignored) < 0)
            break;
        cJSON *m = NULL;
        while (!c->refused[0] && dap_reader_next(&c->r, &m, &ignored) > 0) {
            note_refusal(c, m);
            cJSON_Delete(m);
        }
    }
    return c->refused[0] != 0;
}

/* Waits for the next message until deadline. 1 with *msg, or a negative code. */
static int next_msg(struct dap_client *c, long long deadline, cJSON **msg, struct pb_err *err)
{
    for (;;) {
        int rc = dap_reader_next(&c->r, msg, err);
        if (rc != 0)
            return rc;
        long long left = c->timeout_ms > 0 ? deadline - now_ms() : 100;
        if (left <= 0)
            return pb_err_set(err, PB_ETIMEDOUT, "no answer from the probe within %d ms",
                              c->timeout_ms);
        if (c->on_wait) {
            c->on_wait(c->wait_arg);
            if (left > 100)
                left = 100;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno != EINTR)
            return pb_err_set(err, -errno, "poll: %s", strerror(errno));
        if (pr <= 0)
            continue;
        char buf[65536];
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return closed_error(c, err);
        rc = dap_reader_feed(&c->r, buf, (size_t)n, err);
        if (rc < 0)
            return rc;
    }
}

/* The request encoded, after what is held (requests sent ahead): *out and *len, one buffer. */
static int encode(struct dap_client *c, const char *command, cJSON *args, char **out, size_t *len,
                  struct pb_err *err)
{
    cJSON *req = dap_msg_request(++c->seq, command, args);
    if (!req)
        return pb_err_set(err, -ENOMEM, "out of memory");
    size_t n = 0;
    char *buf = dap_encode(req, &n);
    cJSON_Delete(req);
    if (!buf)
        return pb_err_set(err, -ENOMEM, "out of memory");
    if (!c->held) {
        *out = buf;
        *len = n;
        return 0;
    }
    char *all = realloc(c->held, c->held_len + n);
    if (!all) {
        free(buf);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    memcpy(all + c->held_len, buf, n);
    free(buf);
    *out = all;
    *len = c->held_len + n;
    c->held = NULL;
    c->held_len = 0;
    return 0;
}

int dap_client_send(struct dap_client *c, const char *command, cJSON *args, struct pb_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = encode(c, command, args, &buf, &len, err);
    if (rc < 0)
        return rc;
    rc = write_all(c->fd, buf, len);
    free(buf);
    if ((rc == -EPIPE || rc == -ECONNRESET) && (read_left(c) || peer_exited(c->fd) > 0))
        return closed_error(c, err);
    if (rc < 0)
        return pb_err_set(err, rc, "sending '%s' to the probe: %s", command, strerror(-rc));
    return 0;
}

int dap_client_send_ahead(struct dap_client *c, const char *command, cJSON *args,
                          struct pb_err *err)
{
    if (!c->ahead_from)
        c->ahead_from = c->seq + 1;
    char *buf = NULL;
    size_t len = 0;
    int rc = encode(c, command, args, &buf, &len, err);
    if (rc < 0)
        return rc;
    c->held = buf; /* written with the next request */
    c->held_len = len;
    return 0;
}

int dap_client_request(struct dap_client *c, const char *command, cJSON *args, cJSON **body,
                       struct pb_err *err)
{
    if (body)
        *body = NULL;
    int ahead = c->ahead_from;
    c->ahead_from = 0;
    int rc = dap_client_send(c, command, args, err);
    if (rc < 0)
        return rc;
    int seq = c->seq;
    if (!ahead)
        ahead = seq;
    long long deadline = now_ms() + c->timeout_ms;
    for (;;) {
        cJSON *m = NULL;
        rc = next_msg(c, deadline, &m, err);
        if (rc < 0)
            return rc;
        const char *type = cJSON_GetObjectItemCaseSensitive(m, "type")->valuestring;
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m, "request_seq");
        if (strcmp(type, "event") == 0) {
            note_refusal(c, m);
            if (c->on_event)
                c->on_event(c->event_arg, m);
        } else if (strcmp(type, "response") == 0 && cJSON_IsNumber(rs) && rs->valueint >= ahead &&
                   rs->valueint <= seq) {
            const cJSON *ok = cJSON_GetObjectItemCaseSensitive(m, "success");
            if (cJSON_IsTrue(ok) && rs->valueint < seq) { /* one sent ahead: it went well */
                cJSON_Delete(m);
                continue;
            }
            if (!cJSON_IsTrue(ok)) {
                const cJSON *msg = cJSON_GetObjectItemCaseSensitive(m, "message");
                pb_err_set(err, PB_EREFUSED, "%s",
                           cJSON_IsString(msg) ? msg->valuestring : "request failed");
                cJSON_Delete(m);
                return PB_EREFUSED;
            }
            if (body) {
                cJSON *b = cJSON_DetachItemFromObjectCaseSensitive(m, "body");
                *body = b ? b : cJSON_CreateObject();
            }
            cJSON_Delete(m);
            return 0;
        }
        cJSON_Delete(m);
    }
}

void dap_client_close(struct dap_client *c)
{
    free(c->held);
    c->held = NULL;
    c->held_len = 0;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    dap_reader_close(&c->r);
}
