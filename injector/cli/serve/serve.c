/* SPDX-License-Identifier: MIT */
/* `probing serve [--listen HOST:PORT] [--token auto]`: a web UI and a JSON API for the Python
 * processes of this user, in a process of its own (the probe never speaks HTTP: its surface
 * stays DAP on a private socket). HTTP is libmicrohttpd's, one thread per connection; this
 * file holds the security checks (token, loopback peer's user, Host, Origin, methods) and the
 * routing; api.c answers. docs/http.md describes the API and the security model. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "injector/cli/cluster/cluster.h"
#include "serve.h"

#define MAX_BODY (1 << 20)
/* Connections (a thread each) at once, from one address at once, and the seconds a connection
 * may stay without a byte either way before it is closed (docs/http.md "Limits"): one client
 * cannot hold every connection with requests it never finishes. */
#define SERVE_MAX_CONNECTIONS 256
#define SERVE_MAX_PER_IP 32
#define SERVE_IDLE_TIMEOUT_S 10

static struct {
    char token[80]; /* empty: no token (loopback only) */
    int loopback;   /* listening on a loopback address */
    int port;
    atomic_int login_used; /* the one-time login URL was used */
} srv;

static void help(void)
{
    printf("usage: probing serve [--listen HOST:PORT] [--token auto] [--target HOST:PORT]...\n"
           "                     [HOST OPTIONS]\n"
           "\n"
           "Serve a web UI and a JSON API (docs/http.md) for the Python processes of this user\n"
           "(every user's, for root): the process list, each process's threads and stacks, a SQL\n"
           "console, flame graphs (perf --cc start/stop), and Prometheus metrics at /metrics.\n"
           "It talks to the probes over their sockets as the other commands do; it loads the\n"
           "probe into a process only when asked (POST /api/processes/PID/attach, the page's\n"
           "'attach' button). It runs until Ctrl-C.\n"
           "\n"
           "  --listen HOST:PORT  where to listen (default 127.0.0.1:8080; port 0 picks one)\n"
           "  --token auto        require a token: a random one, printed once at start with a\n"
           "                      one-time login URL; or the value of $PROBING_SERVE_TOKEN.\n"
           "                      Needed for any address that is not loopback. Clients send\n"
           "                      'Authorization: Bearer TOKEN' or the cookie the login URL sets\n"
           "  --target HOST:PORT  also serve a probe listening on TCP there (inject --listen;\n"
           "                      its token from $PROBING_TOKEN), named HOST:PORT in the API;\n"
           "                      repeatable\n"
           "\n"
           "Host options: the distributed jobs on the page and at /api/jobs are those on these\n"
           "nodes (as 'probing cluster list' and 'cluster stacks' find them; default: this node):\n"
           "  --hosts a,b,c, --hostfile F, --nodelist L, --slurm, --exec T, --probing PATH,\n"
           "  --node-timeout MS   as in 'probing cluster --help'\n"
           "\n"
           "Without a token (loopback), only connections from this user's processes are\n"
           "answered: the peer's user is the owner of its established socket (the kernel's\n"
           "sock_diag, else /proc/net/tcp); when that is not certain, the request is refused.\n"
           "POST requests must carry an Origin header naming this server.\n");
}

/* Compares in time independent of where they differ. */
static int token_equal(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    unsigned char d = n != m;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i % (m ? m : 1)]);
    return d == 0;
}

/* Host must name a loopback address (no DNS name an attacker's page could rebind). */
static int host_is_loopback(const char *host)
{
    if (!host)
        return 0;
    char h[256];
    pb_strlcpy(h, host, sizeof h);
    char *colon = strrchr(h, ':');
    if (colon && !strchr(colon, ']'))
        *colon = '\0';
    return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "localhost") == 0 || strcmp(h, "[::1]") == 0;
}

/* Checks every request must pass; returns 0, or an HTTP status with r filled. */
static int check_access(struct MHD_Connection *conn, const char *method, const char *url,
                        struct cli_serve_reply *r)
{
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
    if (srv.token[0]) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "probing_token");
        int ok = (auth && strncmp(auth, "Bearer ", 7) == 0 && token_equal(auth + 7, srv.token)) ||
                 (cookie && token_equal(cookie, srv.token));
        if (!ok && strcmp(url, "/login") != 0) {
            cli_serve_error(r, 401,
                            "a token is needed: send 'Authorization: Bearer TOKEN' or "
                            "open the login URL 'probing serve' printed");
            return 401;
        }
    } else {
        if (!host_is_loopback(host)) {
            cli_serve_error(r, 403,
                            "Host '%s' is not a loopback address: use "
                            "http://127.0.0.1:%d/",
                            host ? host : "", srv.port);
            return 403;
        }
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        long uid = ci ? cli_serve_peer_uid(ci->connect_fd) : -1;
        if (uid < 0) {
            cli_serve_error(r, 403,
                            "this server answers only its own user's connections and "
                            "could not tell this one's user (no single established socket "
                            "matches it): start it with --token auto to share it");
            return 403;
        }
        if (uid != (long)geteuid()) {
            cli_serve_error(r, 403,
                            "this server answers only its own user's connections "
                            "(the peer's uid is %ld): start it with --token auto to share it",
                            uid);
            return 403;
        }
    }
    if (strcmp(method, "POST") == 0) {
        /* A page of another site may POST here (a "simple" request): its Origin tells. */
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        char mine[300];
        snprintf(mine, sizeof mine, "http://%s", host ? host : "");
        if (!origin || !host || strcmp(origin, mine) != 0) {
            cli_serve_error(r, 403,
                            "POST needs an Origin header naming this server (%s), "
                            "got '%s'",
                            mine, origin ? origin : "");
            return 403;
        }
    }
    return 0;
}

/* /api/processes/ID/WHAT: the process ID names (a pid, or a remote probe's HOST:PORT) and
 * WHAT's start in *what; kind 0 when the URL names none. */
static struct cli_serve_proc path_proc(const char *url, const char **what)
{
    static const char pre[] = "/api/processes/";
    struct cli_serve_proc none = {0};
    if (strncmp(url, pre, sizeof pre - 1) != 0)
        return none;
    const char *id = url + sizeof pre - 1;
    for (int i = 0; i < cli_serve_ntargets; i++) {
        size_t n = strlen(cli_serve_targets[i].name);
        if (strncmp(id, cli_serve_targets[i].name, n) == 0 && (id[n] == '/' || id[n] == '\0')) {
            *what = id[n] ? id + n + 1 : id + n;
            return (struct cli_serve_proc){.kind = CLI_SERVE_REMOTE, .index = i};
        }
    }
    char *end;
    long pid = strtol(url + sizeof pre - 1, &end, 10);
    if (pid <= 0 || pid > 0x7fffffff || (*end != '/' && *end != '\0'))
        return none;
    *what = *end ? end + 1 : end;
    return (struct cli_serve_proc){.kind = CLI_SERVE_LOCAL, .pid = (pid_t)pid};
}

/* The flame graph's filters from the query: thread=TID, since=S, gil=1, idle=1, native=all
 * (docs/http.md). 0, or -1 with r a 400 naming the bad one. */
static int flame_filters(struct MHD_Connection *conn, struct cli_fg_opts *flt,
                         struct cli_serve_reply *r)
{
    static const char *const flags[] = {"gil", "idle", "native"};
    int *dst[] = {&flt->gil, &flt->idle, &flt->all};
    char *end;
    for (int i = 0; i < 3; i++) {
        const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, flags[i]);
        if (!v || !*v)
            continue;
        if (strcmp(v, i == 2 ? "all" : "1") != 0) {
            cli_serve_error(r, 400, "%s '%s': expected %s", flags[i], v, i == 2 ? "all" : "1");
            return -1;
        }
        *dst[i] = 1;
    }
    const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "thread");
    if (v && *v) {
        flt->thread = strtoll(v, &end, 10);
        if (*end || flt->thread <= 0) {
            cli_serve_error(r, 400, "thread '%s': expected a native thread id", v);
            return -1;
        }
    }
    v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "since");
    if (v && *v) {
        flt->since = strtod(v, &end);
        if (*end || !(flt->since > 0)) {
            cli_serve_error(r, 400, "since '%s': expected a number of seconds > 0", v);
            return -1;
        }
    }
    return 0;
}

static void route(struct MHD_Connection *conn, const char *method, const char *url,
                  const char *body, struct cli_serve_reply *r)
{
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int post = strcmp(method, "POST") == 0;
    const char *what = "";
    struct cli_serve_proc proc = path_proc(url, &what);
    const struct cli_serve_proc *pp = &proc;
    int has = proc.kind != 0; /* the URL names a process */
    int want_post = -1;       /* the route's method once known: 0 GET, 1 POST */
    if (strcmp(url, "/login") == 0) {
        want_post = 0;
        if (get) {
            const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
            int first = srv.token[0] && t && token_equal(t, srv.token) &&
                        atomic_exchange(&srv.login_used, 1) == 0;
            if (!first) {
                cli_serve_error(r, 401,
                                "this login URL is not valid (it works once): send "
                                "the token as 'Authorization: Bearer TOKEN'");
                return;
            }
            r->status = 303; /* the cookie and the redirect are added by the caller */
            r->type = "text/plain";
            r->body = strdup("logged in\n");
            r->len = strlen(r->body);
            return;
        }
    } else if (strcmp(url, "/api/processes") == 0) {
        want_post = 0;
        if (get)
            cli_serve_processes(r);
    } else if (strcmp(url, "/api/gpus") == 0) {
        want_post = 0;
        if (get)
            cli_serve_gpus(r);
    } else if (strcmp(url, "/api/jobs") == 0) {
        want_post = 0;
        if (get)
            cli_serve_jobs(r);
    } else if (strcmp(url, "/api/jobs/stacks") == 0) {
        want_post = 1;
        if (post)
            cli_serve_job_stacks(body, r);
    } else if (strcmp(url, "/metrics") == 0) {
        want_post = 0;
        if (get)
            cli_serve_metrics(r);
    } else if (has && strcmp(what, "stacks") == 0) {
        want_post = 0;
        if (get) {
            const char *l = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "locals");
            const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "tasks");
            const char *c =
                MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "subprocesses");
            if (t && *t && strcmp(t, "0") != 0 && strcmp(t, "1") != 0)
                cli_serve_error(r, 400, "tasks '%s': expected 0 or 1", t);
            else if (c && *c && strcmp(c, "0") != 0 && strcmp(c, "1") != 0)
                cli_serve_error(r, 400, "subprocesses '%s': expected 0 or 1", c);
            else
                cli_serve_stacks(pp, l && strcmp(l, "1") == 0, t && strcmp(t, "1") == 0,
                                 c && strcmp(c, "1") == 0, r);
        }
    } else if (has && strcmp(what, "flamegraph") == 0) {
        want_post = 0;
        if (get) {
            const char *f = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
            struct cli_fg_opts flt = {0};
            if (flame_filters(conn, &flt, r) == 0)
                cli_serve_flamegraph(pp, f ? f : "svg", &flt, r);
        }
    } else if (has && strcmp(what, "memory") == 0) {
        want_post = 0;
        if (get)
            cli_serve_memory(pp, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "top"),
                             r);
    } else if (has && strcmp(what, "torch/trace") == 0) {
        want_post = 0;
        if (get)
            cli_serve_torch_trace(
                pp, MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "steps"), r);
    } else if (has && strcmp(what, "torch") == 0) {
        want_post = 1;
        if (post)
            cli_serve_torch(pp, body, r);
    } else if (has && strcmp(what, "query") == 0) {
        want_post = 1;
        if (post)
            cli_serve_query(pp, body, r);
    } else if (has && strcmp(what, "attach") == 0) {
        want_post = 1;
        if (post)
            cli_serve_attach(pp, r);
    } else if (has && strcmp(what, "perf") == 0) {
        want_post = 1;
        if (post)
            cli_serve_perf(pp, body, r);
    } else if (get) {
        const char *p = strcmp(url, "/") == 0 ? "/index.html" : url;
        for (const struct cli_serve_asset *a = cli_serve_assets; a->path; a++) {
            if (strcmp(a->path, p) != 0)
                continue;
            r->status = 200;
            r->type = a->type;
            r->body = malloc(a->len + 1);
            memcpy(r->body, a->data, a->len);
            r->len = a->len;
            return;
        }
        cli_serve_error(r, 404, "no such page: %s", url);
        return;
    }
    if (want_post < 0)
        cli_serve_error(r, 404, "no such resource: %s %s", method, url);
    else if (!r->body)
        cli_serve_error(r, 405, "%s takes %s only", url, want_post ? "POST" : "GET");
}

struct req {
    char *body;
    size_t len;
    int too_big;
    int token_ok; /* the request carried the token (or none is needed): its body is kept */
};

static enum MHD_Result queue(struct MHD_Connection *conn, struct cli_serve_reply *r)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", r->type ? r->type : "application/json");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Frame-Options", "SAMEORIGIN");
    if (r->type && strncmp(r->type, "text/html", 9) == 0)
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'self'; img-src 'self' data:; "
                                "frame-ancestors 'self'");
    if (r->status == 405)
        MHD_add_response_header(resp, "Allow", strstr(r->body, "POST only") ? "POST" : "GET");
    if (r->status == 303) {
        char cookie[200];
        snprintf(cookie, sizeof cookie, "probing_token=%s; Path=/; HttpOnly; SameSite=Strict",
                 srv.token);
        MHD_add_response_header(resp, "Set-Cookie", cookie);
        MHD_add_response_header(resp, "Location", "/");
    }
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* libmicrohttpd calls this first with the headers only, then with each piece of the body, then
 * once more. Everything about who asks is decided on the first call, before a byte of the body
 * is read: a refused request is answered then (the body is never read, the connection closed),
 * and so is one whose Content-Length is over MAX_BODY. Only a request that carries the token
 * keeps its body (the one-time /login, reachable without it, keeps none). */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    struct req *q = *con_cls;
    if (!q) {
        struct cli_serve_reply r = {0};
        if (check_access(conn, method, url, &r) != 0)
            return queue(conn, &r);
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > MAX_BODY) {
            cli_serve_error(&r, 413, "the request body is larger than %d bytes", MAX_BODY);
            return queue(conn, &r);
        }
        q = calloc(1, sizeof *q);
        if (!q)
            return MHD_NO;
        q->token_ok = !srv.token[0] || strcmp(url, "/login") != 0;
        *con_cls = q;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!q->token_ok || q->len + *upload_size > MAX_BODY) {
            q->too_big = 1;
        } else {
            char *nb = realloc(q->body, q->len + *upload_size + 1);
            if (!nb)
                return MHD_NO;
            memcpy(nb + q->len, upload, *upload_size);
            q->body = nb;
            q->len += *upload_size;
            q->body[q->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    struct cli_serve_reply r = {0};
    if (q->too_big)
        cli_serve_error(&r, 413, "the request body is larger than %d bytes",
                        q->token_ok ? MAX_BODY : 0);
    else
        route(conn, method, url, q->body ? q->body : "", &r);
    if (!r.body)
        cli_serve_error(&r, 500, "no answer");
    return queue(conn, &r);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct req *q = *con_cls;
    if (q) {
        free(q->body);
        free(q);
    }
    *con_cls = NULL;
}

/* Runs a parsed serve until SIGINT or SIGTERM. cmd stays where it is meanwhile: the host
 * options' words point into it. */
static int act(struct cli_serve_cmd *cmd)
{
    memcpy(cli_serve_targets, cmd->targets, sizeof cli_serve_targets);
    cli_serve_ntargets = cmd->ntargets;
    memcpy(cli_serve_cluster_args, cmd->cluster_args, sizeof cli_serve_cluster_args);
    cli_serve_ncluster_args = cmd->ncluster_args;
    char herr[512];
    if (cli_serve_ncluster_args > 0 && cli_serve_check_hosts(herr, sizeof herr) < 0) {
        cli_error("serve: the host options: %s", herr);
        return CLI_USAGE;
    }
    srv.loopback = cmd->loopback;
    pb_strlcpy(srv.token, cmd->token, sizeof srv.token);
    if (cmd->token_auto) {
        /* cli_token_choose takes $PROBING_TOKEN when set: that one is the probes'. */
        const char *ptok = getenv("PROBING_TOKEN");
        char *saved = ptok && *ptok ? strdup(ptok) : NULL;
        unsetenv("PROBING_TOKEN");
        struct pb_err terr = {0};
        int trc = cli_token_choose(srv.token, sizeof srv.token, &terr);
        if (saved) {
            setenv("PROBING_TOKEN", saved, 1);
            free(saved);
        }
        if (trc < 0) {
            cli_error("serve: %s", terr.msg);
            return CLI_FAIL;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL); /* the server's threads inherit it */
    cli_cluster_node_name(); /* its static buffer, filled before the threads start */
    /* The peer check compares with it: known before the first connection unless picked. */
    srv.port = cmd->port;
    struct sockaddr_storage *ss = &cmd->ss;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)SERVE_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)SERVE_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)SERVE_MAX_PER_IP, MHD_OPTION_END);
    if (!d) {
        cli_error("serve: cannot listen on %s: %s (is the port in use?)", cmd->listen,
                  strerror(errno ? errno : EADDRINUSE));
        return CLI_FAIL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    if (di)
        srv.port = di->port;
    char url[320];
    snprintf(url, sizeof url, ss->ss_family == AF_INET6 ? "http://[%s]:%d/" : "http://%s:%d/",
             cmd->host, srv.port);
    struct passwd *pw = getpwuid(geteuid());
    printf("probing serve: %s\n", url);
    if (geteuid() == 0)
        printf("serving the processes of every user (running as root)\n");
    else
        printf("serving the processes of user %s (uid %d)\n", pw ? pw->pw_name : "?",
               (int)geteuid());
    if (srv.token[0]) {
        if (!cmd->token_from_env)
            printf("token: %s\n", srv.token);
        printf("login once at: %slogin?token=%s\n", url, srv.token);
    }
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    printf("probing serve: stopped\n");
    return CLI_OK;
}

int cli_cmd_serve(const struct cli_opts *o, int argc, char **argv)
{
    static struct cli_serve_cmd cmd; /* the server's threads read it until the end */
    (void)o;
    int rc = cli_serve_parse(argc, argv, &cmd);
    if (cmd.help)
        help();
    else if (rc == CLI_OK)
        rc = act(&cmd);
    return rc;
}
