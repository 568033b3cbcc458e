/* SPDX-License-Identifier: MIT */
/* The agent thread: one libuv loop serving DAP on the Unix socket /tmp/probing-<uid>/<pid>.sock
 * (peer uid checked) and, when asked, on TCP. Each connection feeds a srv_session; responses go
 * out with one write each. A client that stops reading is dropped once its queue passes a bound,
 * so the target's memory stays bounded. Connections are admitted under the net.* limits
 * (admit.c; docs/security.md): caps on all and on unauthenticated ones, descriptors kept for the
 * target, a deadline and a small message size before `attach`. The loop never blocks: GIL work
 * goes to gil/worker.c. */
#include "core/core.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "dap/dap.h"
#include "core/settings.h"
#include "server.h"

#define MAX_WRITE_QUEUE (32u << 20)
#define MAX_TRACKED_CONNS 1024

struct conn {
    union {
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    uv_timer_t auth_timer; /* TCP: closes the connection if `attach` does not succeed in time */
    struct srv_session *s;
    int slot;    /* in conn_fds, or -1 */
    int handles; /* libuv handles not closed yet: the struct is freed when none is left */
    int counted; /* in n_conns (and, while unauth, in n_unauth) */
    int unauth;  /* TCP, not past `attach` yet */
    long long accepted_ms;
    struct conn *uprev, *unext; /* in the list of unauth ones, oldest first */
    unsigned char peer[16];     /* TCP: the peer's address (v4 in its first 4 bytes) */
    char rbuf[65536];
};

static uv_pipe_t unix_server;
static uv_tcp_t tcp_server;
static int tcp_listening;
static uv_async_t cmd_async;
static int cmd_async_ready; /* cmd_async initialised (srv_stop closes it) */
static pid_t owner_pid;
static int serving;
/* The descriptors of open connections (fd + 1; 0 is a free slot), so that a fork() child closes
 * them: a child holding them would keep our peers connected after we close or exit, and they
 * would wait for an answer that never comes. Set by the loop after accept, cleared before the
 * descriptor is closed, so the child never closes a descriptor that is not ours. */
static atomic_int conn_fds[MAX_TRACKED_CONNS];
/* Connections open (kept after admission), and TCP ones among them not past `attach`, those
 * also in a list, oldest first: the first to go when a new one finds the cap reached. */
static int n_conns, n_unauth;
static struct conn *unauth_head, *unauth_tail;

static void unauth_add(struct conn *c)
{
    c->unauth = 1;
    n_unauth++;
    c->unext = NULL;
    c->uprev = unauth_tail;
    if (unauth_tail)
        unauth_tail->unext = c;
    else
        unauth_head = c;
    unauth_tail = c;
}

/* The one to close for a new connection when the unauthenticated cap is reached: the oldest
 * of the peer address that holds the most of them (the oldest overall on a tie). A client that
 * keeps reconnecting from one address then evicts its own connections, not the token holder's
 * from another address. */
static struct conn *unauth_victim(void)
{
    struct conn *best = NULL;
    int best_n = 0;
    for (struct conn *a = unauth_head; a; a = a->unext) {
        int n = 0;
        struct conn *oldest = NULL; /* of a's address */
        for (struct conn *b = unauth_head; b; b = b->unext)
            if (memcmp(a->peer, b->peer, sizeof a->peer) == 0) {
                if (!oldest)
                    oldest = b;
                n++;
            }
        if (oldest == a && n > best_n) {
            best = a;
            best_n = n;
        }
    }
    return best;
}

static void unauth_remove(struct conn *c)
{
    if (!c->unauth)
        return;
    c->unauth = 0;
    n_unauth--;
    if (c->uprev)
        c->uprev->unext = c->unext;
    else
        unauth_head = c->unext;
    if (c->unext)
        c->unext->uprev = c->uprev;
    else
        unauth_tail = c->uprev;
    c->uprev = c->unext = NULL;
}

/* A TCP listen request handed from another thread (probing_start). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending, done, rc;
    char address[80], token[PB_TOKEN_MAX + 1];
    struct pb_err err;
} cmd = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, "", "", {0, ""}};

static void on_close(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (--c->handles > 0)
        return;
    srv_session_unref(c->s);
    free(c);
}

static void conn_uncount(struct conn *c)
{
    if (!c->counted)
        return;
    c->counted = 0;
    n_conns--;
    unauth_remove(c);
}

static void conn_close(void *io)
{
    struct conn *c = io;
    if (c->slot >= 0) {
        atomic_store(&conn_fds[c->slot], 0);
        c->slot = -1;
    }
    conn_uncount(c);
    if (c->handles > 1 && !uv_is_closing((uv_handle_t *)&c->auth_timer))
        uv_close((uv_handle_t *)&c->auth_timer, on_close);
    if (!uv_is_closing((uv_handle_t *)&c->h))
        uv_close((uv_handle_t *)&c->h, on_close);
}

static void conn_track(struct conn *c)
{
    uv_os_fd_t fd;
    c->slot = -1;
    if (uv_fileno((uv_handle_t *)&c->h, &fd) < 0)
        return;
    for (int i = 0; i < MAX_TRACKED_CONNS; i++) {
        int free_slot = 0;
        if (atomic_compare_exchange_strong(&conn_fds[i], &free_slot, fd + 1)) {
            c->slot = i;
            return;
        }
    }
}

static void on_write(uv_write_t *req, int status)
{
    (void)status;
    free(req);
}

/* srv_io_ops.send: one write per message; whatever the kernel does not take at once is copied
 * into a uv_write request. */
static int conn_send(void *io, const char *buf, size_t len)
{
    struct conn *c = io;
    if (uv_is_closing((uv_handle_t *)&c->h))
        return -EPIPE;
    uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
    int w = 0;
    if (uv_stream_get_write_queue_size(&c->h.stream) == 0) {
        w = uv_try_write(&c->h.stream, &b, 1);
        if (w == (int)len)
            return 0;
        if (w < 0 && w != UV_EAGAIN)
            return w;
        if (w < 0)
            w = 0;
    }
    if (uv_stream_get_write_queue_size(&c->h.stream) + len - (size_t)w > MAX_WRITE_QUEUE) {
        PB_LOG(PB_LOG_WARN, "client is not reading (over %u bytes queued): dropping it",
               MAX_WRITE_QUEUE);
        return -ENOBUFS;
    }
    uv_write_t *req = malloc(sizeof *req + len - (size_t)w);
    if (!req)
        return -ENOMEM;
    char *copy = (char *)(req + 1);
    memcpy(copy, buf + w, len - (size_t)w);
    uv_buf_t rest = uv_buf_init(copy, (unsigned)(len - (size_t)w));
    int rc = uv_write(req, &c->h.stream, &rest, 1, on_write);
    if (rc < 0)
        free(req);
    return rc;
}

static const struct srv_io_ops conn_ops = {conn_send, conn_close};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    struct conn *c = h->data;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = st->data;
    if (nread < 0) {
        PB_LOG(PB_LOG_DEBUG, "connection closed: %s", uv_strerror((int)nread));
        srv_session_detach_io(c->s);
        conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    if (srv_session_feed(c->s, buf->base, (size_t)nread) < 0) {
        srv_session_detach_io(c->s);
        conn_close(c);
        return;
    }
    if (c->unauth && srv_session_is_authed(c->s)) {
        /* Past `attach`: no deadline any more (an IDE sits idle for hours). */
        unauth_remove(c);
        uv_timer_stop(&c->auth_timer);
    }
}

static long long loop_ms(void)
{
    return (long long)uv_now(core_agent_loop());
}

static void on_auth_timeout(uv_timer_t *t)
{
    struct conn *c = t->data;
    long long timeout = core_setting_int("net.auth_timeout_ms");
    if (!srv_auth_expired(c->accepted_ms, loop_ms(), !c->unauth, timeout)) {
        /* The setting grew since: wait the rest. */
        uv_timer_start(t, on_auth_timeout, (uint64_t)(c->accepted_ms + timeout - loop_ms()), 0);
        return;
    }
    PB_LOG(PB_LOG_WARN,
           "TCP client not past attach within %lld ms (net.auth_timeout_ms): "
           "closing it",
           timeout);
    srv_session_detach_io(c->s);
    conn_close(c);
}

/* Only our own uid (or root) may talk to us over the Unix socket. */
static int peer_allowed(uv_pipe_t *p)
{
    uv_os_fd_t fd;
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (uv_fileno((uv_handle_t *)p, &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return 0;
    return cr.uid == 0 || cr.uid == geteuid();
}

/* Whether to keep a connection just accepted (admit.c, with the net.* settings): 0 no (why
 * in err), 1 yes, PROBE_ADMIT_EVICT + 1 yes in place of the oldest TCP connection not past
 * attach. */
static int admit(struct conn *c, int tcp, struct pb_err *err)
{
    struct probe_admit_limits l = {
        .max_conns = (int)core_setting_int("net.max_connections"),
        .max_unauth = (int)core_setting_int("net.max_unauthenticated"),
        .fd_reserve = (int)core_setting_int("net.fd_reserve"),
    };
    struct probe_admit_counts n = {n_conns, n_unauth};
    long fds_max = srv_fds_max(), fds_open;
    uv_os_fd_t fd;
    /* The new descriptor's number is a floor for the count (the lowest free one is taken):
     * enough to refuse without reading /proc when the target is short of descriptors. */
    if (uv_fileno((uv_handle_t *)&c->h, &fd) == 0 && fds_max >= 0 &&
        (long)fd + 1 + l.fd_reserve > fds_max)
        fds_open = (long)fd + 1;
    else if (n.conns >= l.max_conns && !(tcp && n.unauth >= l.max_unauth))
        fds_open = 0; /* refused by a cap anyway: no need to count */
    else
        fds_open = srv_fds_open();
    int rc = srv_admit(&l, &n, tcp, fds_open, fds_max, err);
    if (rc < 0) {
        PB_LOG(PB_LOG_WARN, "refused a %s connection: %s", tcp ? "TCP" : "Unix-socket", err->msg);
        return 0;
    }
    return rc + 1;
}

/* Before closing a connection admit refused: one `probing/refused` event saying why and what
 * to do, written if the socket takes it at once (a fresh socket's buffer does), so that the
 * client reports them rather than a closed connection (the CLI and the VS Code extension print
 * both as they come). A TCP peer, not authenticated, is told only that a limit was reached
 * (the log has which); a Unix-socket peer is the target's user. */
static void tell_refused(struct conn *c, int tcp, const struct pb_err *err)
{
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(
        body, "reason", tcp ? "a connection limit of the probe (its log says which)" : err->msg);
    cJSON_AddStringToObject(body, "fix",
                            !tcp && strstr(err->msg, "net.fd_reserve")
                                ? "raise the target's open-file limit (prlimit --pid PID "
                                  "--nofile=N) and retry"
                                : "retry once other clients of the probe have disconnected");
    cJSON *ev = dap_msg_event(0, "probing/refused", body);
    size_t len = 0;
    char *buf = ev ? dap_encode(ev, &len) : NULL;
    cJSON_Delete(ev);
    if (buf) {
        uv_buf_t b = uv_buf_init(buf, (unsigned)len);
        uv_try_write(&c->h.stream, &b, 1);
    }
    free(buf);
}

static void on_connection(uv_stream_t *server, int status)
{
    if (status < 0)
        return;
    int transport = server == (uv_stream_t *)&tcp_server ? SRV_TRANSPORT_TCP : SRV_TRANSPORT_UNIX;
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->slot = -1;
    c->handles = 1;
    if (transport == SRV_TRANSPORT_TCP)
        uv_tcp_init(core_agent_loop(), &c->h.tcp);
    else
        uv_pipe_init(core_agent_loop(), &c->h.pipe, 0);
    c->h.stream.data = c;
    if (uv_accept(server, &c->h.stream) < 0) {
        uv_close((uv_handle_t *)&c->h, on_close);
        return;
    }
    if (transport == SRV_TRANSPORT_UNIX && !peer_allowed(&c->h.pipe)) {
        PB_LOG(PB_LOG_WARN, "refused a Unix-socket peer of another user");
        uv_close((uv_handle_t *)&c->h, on_close);
        return;
    }
    struct pb_err err = {0};
    int kept = admit(c, transport == SRV_TRANSPORT_TCP, &err);
    if (!kept) {
        tell_refused(c, transport == SRV_TRANSPORT_TCP, &err);
        uv_close((uv_handle_t *)&c->h, on_close);
        return;
    }
    if (transport == SRV_TRANSPORT_TCP) {
        struct sockaddr_storage ss;
        int sl = sizeof ss;
        if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &sl) == 0) {
            if (ss.ss_family == AF_INET)
                memcpy(c->peer, &((struct sockaddr_in *)&ss)->sin_addr, 4);
            else if (ss.ss_family == AF_INET6)
                memcpy(c->peer, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        }
    }
    struct conn *old = kept == PROBE_ADMIT_EVICT + 1 ? unauth_victim() : NULL;
    if (old) {
        PB_LOG(PB_LOG_WARN,
               "closed the oldest TCP connection not past attach of the address "
               "holding the most of them, for a new one: %d TCP connections not past attach "
               "(net.max_unauthenticated)",
               n_unauth);
        srv_session_detach_io(old->s);
        conn_close(old);
    }
    if (transport == SRV_TRANSPORT_TCP)
        uv_tcp_nodelay(&c->h.tcp, 1);
    c->s = srv_session_new(&conn_ops, c, transport);
    if (!c->s) {
        uv_close((uv_handle_t *)&c->h, on_close);
        return;
    }
    c->counted = 1;
    n_conns++;
    if (transport == SRV_TRANSPORT_TCP) {
        unauth_add(c);
        srv_session_set_preauth_max(c->s, (size_t)core_setting_int("net.preauth_max_bytes"));
        c->accepted_ms = loop_ms();
        uv_timer_init(core_agent_loop(), &c->auth_timer);
        c->auth_timer.data = c;
        c->handles++;
        uv_timer_start(&c->auth_timer, on_auth_timeout,
                       (uint64_t)core_setting_int("net.auth_timeout_ms"), 0);
    }
    conn_track(c);
    PB_LOG(PB_LOG_DEBUG, "new %s connection", transport == SRV_TRANSPORT_TCP ? "TCP" : "Unix");
    uv_read_start(&c->h.stream, on_alloc, on_read);
}

static int parse_address(const char *address, struct sockaddr_storage *ss, struct pb_err *err)
{
    char host[64];
    const char *colon = strrchr(address, ':');
    if (!colon || colon == address || !colon[1])
        return pb_err_set(err, PB_EBADARG, "address '%s': expected HOST:PORT", address);
    size_t hl = (size_t)(colon - address);
    if (address[0] == '[' && hl >= 2 && address[hl - 1] == ']') {
        address++;
        hl -= 2;
    }
    if (hl >= sizeof host)
        return pb_err_set(err, PB_EBADARG, "address '%s': host too long", address);
    memcpy(host, address, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return pb_err_set(err, PB_EBADARG, "address '%s': bad port", address);
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) != 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) != 0)
        return pb_err_set(err, PB_EBADARG, "address '%s': host must be an IP address", address);
    return 0;
}

static void format_bound(void)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[64] = "?";
    if (uv_tcp_getsockname(&tcp_server, (struct sockaddr *)&ss, &len) < 0)
        return;
    if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
        snprintf(core_info_edit()->tcp_address, sizeof core_info_edit()->tcp_address, "[%s]:%d", ip,
                 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    } else {
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
        snprintf(core_info_edit()->tcp_address, sizeof core_info_edit()->tcp_address, "%s:%d", ip,
                 ntohs(((struct sockaddr_in *)&ss)->sin_port));
    }
}

int srv_tcp_listen(const char *address, const char *token, struct pb_err *err)
{
    struct sockaddr_storage ss;
    if (!token || strlen(token) < PB_TOKEN_MIN || strlen(token) > PB_TOKEN_MAX)
        return pb_err_set(err, PB_EBADARG,
                          "a TCP listener needs a token of %d to %d characters "
                          "(got %zu)",
                          PB_TOKEN_MIN, PB_TOKEN_MAX, token ? strlen(token) : 0);
    int rc = parse_address(address, &ss, err);
    if (rc < 0)
        return rc;
    if (tcp_listening) {
        struct sockaddr_storage cur;
        int len = sizeof cur;
        uv_tcp_getsockname(&tcp_server, (struct sockaddr *)&cur, &len);
        int same_port = ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port == 0 ||
                                                      ((struct sockaddr_in *)&ss)->sin_port ==
                                                          ((struct sockaddr_in *)&cur)->sin_port
                                                : 1;
        if (!same_port)
            return pb_err_set(err, -EADDRINUSE,
                              "already listening on %s: one TCP address per process",
                              core_info_edit()->tcp_address);
        core_token_set(token);
        return 0;
    }
    uv_tcp_init(core_agent_loop(), &tcp_server);
    rc = uv_tcp_bind(&tcp_server, (struct sockaddr *)&ss, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&tcp_server, 64, on_connection);
    if (rc < 0) {
        uv_close((uv_handle_t *)&tcp_server, NULL);
        return pb_err_set(err, rc, "listen on %s: %s", address, uv_strerror(rc));
    }
    core_token_set(token);
    tcp_listening = 1;
    format_bound();
    PB_LOG(PB_LOG_INFO, "listening on TCP %s", core_info_edit()->tcp_address);
    return 0;
}

static void on_cmd(uv_async_t *a)
{
    (void)a;
    pthread_mutex_lock(&cmd.mu);
    if (cmd.pending) {
        cmd.rc = srv_tcp_listen(cmd.address, cmd.token, &cmd.err);
        cmd.pending = 0;
        cmd.done = 1;
        pthread_cond_broadcast(&cmd.cv);
    }
    pthread_mutex_unlock(&cmd.mu);
}

int srv_agent_listen_sync(const char *address, const char *token, struct pb_err *err)
{
    if (core_on_agent_thread())
        return srv_tcp_listen(address, token, err);
    /* Checked here too: the copies below must never cut them. */
    if (strlen(token) < PB_TOKEN_MIN || strlen(token) > PB_TOKEN_MAX)
        return pb_err_set(err, PB_EBADARG,
                          "a TCP listener needs a token of %d to %d characters "
                          "(got %zu)",
                          PB_TOKEN_MIN, PB_TOKEN_MAX, strlen(token));
    if (strlen(address) >= sizeof cmd.address)
        return pb_err_set(err, PB_EBADARG, "address '%.40s...' is too long", address);
    pthread_mutex_lock(&cmd.mu);
    pb_strlcpy(cmd.address, address, sizeof cmd.address);
    pb_strlcpy(cmd.token, token, sizeof cmd.token);
    cmd.pending = 1;
    cmd.done = 0;
    uv_async_send(&cmd_async);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    int rc = 0;
    while (!cmd.done && rc == 0)
        rc = pthread_cond_timedwait(&cmd.cv, &cmd.mu, &dl);
    if (!cmd.done) {
        cmd.pending = 0;
        pthread_mutex_unlock(&cmd.mu);
        return pb_err_set(err, PB_ETIMEDOUT, "the probe's agent did not answer within 5 s");
    }
    rc = cmd.rc;
    if (rc < 0 && err)
        *err = cmd.err;
    pthread_mutex_unlock(&cmd.mu);
    return rc;
}

static char sweep_dir[200];

static void sweep_stale(void *arg)
{
    (void)arg;
    int n = core_rundir_sweep(sweep_dir, core_info_get()->socket_path);
    if (n > 0)
        PB_LOG(PB_LOG_INFO, "removed %d stale sockets from %s", n, sweep_dir);
}

static void sweep_done(void *arg)
{
    (void)arg;
}

static int listen_unix(struct pb_err *err)
{
    char dir[200];
    struct probe_info *info = core_info_edit();
    int rc = core_rundir_path(dir, sizeof dir, err);
    if (rc < 0)
        return rc;
    core_rundir_socket_name(info->socket_path, sizeof info->socket_path, dir, info->pid);
    /* A socket left there is a previous process's with our pid (in our PID namespace): removed
     * if nobody listens on it; a live one is never taken over. */
    pid_t peer = 0;
    if (core_rundir_socket_live(info->socket_path, &peer)) {
        pb_err_set(err, PB_EAUTH,
                   "listen on %s: another live process (pid %d as seen from here, "
                   "0: another PID namespace) already listens there: not taken over",
                   info->socket_path, (int)peer);
        info->socket_path[0] = '\0';
        return PB_EAUTH;
    }
    unlink(info->socket_path);
    uv_pipe_init(core_agent_loop(), &unix_server, 0);
    mode_t old = umask(077);
    rc = uv_pipe_bind(&unix_server, info->socket_path);
    umask(old);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&unix_server, 64, on_connection);
    if (rc < 0) {
        uv_close((uv_handle_t *)&unix_server, NULL);
        pb_err_set(err, rc, "listen on %s: %s", info->socket_path, uv_strerror(rc));
        info->socket_path[0] = '\0';
        return rc;
    }
    chmod(info->socket_path, 0600);
    snprintf(sweep_dir, sizeof sweep_dir, "%s", dir);
    return 0;
}

int srv_start(struct pb_err *err)
{
    owner_pid = getpid();
    uv_async_init(core_agent_loop(), &cmd_async, on_cmd);
    cmd_async_ready = 1;
    int rc = listen_unix(err);
    if (rc < 0) {
        uv_close((uv_handle_t *)&cmd_async, NULL);
        cmd_async_ready = 0;
        return rc;
    }
    serving = 1;
    return 0;
}

void srv_stop(void)
{
    const struct probe_info *info = core_info_get();
    if (serving) {
        uv_close((uv_handle_t *)&unix_server, NULL);
        if (info->socket_path[0])
            unlink(info->socket_path);
        core_info_edit()->socket_path[0] = '\0';
        serving = 0;
    }
    if (cmd_async_ready) {
        uv_close((uv_handle_t *)&cmd_async, NULL);
        cmd_async_ready = 0;
    }
}

static uv_timer_t sweep_timer;

static void on_sweep_timer(uv_timer_t *t)
{
    (void)t;
    if (core_task_submit(sweep_stale, sweep_done, NULL) < 0)
        PB_LOG(PB_LOG_WARN, "stale socket sweep not started");
}

void srv_sweep_later(void)
{
    if (!sweep_dir[0])
        return;
    /* 2 to 3 s after the start (by pid: a job's ranks started at once spread their sweeps):
     * not while the command that injected waits for its first answer, nor beside the other
     * ranks' starts on a node where a whole job is loaded at once. */
    uv_timer_init(core_agent_loop(), &sweep_timer);
    uv_unref((uv_handle_t *)&sweep_timer);
    uv_timer_start(&sweep_timer, on_sweep_timer, SRV_SWEEP_DELAY_MS + (uint64_t)(getpid() % 1000),
                   0);
}

void srv_agent_forget(void)
{
    /* In a fork() child: the agent thread does not exist here. Close our descriptors so the
     * child does not keep the parent's sockets, and never touch the parent's socket file. */
    uv_os_fd_t fd;
    if (serving && uv_fileno((uv_handle_t *)&unix_server, &fd) == 0)
        close(fd);
    if (tcp_listening && uv_fileno((uv_handle_t *)&tcp_server, &fd) == 0)
        close(fd);
    for (int i = 0; i < MAX_TRACKED_CONNS; i++) {
        int v = atomic_exchange(&conn_fds[i], 0);
        if (v > 0)
            close(v - 1);
    }
    serving = 0;
}

void srv_agent_cleanup(void)
{
    const struct probe_info *info = core_info_get();
    if (serving && getpid() == owner_pid && info->socket_path[0])
        unlink(info->socket_path);
}
