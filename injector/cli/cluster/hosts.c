/* SPDX-License-Identifier: MIT */
/* Which nodes `probing cluster` asks, and asking them: --hosts a,b,c, --hostfile F (one name a
 * line, '#' comments, MPI's "host slots=N" accepted), --nodelist or --slurm (the nodes squeue
 * gives for $SLURM_JOB_ID, else $SLURM_JOB_NODELIST) in SLURM's compressed syntax (node[1-3,5]);
 * each node is reached by a command template (--exec, default "ssh -- {host}") that runs `probing cluster CMD --local --json`
 * there (every name checked first: no leading '-', only the characters of host names): one command per node serves all its ranks, nodes are asked in parallel, and a node
 * that does not answer in time costs its timeout and is reported, never more. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"

/* Appends every expansion of spec[0..len) (which may hold several [..] groups) to out, each
 * prefixed by pre; *count is out's size (counted here: cJSON counts by walking the list, which
 * made 65536 names cost seconds). Returns 0 or -1 on a syntax error. */
static int expand(const char *pre, const char *spec, size_t len, cJSON *out, int *count,
                  struct pb_err *err)
{
    const char *open = memchr(spec, '[', len);
    if (*count > 65536)
        return pb_err_set(err, PB_EUSAGE, "node list expands to more than 65536 names");
    if (!open) {
        char name[512];
        if (strlen(pre) + len >= sizeof name)
            return pb_err_set(err, PB_EUSAGE, "node name too long in '%.*s'", (int)len, spec);
        snprintf(name, sizeof name, "%s%.*s", pre, (int)len, spec);
        if (name[0]) {
            cJSON_AddItemToArray(out, cJSON_CreateString(name));
            ++*count;
        }
        return 0;
    }
    const char *close = memchr(open, ']', len - (size_t)(open - spec));
    if (!close || close == open + 1)
        return pb_err_set(err, PB_EUSAGE, "node list '%.*s': unbalanced or empty '['", (int)len,
                          spec);
    char head[512];
    if (strlen(pre) + (size_t)(open - spec) >= sizeof head)
        return pb_err_set(err, PB_EUSAGE, "node name too long in '%.*s'", (int)len, spec);
    snprintf(head, sizeof head, "%s%.*s", pre, (int)(open - spec), spec);
    const char *rest = close + 1;
    size_t rlen = len - (size_t)(rest - spec);
    /* Each comma-separated item of the brackets: N or LO-HI, zero padding kept from LO. */
    for (const char *p = open + 1; p < close;) {
        const char *end = memchr(p, ',', (size_t)(close - p));
        if (!end)
            end = close;
        const char *dash = memchr(p, '-', (size_t)(end - p));
        const char *lo_end = dash ? dash : end;
        int width = (int)(lo_end - p);
        char *e1, *e2;
        long lo = strtol(p, &e1, 10), hi = lo;
        if (e1 != lo_end || width == 0 || !isdigit((unsigned char)*p))
            return pb_err_set(err, PB_EUSAGE, "node list: '%.*s' is not a number or range",
                              (int)(end - p), p);
        if (dash) {
            hi = strtol(dash + 1, &e2, 10);
            if (e2 != end || dash + 1 == end || hi < lo)
                return pb_err_set(err, PB_EUSAGE, "node list: bad range '%.*s'", (int)(end - p), p);
        }
        if (hi - lo > 65536)
            return pb_err_set(err, PB_EUSAGE, "node list: range '%.*s' is too large",
                              (int)(end - p), p);
        for (long v = lo; v <= hi; v++) {
            char pre2[600];
            snprintf(pre2, sizeof pre2, "%s%0*ld", head, width, v);
            int rc = expand(pre2, rest, rlen, out, count, err);
            if (rc < 0)
                return rc;
        }
        p = end + 1;
    }
    return 0;
}

cJSON *cli_cluster_nodelist_expand(const char *spec, struct pb_err *err)
{
    cJSON *out = cJSON_CreateArray();
    const char *p = spec;
    int count = 0;
    while (*p) {
        /* A top-level comma (outside brackets) separates names. */
        const char *q = p;
        int depth = 0;
        for (; *q && (depth > 0 || *q != ','); q++) {
            if (*q == '[')
                depth++;
            else if (*q == ']')
                depth--;
            if (depth < 0 || isspace((unsigned char)*q))
                break;
        }
        if (depth != 0 || (*q && *q != ',')) {
            pb_err_set(err, PB_EUSAGE, "node list '%s': unbalanced brackets or a space", spec);
            cJSON_Delete(out);
            return NULL;
        }
        if (expand("", p, (size_t)(q - p), out, &count, err) < 0) {
            cJSON_Delete(out);
            return NULL;
        }
        p = *q ? q + 1 : q;
    }
    return out;
}

/* A host name is handed to the --exec command (ssh, srun, kubectl) as one word: a name that
 * starts with '-' would be read as an option of it (ssh -oProxyCommand=... runs a command),
 * and anything but the characters of host names, addresses and user@host has no business
 * there. 0, or -1 with err naming the name (escaped) and where it came from. */
static int host_check(const char *name, const char *from, struct pb_err *err)
{
    char why[80] = "";
    if (!name[0])
        snprintf(why, sizeof why, "it is empty");
    else if (name[0] == '-')
        snprintf(why, sizeof why, "a leading '-' is an option to the --exec command");
    for (const unsigned char *p = (const unsigned char *)name; !why[0] && *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                 strchr("._-:@%/", *p);
        if (!ok)
            snprintf(why, sizeof why,
                     *p > ' ' && *p < 0x7f ? "it holds '%c'" : "it holds byte 0x%02x", *p);
    }
    if (!why[0])
        return 0;
    char shown[100]; /* the name on one line: control bytes as \xNN, cut at about 90 */
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)name;
    for (; *p && o < 90; p++)
        o += (size_t)snprintf(shown + o, sizeof shown - o, *p > ' ' && *p < 0x7f ? "%c" : "\\x%02x",
                              *p);
    if (*p)
        snprintf(shown + o, sizeof shown - o, "...");
    return pb_err_set(err, PB_EUSAGE,
                      "host name '%s' (%s) refused: %s (names are letters, digits, ._-:@%%/): "
                      "fix the host list",
                      shown, from, why);
}

/* Every name of a node list checked; NULL (hosts deleted) with err on the first bad one. */
static cJSON *hosts_checked(cJSON *hosts, const char *from, struct pb_err *err)
{
    const cJSON *h;
    cJSON_ArrayForEach(h, hosts) if (host_check(h->valuestring, from, err) < 0)
    {
        cJSON_Delete(hosts);
        return NULL;
    }
    return hosts;
}

static cJSON *read_hostfile(const char *path, struct pb_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        pb_err_set(err, PB_EUSAGE, "cannot read hostfile %s: %m", path);
        return NULL;
    }
    cJSON *out = cJSON_CreateArray();
    char line[1024], from[64];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        char *h = line;
        lineno++;
        line[strcspn(line, "#\n")] = '\0';
        while (isspace((unsigned char)*h))
            h++;
        h[strcspn(h, " \t\r")] = '\0'; /* "host slots=8" (MPI hostfiles): the name only */
        snprintf(from, sizeof from, "--hostfile line %d", lineno);
        if (*h && host_check(h, from, err) < 0) {
            cJSON_Delete(out);
            out = NULL;
            break;
        }
        if (*h)
            cJSON_AddItemToArray(out, cJSON_CreateString(h));
    }
    fclose(f);
    return out;
}

/* --slurm: the nodes of job $SLURM_JOB_ID as its controller has them (`squeue -h -j ID -o %N`),
 * malloc'd; NULL when there is no job id, no squeue or no answer in time (the environment's
 * node list is used then). The environment alone is not enough: in a step started from outside
 * the allocation (`srun --jobid J --overlap -w node1 ...`, how one gets a shell on a node of a
 * running job) SLURM_JOB_NODELIST names only that step's nodes. */
static char *slurm_job_nodes(const struct cli_cluster_opts *o)
{
    const char *id = getenv("SLURM_JOB_ID");
    if (!id || !*id)
        id = getenv("SLURM_JOBID");
    if (!id || !*id || strlen(id) > 20 || strspn(id, "0123456789") != strlen(id))
        return NULL;
    char *av[] = {(char *)"squeue",
                  (char *)"--noheader",
                  (char *)"--jobs",
                  (char *)id,
                  (char *)"--format",
                  (char *)"%N",
                  NULL};
    struct cli_cluster_child kid = {.group = 1, .argv = av};
    fflush(stdout);
    fflush(stderr);
    cli_cluster_run(&kid, 1, 1, o->node_timeout_ms);
    char *nodes = NULL;
    if (kid.state == CLUSTER_CHILD_DONE && WIFEXITED(kid.status) && WEXITSTATUS(kid.status) == 0 &&
        kid.obuf) {
        const char *b = kid.obuf;
        size_t n = strcspn(b, "\n");
        const char *rest = b + n + strspn(b + n, " \n"); /* one line only: a job's node list */
        while (n && isspace((unsigned char)b[n - 1]))
            n--;
        if (n && !*rest && !(n == 6 && memcmp(b, "(null)", 6) == 0))
            nodes = strndup(b, n);
    }
    PB_LOG(PB_LOG_DEBUG, "cluster: squeue -j %s: %s", id, nodes ? nodes : "(no node list)");
    cli_cluster_child_free(&kid);
    return nodes;
}

cJSON *cli_cluster_hosts_resolve(const struct cli_cluster_opts *o, struct pb_err *err)
{
    cJSON *hosts;
    if (o->hosts)
        return (hosts = cli_cluster_nodelist_expand(o->hosts, err))
                   ? hosts_checked(hosts, "--hosts", err)
                   : NULL;
    if (o->hostfile)
        return read_hostfile(o->hostfile, err);
    if (o->nodelist)
        return (hosts = cli_cluster_nodelist_expand(o->nodelist, err))
                   ? hosts_checked(hosts, "--nodelist", err)
                   : NULL;
    if (o->slurm) {
        char *job_nodes = slurm_job_nodes(o);
        if (job_nodes) {
            hosts = cli_cluster_nodelist_expand(job_nodes, err);
            free(job_nodes);
            return hosts ? hosts_checked(hosts, "squeue -j $SLURM_JOB_ID", err) : NULL;
        }
        const char *nl = getenv("SLURM_JOB_NODELIST"), *var = "$SLURM_JOB_NODELIST";
        if (!nl || !*nl) {
            nl = getenv("SLURM_NODELIST");
            var = "$SLURM_NODELIST";
        }
        if (!nl || !*nl) {
            pb_err_set(err, PB_EUSAGE,
                       "--slurm: SLURM_JOB_NODELIST is not set and no SLURM_JOB_ID that "
                       "squeue knows: run inside the job's allocation (salloc, sbatch), "
                       "set SLURM_JOB_ID or give --hosts");
            return NULL;
        }
        return (hosts = cli_cluster_nodelist_expand(nl, err)) ? hosts_checked(hosts, var, err)
                                                              : NULL;
    }
    return cJSON_CreateArray();
}

/* ---- asking the nodes ---- */
struct nodes_ctx {
    char **cmds;  /* each node's shell command (NULL: run without a shell) */
    char ***argv; /* each node's argv: {"/bin/sh", "-c", command, NULL}, or the template's words */
};

/* Appends s to b single-quoted for sh. */
static void quote(char **b, size_t *len, size_t *cap, const char *s)
{
    size_t need = *len + strlen(s) * 4 + 4;
    if (need > *cap) {
        *cap = need * 2;
        *b = realloc(*b, *cap);
    }
    char *o = *b + *len;
    *o++ = '\'';
    for (; *s; s++) {
        if (*s == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *s;
        }
    }
    *o++ = '\'';
    *o = '\0';
    *len = (size_t)(o - *b);
}

static void append(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *b = realloc(*b, *cap);
    }
    memcpy(*b + *len, s, n);
    *len += n;
    (*b)[*len] = '\0';
}

/* The shell command for host: the template with {host} replaced by the quoted host and {cmd}
 * by the quoted remote command (appended when the template has no {cmd}). */
static char *node_command(const char *tmpl, const char *host, char *const *argv, int argc)
{
    size_t len = 0, cap = 256;
    char *b = malloc(cap), *cmd = NULL;
    size_t clen = 0, ccap = 256;
    cmd = malloc(ccap);
    b[0] = cmd[0] = '\0';
    for (int i = 0; i < argc; i++) {
        if (i)
            append(&cmd, &clen, &ccap, " ", 1);
        quote(&cmd, &clen, &ccap, argv[i]);
    }
    int have_cmd = 0;
    for (const char *p = tmpl; *p;) {
        if (strncmp(p, "{host}", 6) == 0) {
            quote(&b, &len, &cap, host);
            p += 6;
        } else if (strncmp(p, "{cmd}", 5) == 0) {
            append(&b, &len, &cap, cmd, clen);
            have_cmd = 1;
            p += 5;
        } else {
            append(&b, &len, &cap, p, 1);
            p++;
        }
    }
    if (!have_cmd) {
        append(&b, &len, &cap, " ", 1);
        append(&b, &len, &cap, cmd, clen);
    }
    free(cmd);
    return b;
}

/* Words a template's first may not be for it to run without a shell: the shell's reserved
 * words and the builtins that have no program of their name (or whose program would do
 * something else: cd, exec, read, ...). */
static const char *const shell_own[] = {
    "case",   "do",    "done",     "elif",    "else",    "esac",    "fi",    "for",
    "if",     "in",    "then",     "until",   "while",   "time",    "exec",  "eval",
    ".",      ":",     "cd",       "command", "export",  "local",   "set",   "readonly",
    "shift",  "times", "trap",     "unset",   "alias",   "unalias", "umask", "ulimit",
    "wait",   "read",  "type",     "hash",    "getopts", "jobs",    "fg",    "bg",
    "return", "break", "continue", "builtin", "source",  NULL};

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The next blank-separated word at *p (its length in *len; *p moves past it), NULL after the
 * last. */
static const char *next_word(const char **p, size_t *len)
{
    const char *s = *p;
    while (blank(*s))
        s++;
    if (!*s)
        return NULL;
    const char *w = s;
    while (*s && !blank(*s))
        s++;
    *len = (size_t)(s - w);
    *p = s;
    return w;
}

/* 1 when sh would do nothing to tmpl but split it at blanks (no quote, expansion, glob,
 * redirection, operator, comment or leading assignment; a first word that is a program, not
 * the shell's own; {cmd} only as a word of its own): such a template is run without a shell,
 * one process start fewer for each node (512 nodes: 512 shells). Anything else goes to sh -c
 * as it always did. */
static int plain_words(const char *tmpl)
{
    int words = 0;
    size_t len;
    const char *w;
    for (const char *p = tmpl; (w = next_word(&p, &len)); words++) {
        for (const char *c = w; c < w + len;) {
            if (strncmp(c, "{host}", 6) == 0) {
                if (c == w && words == 0)
                    return 0; /* the program would be the host */
                c += 6;
            } else if (strncmp(c, "{cmd}", 5) == 0) {
                if (len != 5 || words == 0)
                    return 0;
                c += 5;
            } else if (isalnum((unsigned char)*c) || strchr("-_./:@%+,", *c) ||
                       (*c == '=' && words > 0)) {
                c++;
            } else {
                return 0;
            }
        }
        if (words == 0)
            for (int k = 0; shell_own[k]; k++)
                if (strlen(shell_own[k]) == len && strncmp(w, shell_own[k], len) == 0)
                    return 0;
    }
    return words > 0;
}

/* argv's argc words copied to o, each pointed at from v[*n], v[*n + 1], ...: past the last. */
static char *put_words(char **v, size_t *n, char *o, char *const *argv, int argc)
{
    for (int i = 0; i < argc; i++) {
        v[(*n)++] = o;
        o = stpcpy(o, argv[i]) + 1;
    }
    return o;
}

/* The argv a plain_words template gives for host: its words with {host} replaced by the host
 * (already checked: letters, digits, ._-:@%/), {cmd} by the remote command's words (appended
 * when the template has no {cmd}), as sh would have split the quoted command. One allocation
 * (pointers, then the strings); NULL when out of memory. */
static char **node_argv(const char *tmpl, const char *host, char *const *argv, int argc)
{
    size_t hl = strlen(host), bytes = strlen(tmpl) + 1, slots = (size_t)argc + 1, len;
    const char *w;
    for (const char *p = tmpl; (w = next_word(&p, &len));)
        slots++;
    for (const char *p = strstr(tmpl, "{host}"); p; p = strstr(p + 6, "{host}"))
        bytes += hl;
    for (int i = 0; i < argc; i++)
        bytes += strlen(argv[i]) + 1;
    char **v = malloc(slots * sizeof *v + bytes);
    if (!v)
        return NULL;
    char *o = (char *)(v + slots);
    size_t n = 0;
    int have_cmd = 0;
    for (const char *p = tmpl; (w = next_word(&p, &len));) {
        if (len == 5 && strncmp(w, "{cmd}", 5) == 0) {
            o = put_words(v, &n, o, argv, argc);
            have_cmd = 1;
            continue;
        }
        v[n++] = o;
        for (const char *c = w; c < w + len;) {
            if (strncmp(c, "{host}", 6) == 0) {
                memcpy(o, host, hl);
                o += hl;
                c += 6;
            } else {
                *o++ = *c++;
            }
        }
        *o++ = '\0';
    }
    if (!have_cmd)
        put_words(v, &n, o, argv, argc);
    v[n] = NULL;
    return v;
}

/* The last non-empty line of s, at most n-1 bytes, into buf. */
static void last_line(const char *s, char *buf, size_t n)
{
    buf[0] = '\0';
    if (!s)
        return;
    const char *end = s + strlen(s);
    while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > s && start[-1] != '\n')
        start--;
    snprintf(buf, n, "%.*s", (int)(end - start), start);
}

cJSON *cli_cluster_nodes_collect(const struct cli_cluster_opts *o, const cJSON *hosts,
                                 char *const *argv, int argc)
{
    int n = cJSON_GetArraySize(hosts), i = 0;
    cJSON *docs = cJSON_CreateArray();
    struct nodes_ctx nc = {calloc((size_t)n + 1, sizeof(char *)),
                           calloc((size_t)n + 1, sizeof(char **))};
    struct cli_cluster_child *kids = calloc((size_t)n + 1, sizeof *kids);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    if (!docs || !nc.cmds || !nc.argv || !kids || !names) {
        free(nc.cmds);
        free(nc.argv);
        free(kids);
        free(names);
        return docs; /* empty: the caller says no node answered */
    }
    const cJSON *h;
    cJSON_ArrayForEach(h, hosts) /* by index would walk the list each time */
    {
        if (i < n)
            names[i++] = h->valuestring;
    }
    int plain = plain_words(o->exec);
    for (i = 0; i < n; i++) {
        if (plain) {
            nc.argv[i] = node_argv(o->exec, names[i], argv, argc);
        } else if ((nc.cmds[i] = node_command(o->exec, names[i], argv, argc)) &&
                   (nc.argv[i] = malloc(4 * sizeof(char *)))) {
            nc.argv[i][0] = (char *)"/bin/sh";
            nc.argv[i][1] = (char *)"-c";
            nc.argv[i][2] = nc.cmds[i];
            nc.argv[i][3] = NULL;
        }
        kids[i].argv = nc.argv[i]; /* NULL (out of memory): that node fails with ENOMEM */
        kids[i].group = 1;
        PB_LOG(PB_LOG_DEBUG, "cluster: node %d: %s%s", i, plain ? "" : "sh -c ",
               plain ? (nc.argv[i] ? nc.argv[i][0] : "?") : nc.cmds[i]);
    }
    fflush(stdout);
    fflush(stderr);
    cli_cluster_run(kids, n, o->parallel, o->node_timeout_ms);
    for (i = 0; i < n; i++) {
        const char *host = names[i];
        struct cli_cluster_child *k = &kids[i];
        cJSON *doc = k->state == CLUSTER_CHILD_DONE && k->obuf ? cJSON_Parse(k->obuf) : NULL;
        char msg[600], tail[400];
        msg[0] = '\0';
        last_line(k->ebuf, tail, sizeof tail);
        if (k->cut)
            snprintf(msg, sizeof msg,
                     "its output passed %d MiB: cut there and dropped (the "
                     "remote command is not `probing cluster ... --json`?)",
                     CLI_CLUSTER_MAX_OUTPUT >> 20);
        else if (k->state == CLUSTER_CHILD_TIMEDOUT)
            snprintf(msg, sizeof msg, "no answer within %d ms (--node-timeout)",
                     o->node_timeout_ms);
        else if (k->state != CLUSTER_CHILD_DONE)
            snprintf(msg, sizeof msg, "could not start the remote command (%s: %s)",
                     k->argv ? k->argv[0] : "?", strerror(k->start_errno ? k->start_errno : EIO));
        else if (!doc || !cJSON_IsObject(doc))
            snprintf(msg, sizeof msg, "the remote command %s%s%s",
                     WIFEXITED(k->status) && WEXITSTATUS(k->status) != 0 ? "failed"
                                                                         : "gave no answer",
                     tail[0] ? ": " : "", tail[0] ? tail : "");
        if (msg[0]) {
            cJSON_Delete(doc);
            doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "node", host);
            cJSON_AddStringToObject(doc, "error", msg);
        }
        cJSON_AddStringToObject(doc, "host", host);
        cJSON_AddItemToArray(docs, doc);
        cli_cluster_child_free(k);
        free(nc.cmds[i]);
        free(nc.argv[i]);
    }
    free(nc.cmds);
    free(nc.argv);
    free(kids);
    free(names);
    return docs;
}
