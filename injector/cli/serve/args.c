/* SPDX-License-Identifier: MIT */
/* `probing serve`'s command line, parsed into struct cli_serve_cmd before anything listens
 * (curl's tool_getparam/operate split): options, --target, the cluster's host options handed
 * on, --listen's address, the token's source. No HTTP here (serve.c runs the server from the
 * parsed command), so the unit tests drive it as it is (tests/unit/test_cli_parse.c). */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Parses HOST:PORT (HOST may be [v6]) into cmd's ss, host and loopback. Returns 0 or -1. */
static int parse_listen(const char *s, struct cli_serve_cmd *cmd)
{
    struct sockaddr_storage *ss = &cmd->ss;
    char *host = cmd->host;
    size_t hn = sizeof cmd->host;
    const char *colon = strrchr(s, ':');
    char *end;
    if (!colon)
        return -1;
    long port = strtol(colon + 1, &end, 10);
    if (*end || colon[1] == '\0' || port < 0 || port > 65535)
        return -1;
    size_t l = (size_t)(colon - s);
    if (l >= hn)
        return -1;
    memcpy(host, s, l);
    host[l] = '\0';
    if (host[0] == '[' && l > 2 && host[l - 1] == ']') {
        memmove(host, host + 1, l - 2);
        host[l - 2] = '\0';
    }
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        cmd->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        cmd->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
    } else {
        return -1;
    }
    cmd->port = (int)port;
    return 0;
}

int cli_serve_parse(int argc, char **argv, struct cli_serve_cmd *cmd)
{
    static const struct option longopts[] = {
        {"listen", required_argument, 0, 'l'},   {"token", required_argument, 0, 't'},
        {"target", required_argument, 0, 'T'},   {"hosts", required_argument, 0, 'C'},
        {"hostfile", required_argument, 0, 'C'}, {"nodelist", required_argument, 0, 'C'},
        {"slurm", no_argument, 0, 'C'},          {"exec", required_argument, 0, 'C'},
        {"probing", required_argument, 0, 'C'},  {"node-timeout", required_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    memset(cmd, 0, sizeof *cmd);
    cmd->listen = "127.0.0.1:8080";
    const char *token = NULL;
    int c, li = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case 'C': /* a cluster host option, handed on to `probing cluster` */
            if (cmd->ncluster_args + 2 > CLI_SERVE_MAX_CLUSTER_ARGS) {
                cli_error("serve: too many host options: give each at most once");
                return CLI_USAGE;
            }
            snprintf(cmd->cluster_names[cmd->ncluster_args], sizeof cmd->cluster_names[0], "--%s",
                     longopts[li].name);
            cmd->cluster_args[cmd->ncluster_args] = cmd->cluster_names[cmd->ncluster_args];
            cmd->ncluster_args++;
            if (optarg)
                cmd->cluster_args[cmd->ncluster_args++] = optarg;
            break;
        case 'l': cmd->listen = optarg; break;
        case 't': token = optarg; break;
        case 'T': {
            struct pb_err terr = {0};
            if (cmd->ntargets == CLI_SERVE_MAX_TARGETS) {
                cli_error("serve: at most %d --target", CLI_SERVE_MAX_TARGETS);
                return CLI_USAGE;
            }
            struct cli_serve_target *t = &cmd->targets[cmd->ntargets];
            if (cli_target_parse(optarg, &t->target, &terr) < 0 || t->target.pid > 0) {
                cli_error("serve: --target '%s': expected HOST:PORT of a probe listening on TCP",
                          optarg);
                return CLI_USAGE;
            }
            pb_strlcpy(t->name, optarg, sizeof t->name);
            cmd->ntargets++;
            break;
        }
        case 'h': cmd->help = 1; return CLI_OK;
        default: return cli_bad_option("serve", argv);
        }
    }
    if (optind < argc) {
        cli_error("serve: unexpected argument '%s': see 'probing serve --help'", argv[optind]);
        return CLI_USAGE;
    }
    const char *ptok = getenv("PROBING_TOKEN");
    if (cmd->ntargets && (!ptok || !*ptok)) {
        cli_error("serve: --target needs $PROBING_TOKEN: export the token printed by "
                  "'probing -p PID inject --listen HOST:PORT'");
        return CLI_USAGE;
    }
    if (parse_listen(cmd->listen, cmd) < 0) {
        cli_error("serve: --listen '%s': expected IP:PORT (127.0.0.1:8080, [::1]:8080, "
                  "0.0.0.0:8080)",
                  cmd->listen);
        return CLI_USAGE;
    }
    const char *env = getenv("PROBING_SERVE_TOKEN");
    if (token && strcmp(token, "auto") != 0) {
        cli_error("serve: --token takes 'auto' (a token on the command line would show in ps): "
                  "set $PROBING_SERVE_TOKEN to choose it");
        return CLI_USAGE;
    }
    if (env && *env) {
        if (strlen(env) < 16 || strlen(env) >= sizeof cmd->token) {
            cli_error("serve: $PROBING_SERVE_TOKEN must be 16 to %zu characters",
                      sizeof cmd->token - 1);
            return CLI_USAGE;
        }
        pb_strlcpy(cmd->token, env, sizeof cmd->token);
        cmd->token_from_env = 1;
        for (const char *p = cmd->token; *p; p++)
            if (*p <= ' ' || *p == ';' || *p == '"' || *p == ',' || *p == '\\' || *p > '~') {
                cli_error("serve: $PROBING_SERVE_TOKEN holds a character a cookie cannot");
                return CLI_USAGE;
            }
    } else if (token) {
        cmd->token_auto = 1;
    }
    if (!cmd->loopback && !cmd->token_from_env && !cmd->token_auto) {
        cli_error("serve: %s is not a loopback address: anyone who reaches it could read your "
                  "processes: add --token auto (or set $PROBING_SERVE_TOKEN)",
                  cmd->host);
        return CLI_USAGE;
    }
    return CLI_OK;
}
