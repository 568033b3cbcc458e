/* SPDX-License-Identifier: MIT */
/* `probing cluster collectives`: the ranks' torch.collectives records (perf --comm) lined up by
 * (process group, sequence number). Per group, the first collective that not every member
 * entered while others wait in it (a hang: who did not come, who waits, since when), and per
 * rank the median of how long the others waited for it to enter (stragglers). Point-to-point
 * calls are matched by their peer: a send (or recv) waited in whose peer has posted no matching
 * recv (send) is a hang too. `cluster stacks` prints the hang lines above its groups. See
 * docs/cluster.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"

/* The columns each rank is asked for (local.c), in this order. */
const char cli_cluster_comm_sql[] =
    "SELECT rank, pg, group_ranks, seq, seq_source, op, state, start_time, file, line, func, "
    "peer, sizes, dtype FROM torch.collectives ORDER BY id DESC LIMIT";
enum {
    C_RANK,
    C_PG,
    C_GRANKS,
    C_SEQ,
    C_SRC,
    C_OP,
    C_STATE,
    C_START,
    C_FILE,
    C_LINE,
    C_FUNC,
    C_PEER,
    C_SIZES,
    C_DTYPE
};

/* Straggler: a rank whose median wait of the others is at least this (ms), over at least
 * STRAGGLER_MIN collectives. */
#define STRAGGLER_MS 1.0
#define STRAGGLER_MIN 3
/* A hang: members have waited this long (s) in a collective others have not entered (shorter
 * waits are a straggler's ordinary lateness). */
#define HANG_S 1.0

struct crec {
    int rank, peer; /* peer: point-to-point calls' other rank, -1 when none */
    const char *pg, *granks, *op, *state, *file, *func, *src, *sizes, *dtype;
    long long seq;
    double start;
    int line;
};

struct cgroup {
    const char *pg, *granks;
    int *members, n;
};

static const char *cell_str(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double cell_num(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_epoch(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "0,1,2,3" into a malloc'd sorted array; its length in *n. */
static int *parse_ranks(const char *s, int *n)
{
    int cap = 8, k = 0, *v = malloc(sizeof(int) * (size_t)cap);
    for (const char *p = s; v && *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p)
            break;
        if (k == cap)
            v = realloc(v, sizeof(int) * (size_t)(cap *= 2));
        if (!v)
            break;
        v[k++] = (int)x;
        p = *end == ',' ? end + 1 : end;
    }
    if (v)
        qsort(v, (size_t)k, sizeof *v, cmp_int);
    *n = v ? k : 0;
    return v;
}

static cJSON *int_array(const int *v, int n)
{
    return cJSON_CreateIntArray(v, n);
}

static char *ranges_text(const int *v, int n)
{
    char *s = cli_cluster_ranges(v, n);
    return s ? s : strdup("?");
}

/* A point-to-point call's direction: 1 sends, 2 receives, 0 a collective. */
static int p2p_dir(const char *op)
{
    if (strcmp(op, "send") == 0 || strcmp(op, "isend") == 0)
        return 1;
    return strcmp(op, "recv") == 0 || strcmp(op, "irecv") == 0 ? 2 : 0;
}

/* Appends a record to *v (capacity *cap); NULL when out of memory. */
static struct crec *push(struct crec **v, int *n, int *cap)
{
    if (*n == *cap) {
        struct crec *nv = realloc(*v, sizeof *nv * (size_t)(*cap = *cap ? *cap * 2 : 256));
        if (!nv)
            return NULL;
        *v = nv;
    }
    return &(*v)[(*n)++];
}

/* The records of the job's ranks that answered (borrowed strings): collectives returned, the
 * point-to-point calls in *p2p (*np of them); the ranks with none in *without (a JSON array of
 * ints). */
static struct crec *collect(const cJSON *nodes, const char *job, int *nrec, cJSON *without,
                            cJSON *with, struct crec **p2p, int *np, struct crec **failed, int *nf)
{
    int n = 0, cap = 0, pcap = 0, fcap = 0;
    struct crec *v = NULL;
    *p2p = NULL;
    *np = 0;
    *failed = NULL;
    *nf = 0;
    const cJSON *d, *r, *row;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (!j || strcmp(j, job) != 0 || cli_json_str(r, "error"))
            continue;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(r, "comm");
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(res, "rows");
        int rank = (int)cli_json_num(r, "rank", -1);
        if (!res || cJSON_GetArraySize(rows) == 0) {
            if (res)
                cJSON_AddItemToArray(without, cJSON_CreateNumber(rank));
            continue;
        }
        cJSON_AddItemToArray(with, cJSON_CreateNumber(rank));
        cJSON_ArrayForEach(row, rows)
        {
            /* Failed calls (they did not move torch's number) apart: a dead peer's trace. */
            struct crec *c = p2p_dir(cell_str(row, C_OP)) ? push(p2p, np, &pcap)
                             : strcmp(cell_str(row, C_STATE), "failed") == 0
                                 ? push(failed, nf, &fcap)
                                 : push(&v, &n, &cap);
            if (!c)
                break;
            const cJSON *peer = cJSON_GetArrayItem(row, C_PEER);
            c->peer = cJSON_IsNumber(peer) ? peer->valueint : -1;
            c->rank = (int)cell_num(row, C_RANK);
            c->pg = cell_str(row, C_PG);
            c->granks = cell_str(row, C_GRANKS);
            c->op = cell_str(row, C_OP);
            c->state = cell_str(row, C_STATE);
            c->file = cell_str(row, C_FILE);
            c->func = cell_str(row, C_FUNC);
            c->src = cell_str(row, C_SRC);
            c->sizes = cell_str(row, C_SIZES);
            c->dtype = cell_str(row, C_DTYPE);
            c->seq = (long long)cell_num(row, C_SEQ);
            c->start = cell_num(row, C_START);
            c->line = (int)cell_num(row, C_LINE);
        }
    }
    *nrec = n;
    return v;
}

static const struct crec *find(const struct crec *v, int n, const struct cgroup *g, int rank,
                               long long seq)
{
    for (int i = 0; i < n; i++)
        if (v[i].rank == rank && v[i].seq == seq && strcmp(v[i].pg, g->pg) == 0 &&
            strcmp(v[i].granks, g->granks) == 0)
            return &v[i];
    return NULL;
}

static int in_group(const struct crec *c, const struct cgroup *g)
{
    return strcmp(c->pg, g->pg) == 0 && strcmp(c->granks, g->granks) == 0;
}

/* Whether rank failed collective seq of group g (its record is among the failed ones). */
static int failed_at(const struct crec *f, int nf, const struct cgroup *g, int rank, long long seq)
{
    for (int i = 0; i < nf; i++)
        if (f[i].rank == rank && f[i].seq == seq && in_group(&f[i], g))
            return 1;
    return 0;
}

/* The hang of one group, or NULL: the first collective that some members wait in (running,
 * for HANG_S or more) and other members never entered (a member that entered it and failed,
 * f, did enter it). */
static cJSON *group_hang(const struct crec *v, int n, const struct crec *f, int nf,
                         const struct cgroup *g, double now)
{
    long long *maxseq = malloc(sizeof(long long) * (size_t)g->n);
    const struct crec **last = calloc((size_t)g->n, sizeof *last);
    cJSON *out = NULL;
    for (int m = 0; maxseq && last && m < g->n; m++)
        for (int i = 0; i < n; i++)
            if (v[i].rank == g->members[m] && in_group(&v[i], g) &&
                (!last[m] || v[i].seq > maxseq[m])) {
                maxseq[m] = v[i].seq;
                last[m] = &v[i];
            }
    long long s = 0;
    int have_s = 0;
    for (int i = 0; maxseq && last && i < n; i++)
        if (in_group(&v[i], g) && strcmp(v[i].state, "running") == 0 && (!have_s || v[i].seq < s)) {
            s = v[i].seq;
            have_s = 1;
        }
    if (!have_s)
        goto out;
    int *absent = malloc(sizeof(int) * (size_t)g->n), *waiting = malloc(sizeof(int) * (size_t)g->n);
    int na = 0, nw = 0;
    double since = now;
    const char *op = "?";
    for (int m = 0; m < g->n; m++) {
        const struct crec *c = find(v, n, g, g->members[m], s);
        if (!c && (!last[m] || maxseq[m] < s) && !failed_at(f, nf, g, g->members[m], s)) {
            absent[na++] = g->members[m];
        } else if (c && strcmp(c->state, "running") == 0) {
            waiting[nw++] = g->members[m];
            op = c->op;
            if (c->start < since)
                since = c->start;
        }
    }
    if (na > 0 && nw > 0 && now - since >= HANG_S) {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "pg", g->pg);
        cJSON_AddItemToObject(out, "group_ranks", int_array(g->members, g->n));
        cJSON_AddNumberToObject(out, "seq", (double)s);
        cJSON_AddStringToObject(out, "op", op);
        cJSON_AddItemToObject(out, "not_entered", int_array(absent, na));
        cJSON_AddItemToObject(out, "waiting", int_array(waiting, nw));
        cJSON_AddNumberToObject(out, "waiting_s", now - since);
        cJSON *lasts = cJSON_AddArrayToObject(out, "last");
        for (int m = 0; m < g->n; m++) {
            int k = 0;
            while (k < na && absent[k] != g->members[m])
                k++;
            if (k == na)
                continue;
            cJSON *l = cJSON_CreateObject();
            cJSON_AddNumberToObject(l, "rank", g->members[m]);
            if (last[m]) {
                cJSON_AddStringToObject(l, "op", last[m]->op);
                cJSON_AddNumberToObject(l, "seq", (double)last[m]->seq);
                cJSON_AddStringToObject(l, "state", last[m]->state);
                cJSON_AddStringToObject(l, "file", last[m]->file);
                cJSON_AddNumberToObject(l, "line", last[m]->line);
                cJSON_AddStringToObject(l, "func", last[m]->func);
            }
            cJSON_AddItemToArray(lasts, l);
        }
    }
    free(absent);
    free(waiting);
out:
    free(maxseq);
    free(last);
    return out;
}

/* Whether two records of one group and number are the same collective: op and dtype, and the
 * sizes but for all_to_all's (whose inputs may differ between ranks). */
static int same_call(const struct crec *a, const struct crec *b)
{
    if (strcmp(a->op, b->op) != 0 || strcmp(a->dtype, b->dtype) != 0)
        return 0;
    return strncmp(a->op, "all_to_all", 10) == 0 || strcmp(a->sizes, b->sizes) == 0;
}

static const struct crec *sort_base;

static int by_seq_rank(const void *a, const void *b)
{
    const struct crec *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The first collective of a group (lowest number) that its members entered as different calls
 * (op, sizes or dtype), or NULL: each side with its ranks and where it was called. Only torch's
 * numbers compare (the recorder's own counts start where each recorder started). */
static cJSON *group_mismatch(const struct crec *v, int n, const struct cgroup *g)
{
    int *ix = malloc(sizeof(int) * (size_t)(n + 1)), k = 0;
    cJSON *out = NULL;
    if (!ix)
        return NULL;
    for (int i = 0; i < n; i++)
        if (in_group(&v[i], g) && strcmp(v[i].src, "torch") == 0)
            ix[k++] = i;
    sort_base = v;
    qsort(ix, (size_t)k, sizeof *ix, by_seq_rank);
    int later = 0;
    long long first = 0;
    for (int a = 0; a < k;) {
        int b = a + 1, differ = 0;
        while (b < k && v[ix[b]].seq == v[ix[a]].seq) {
            differ |= !same_call(&v[ix[a]], &v[ix[b]]);
            b++;
        }
        if (differ && out) {
            later++;
        } else if (differ) {
            first = v[ix[a]].seq;
            out = cJSON_CreateObject();
            cJSON_AddStringToObject(out, "pg", g->pg);
            cJSON_AddItemToObject(out, "group_ranks", int_array(g->members, g->n));
            cJSON_AddNumberToObject(out, "seq", (double)first);
            cJSON *sides = cJSON_AddArrayToObject(out, "sides");
            /* One side per distinct call, in the order of their lowest rank. */
            for (int i = a; i < b; i++) {
                int seen = 0;
                for (int j = a; j < i && !seen; j++)
                    seen = same_call(&v[ix[j]], &v[ix[i]]);
                if (seen)
                    continue;
                const struct crec *c = &v[ix[i]];
                int *rk = malloc(sizeof(int) * (size_t)(b - a)), nr = 0;
                for (int j = i; rk && j < b; j++)
                    if (same_call(&v[ix[j]], c))
                        rk[nr++] = v[ix[j]].rank;
                cJSON *sd = cJSON_CreateObject();
                cJSON_AddItemToObject(sd, "ranks", int_array(rk ? rk : &c->rank, rk ? nr : 1));
                cJSON_AddStringToObject(sd, "op", c->op);
                cJSON_AddStringToObject(sd, "sizes", c->sizes);
                cJSON_AddStringToObject(sd, "dtype", c->dtype);
                cJSON_AddStringToObject(sd, "state", c->state);
                cJSON_AddStringToObject(sd, "file", c->file);
                cJSON_AddNumberToObject(sd, "line", c->line);
                cJSON_AddStringToObject(sd, "func", c->func);
                cJSON_AddItemToArray(sides, sd);
                free(rk);
            }
        }
        a = b;
    }
    if (out)
        cJSON_AddNumberToObject(out, "later", later);
    free(ix);
    return out;
}

/* Whether rank of job answered (found and read); *found set when a process claims it. */
static int rank_state(const cJSON *nodes, const char *job, int rank, int *found)
{
    const cJSON *d, *r;
    *found = 0;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (j && strcmp(j, job) == 0 && (int)cli_json_num(r, "rank", -1) == rank) {
            *found = 1;
            if (!cli_json_str(r, "error"))
                return 1;
        }
    }
    return 0;
}

/* The failed collectives of a group (torch's numbers): the latest number some members failed
 * at, who failed there, and the members that did not answer (no process claims them: gone;
 * or not read), or NULL when none failed. A peer that dies makes gloo fail its peers' pending
 * collectives at once: this names it when the others outlive the error. */
static cJSON *group_failure(const struct crec *f, int nf, const struct crec *v, int n,
                            const struct cgroup *g, const cJSON *nodes, const char *job)
{
    long long s = 0;
    const char *op = "?";
    int have = 0;
    for (int i = 0; i < nf; i++)
        if (in_group(&f[i], g) && strcmp(f[i].src, "torch") == 0 && (!have || f[i].seq > s)) {
            s = f[i].seq;
            op = f[i].op;
            have = 1;
        }
    if (!have)
        return NULL;
    int *fl = malloc(sizeof(int) * (size_t)(g->n + 1)),
        *gone = malloc(sizeof(int) * (size_t)(g->n + 1));
    int *unread = malloc(sizeof(int) * (size_t)(g->n + 1)), nfl = 0, ngone = 0, nun = 0;
    cJSON *out = NULL;
    for (int m = 0; fl && gone && unread && m < g->n; m++) {
        int found, hit = 0, later = 0;
        for (int i = 0; i < nf && !hit; i++)
            hit = f[i].rank == g->members[m] && f[i].seq == s && in_group(&f[i], g);
        /* A member that went on (a collective of the group since): the failure is old. */
        for (int i = 0; i < n && hit && !later; i++)
            later = v[i].rank == g->members[m] && v[i].seq >= s && in_group(&v[i], g);
        if (later)
            continue;
        if (hit)
            fl[nfl++] = g->members[m];
        else if (!rank_state(nodes, job, g->members[m], &found))
            *(found ? &unread[nun++] : &gone[ngone++]) = g->members[m];
    }
    if (fl && gone && unread && nfl > 0) {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "pg", g->pg);
        cJSON_AddItemToObject(out, "group_ranks", int_array(g->members, g->n));
        cJSON_AddNumberToObject(out, "seq", (double)s);
        cJSON_AddStringToObject(out, "op", op);
        cJSON_AddItemToObject(out, "failed", int_array(fl, nfl));
        cJSON_AddItemToObject(out, "gone", int_array(gone, ngone));
        cJSON_AddItemToObject(out, "not_read", int_array(unread, nun));
    }
    free(fl);
    free(gone);
    free(unread);
    return out;
}

/* Whether rank has any record (collective or point-to-point). */
static int has_records(const cJSON *with, int rank)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, with) if (x->valueint == rank) return 1;
    return 0;
}

/* The point-to-point hangs: per (rank, peer, direction, group), the first call running for
 * HANG_S or more whose peer (recording) has no matching call running (a recv from this rank
 * for a send, a send to it for a recv). Not the recorders' counts: they start where each
 * rank's recorder started. */
static void p2p_hangs(const struct crec *p, int np, const cJSON *with, double now, cJSON *hangs)
{
    for (int i = 0; i < np; i++) {
        const struct crec *x = &p[i];
        int dir = p2p_dir(x->op), posted = 0, first = 1;
        if (strcmp(x->state, "running") != 0 || x->peer < 0 || now - x->start < HANG_S ||
            !has_records(with, x->peer))
            continue;
        const struct crec *last = NULL;
        for (int k = 0; k < np && first && !posted; k++) {
            const struct crec *y = &p[k];
            if (strcmp(y->pg, x->pg) != 0)
                continue;
            if (y->rank == x->rank && y->peer == x->peer && p2p_dir(y->op) == dir &&
                strcmp(y->state, "running") == 0 && y->seq < x->seq)
                first = 0;
            if (y->rank == x->peer && y->peer == x->rank && p2p_dir(y->op) == 3 - dir) {
                posted = strcmp(y->state, "running") == 0;
                if (!last || y->seq > last->seq)
                    last = y;
            }
        }
        if (!first || posted)
            continue;
        int n, *members = parse_ranks(x->granks, &n);
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "kind", "p2p");
        cJSON_AddStringToObject(h, "pg", x->pg);
        cJSON_AddItemToObject(h, "group_ranks", int_array(members, n));
        free(members);
        cJSON_AddNumberToObject(h, "seq", (double)x->seq);
        cJSON_AddStringToObject(h, "op", x->op);
        cJSON_AddStringToObject(h, "expected", dir == 1 ? "recv" : "send");
        cJSON_AddItemToObject(h, "not_entered", int_array(&x->peer, 1));
        cJSON_AddItemToObject(h, "waiting", int_array(&x->rank, 1));
        cJSON_AddNumberToObject(h, "waiting_s", now - x->start);
        cJSON_AddStringToObject(h, "file", x->file);
        cJSON_AddNumberToObject(h, "line", x->line);
        cJSON_AddStringToObject(h, "func", x->func);
        cJSON *l = cJSON_CreateObject();
        cJSON_AddNumberToObject(l, "rank", x->peer);
        if (last) {
            cJSON_AddStringToObject(l, "op", last->op);
            cJSON_AddNumberToObject(l, "seq", (double)last->seq);
            cJSON_AddStringToObject(l, "state", last->state);
            cJSON_AddStringToObject(l, "file", last->file);
            cJSON_AddNumberToObject(l, "line", last->line);
            cJSON_AddStringToObject(l, "func", last->func);
        }
        cJSON_AddItemToArray(cJSON_AddArrayToObject(h, "last"), l);
        cJSON_AddItemToArray(hangs, h);
    }
}

struct waits {
    int rank;
    double *w;
    int n, cap;
};

static struct waits *waits_of(struct waits **all, int *nall, int rank)
{
    for (int i = 0; i < *nall; i++)
        if ((*all)[i].rank == rank)
            return &(*all)[i];
    struct waits *nv = realloc(*all, sizeof *nv * (size_t)(*nall + 1));
    if (!nv)
        return NULL;
    *all = nv;
    nv[*nall] = (struct waits){rank, NULL, 0, 0};
    return &nv[(*nall)++];
}

/* Per collective that every member of g entered: how long the others waited for each member
 * (the median over the others of how much later it started), added to its list. Returns the
 * number of collectives compared. */
static int group_waits(const struct crec *v, int n, const struct cgroup *g, struct waits **all,
                       int *nall)
{
    int compared = 0;
    const struct crec **at = malloc(sizeof *at * (size_t)g->n);
    double *d = malloc(sizeof(double) * (size_t)g->n);
    for (int i = 0; at && d && i < n; i++) {
        /* Each sequence number once: from the records of the group's first member. */
        if (v[i].rank != g->members[0] || !in_group(&v[i], g))
            continue;
        int full = 1;
        for (int m = 0; m < g->n && full; m++)
            full = (at[m] = m == 0 ? &v[i] : find(v, n, g, g->members[m], v[i].seq)) != NULL;
        if (!full || g->n < 2)
            continue;
        compared++;
        for (int m = 0; m < g->n; m++) {
            int k = 0;
            for (int o = 0; o < g->n; o++)
                if (o != m)
                    d[k++] = at[m]->start > at[o]->start ? at[m]->start - at[o]->start : 0;
            struct waits *w = waits_of(all, nall, g->members[m]);
            if (!w)
                continue;
            if (w->n == w->cap) {
                double *nw =
                    realloc(w->w, sizeof(double) * (size_t)(w->cap = w->cap ? w->cap * 2 : 64));
                if (!nw)
                    continue;
                w->w = nw;
            }
            w->w[w->n++] = median(d, k) * 1e3;
        }
    }
    free(at);
    free(d);
    return compared;
}

static const cJSON *rank_entry(const cJSON *nodes, const char *job, int rank)
{
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (j && strcmp(j, job) == 0 && (int)cli_json_num(r, "rank", -1) == rank)
            return r;
    }
    return NULL;
}

static int by_wait(const void *a, const void *b)
{
    double x = cli_json_num(*(const cJSON *const *)a, "median_wait_ms", 0);
    double y = cli_json_num(*(const cJSON *const *)b, "median_wait_ms", 0);
    return x > y ? -1 : x < y;
}

cJSON *cli_cluster_comm_analyse(const cJSON *nodes, const char *job)
{
    cJSON *out = cJSON_CreateObject();
    cJSON *without = cJSON_AddArrayToObject(out, "no_records");
    cJSON *with = cJSON_AddArrayToObject(out, "recording");
    cJSON *hangs = cJSON_AddArrayToObject(out, "hangs");
    cJSON *mism = cJSON_AddArrayToObject(out, "mismatches");
    cJSON *fails = cJSON_AddArrayToObject(out, "failures");
    int n = 0, np = 0, nf = 0;
    struct crec *p2p, *failed;
    struct crec *v = collect(nodes, job, &n, without, with, &p2p, &np, &failed, &nf);
    struct cgroup *g = NULL;
    int ng = 0;
    for (int i = 0; i < n + nf; i++) {
        const struct crec *c = i < n ? &v[i] : &failed[i - n];
        int k = 0;
        while (k < ng && !in_group(c, &g[k]))
            k++;
        if (k < ng)
            continue;
        struct cgroup *ngv = realloc(g, sizeof *g * (size_t)(ng + 1));
        if (!ngv)
            break;
        g = ngv;
        g[ng].pg = c->pg;
        g[ng].granks = c->granks;
        g[ng].members = parse_ranks(c->granks, &g[ng].n);
        ng++;
    }
    /* How long a call has run: up to when its records were read (the latest rank's read),
     * not to now: `cluster collectives` reads more after them (torch's sequence numbers, a
     * second apart), and a call that was short then must not look long now. */
    double now = 0;
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes) cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
    {
        const char *j = cli_json_str(r, "job");
        if (j && strcmp(j, job) == 0 && cli_json_num(r, "comm_read_at", 0) > now)
            now = cli_json_num(r, "comm_read_at", 0);
    }
    if (now == 0)
        now = now_epoch();
    struct waits *all = NULL;
    int nall = 0, compared = 0;
    for (int k = 0; k < ng; k++) {
        cJSON *h = group_hang(v, n, failed, nf, &g[k], now);
        if (h)
            cJSON_AddItemToArray(hangs, h);
        cJSON *m = group_mismatch(v, n, &g[k]);
        if (m)
            cJSON_AddItemToArray(mism, m);
        cJSON *fl = group_failure(failed, nf, v, n, &g[k], nodes, job);
        if (fl)
            cJSON_AddItemToArray(fails, fl);
        compared += group_waits(v, n, &g[k], &all, &nall);
    }
    p2p_hangs(p2p, np, with, now, hangs);
    free(p2p);
    cJSON_AddNumberToObject(out, "compared", compared);
    cJSON **rows = calloc((size_t)nall + 1, sizeof *rows);
    for (int i = 0; rows && i < nall; i++) {
        double mx = 0;
        for (int k = 0; k < all[i].n; k++)
            mx = all[i].w[k] > mx ? all[i].w[k] : mx;
        int cnt = all[i].n;
        double med = median(all[i].w, cnt);
        cJSON *s = rows[i] = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "rank", all[i].rank);
        const cJSON *re = rank_entry(nodes, job, all[i].rank);
        cJSON_AddStringToObject(s, "node",
                                re && cli_json_str(re, "node") ? cli_json_str(re, "node") : "?");
        cJSON_AddNumberToObject(s, "pid", re ? cli_json_num(re, "pid", 0) : 0);
        cJSON_AddNumberToObject(s, "median_wait_ms", (double)(long long)(med * 1000 + 0.5) / 1000);
        cJSON_AddNumberToObject(s, "max_wait_ms", (double)(long long)(mx * 1000 + 0.5) / 1000);
        cJSON_AddNumberToObject(s, "collectives", cnt);
        cJSON_AddBoolToObject(s, "straggler", med >= STRAGGLER_MS && cnt >= STRAGGLER_MIN);
        free(all[i].w);
    }
    if (rows)
        qsort(rows, (size_t)nall, sizeof *rows, by_wait);
    cJSON *st = cJSON_AddArrayToObject(out, "ranks");
    for (int i = 0; rows && i < nall; i++)
        cJSON_AddItemToArray(st, rows[i]);
    free(rows);
    free(all);
    for (int k = 0; k < ng; k++)
        free(g[k].members);
    free(g);
    free(v);
    free(failed);
    return out;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *json_ranges(const cJSON *a, int *count)
{
    int n = cJSON_GetArraySize(a), k = 0, *v = malloc(sizeof(int) * (size_t)(n + 1));
    const cJSON *x;
    cJSON_ArrayForEach(x, a) v[k++] = x->valueint;
    qsort(v, (size_t)k, sizeof *v, cmp_int);
    char *s = ranges_text(v, k);
    free(v);
    *count = k;
    return s;
}

/* "rank 1 has not posted the recv matching send #3 of rank 0 in group 0; rank 0 waits in it
 * since 5 s at comm_job.py:120 in unmatched", then the peer's last call towards that rank. */
static void print_p2p_hang(const cJSON *h)
{
    int peer = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(h, "not_entered"), 0)->valueint;
    int rank = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(h, "waiting"), 0)->valueint;
    const char *want = cli_json_str(h, "expected"), *to = strcmp(want, "recv") ? "to" : "from";
    printf("rank %d has not posted the %s matching %s #%.0f of rank %d in group %s; rank %d "
           "waits in it since %.0f s at %s:%.0f in %s\n",
           peer, want, cli_json_text(h, "op"), cli_json_num(h, "seq", 0), rank,
           cli_json_text(h, "pg"), rank, cli_json_num(h, "waiting_s", 0),
           base(cli_json_text(h, "file")), cli_json_num(h, "line", 0), cli_json_text(h, "func"));
    const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(h, "last"), 0);
    if (cli_json_str(l, "op"))
        printf("  rank %d's last %s %s rank %d: %s #%.0f (%s) at %s:%.0f in %s\n", peer, want, to,
               rank, cli_json_text(l, "op"), cli_json_num(l, "seq", 0), cli_json_text(l, "state"),
               base(cli_json_text(l, "file")), cli_json_num(l, "line", 0),
               cli_json_text(l, "func"));
    else
        printf("  rank %d: no %s %s rank %d recorded since its recorder started\n", peer, want, to,
               rank);
}

/* "ranks 0-2 and rank 3 entered different collectives as #N of group 0:", then each side. */
static void print_mismatches(const cJSON *a)
{
    const cJSON *m, *sd;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(a, "mismatches"))
    {
        const cJSON *sides = cJSON_GetObjectItemCaseSensitive(m, "sides");
        int i = 0, ns = cJSON_GetArraySize(sides);
        printf("mismatch in group %s: ", cli_json_text(m, "pg"));
        cJSON_ArrayForEach(sd, sides)
        {
            int nr;
            char *r = json_ranges(cJSON_GetObjectItemCaseSensitive(sd, "ranks"), &nr);
            printf("%s%s %s",
                   i == 0        ? ""
                   : i == ns - 1 ? " and "
                                 : ", ",
                   nr == 1 ? "rank" : "ranks", r);
            free(r);
            i++;
        }
        printf(" entered different collectives as #%.0f\n", cli_json_num(m, "seq", 0));
        cJSON_ArrayForEach(sd, sides)
        {
            int nr;
            char *r = json_ranges(cJSON_GetObjectItemCaseSensitive(sd, "ranks"), &nr);
            const char *sz = cli_json_text(sd, "sizes");
            printf("  %s %s: %s %s %s (%s) at %s:%.0f in %s\n", nr == 1 ? "rank" : "ranks", r,
                   cli_json_text(sd, "op"), *sz ? sz : "-", cli_json_text(sd, "dtype"),
                   cli_json_text(sd, "state"), base(cli_json_text(sd, "file")),
                   cli_json_num(sd, "line", 0), cli_json_text(sd, "func"));
            free(r);
        }
        if (cli_json_num(m, "later", 0) > 0)
            printf("  and %.0f later collective%s of the group differ too\n",
                   cli_json_num(m, "later", 0), cli_json_num(m, "later", 0) == 1 ? "" : "s");
    }
}

/* Whether a failure line named rank as having no process. */
static int gone(const cJSON *a, int rank)
{
    const cJSON *f, *x;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(a, "failures")) cJSON_ArrayForEach(
        x, cJSON_GetObjectItemCaseSensitive(f, "gone")) if (x->valueint == rank) return 1;
    return 0;
}

/* "all_reduce #N of group 0 failed on ranks 0-2; rank 3 has no process (exited or killed)". */
static void print_failures(const cJSON *a)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(a, "failures"))
    {
        int nf, ng, nu;
        char *fl = json_ranges(cJSON_GetObjectItemCaseSensitive(f, "failed"), &nf);
        char *gone = json_ranges(cJSON_GetObjectItemCaseSensitive(f, "gone"), &ng);
        char *un = json_ranges(cJSON_GetObjectItemCaseSensitive(f, "not_read"), &nu);
        printf("%s #%.0f of group %s failed on rank%s %s", cli_json_text(f, "op"),
               cli_json_num(f, "seq", 0), cli_json_text(f, "pg"), nf == 1 ? "" : "s", fl);
        if (ng)
            printf("; rank%s %s ha%s no process (exited or killed)", ng == 1 ? "" : "s", gone,
                   ng == 1 ? "s" : "ve");
        if (nu)
            printf("; rank%s %s did not answer", nu == 1 ? "" : "s", un);
        printf("\n");
        free(fl);
        free(gone);
        free(un);
    }
}

void cli_cluster_comm_print_hangs(const cJSON *a)
{
    const cJSON *h, *l;
    print_failures(a);
    print_mismatches(a);
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(a, "hangs"))
    {
        if (cli_json_str(h, "kind")) {
            print_p2p_hang(h);
            continue;
        }
        int na, nw;
        char *absent = json_ranges(cJSON_GetObjectItemCaseSensitive(h, "not_entered"), &na);
        char *waiting = json_ranges(cJSON_GetObjectItemCaseSensitive(h, "waiting"), &nw);
        printf("rank%s %s ha%s not entered %s #%.0f of group %s; rank%s %s wait%s in it since "
               "%.0f s\n",
               na == 1 ? "" : "s", absent, na == 1 ? "s" : "ve", cli_json_text(h, "op"),
               cli_json_num(h, "seq", 0), cli_json_text(h, "pg"), nw == 1 ? "" : "s", waiting,
               nw == 1 ? "s" : "", cli_json_num(h, "waiting_s", 0));
        cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(h, "last"))
        {
            if (cli_json_str(l, "op"))
                printf("  rank %.0f's last collective of the group: %s #%.0f (%s) at %s:%.0f in "
                       "%s\n",
                       cli_json_num(l, "rank", 0), cli_json_text(l, "op"),
                       cli_json_num(l, "seq", 0), cli_json_text(l, "state"),
                       base(cli_json_text(l, "file")), cli_json_num(l, "line", 0),
                       cli_json_text(l, "func"));
            else if (gone(a, (int)cli_json_num(l, "rank", 0)))
                printf("  rank %.0f: no process (exited or killed)\n", cli_json_num(l, "rank", 0));
            else
                printf("  rank %.0f: no collective of the group recorded since its recorder "
                       "started\n",
                       cli_json_num(l, "rank", 0));
        }
        free(absent);
        free(waiting);
    }
}

int cli_cluster_collectives_report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    const char *job = cli_cluster_pick_job(o, nodes);
    if (!job)
        return CLI_FAIL;
    cJSON *a = cli_cluster_comm_analyse(nodes, job);
    const cJSON *d, *r;
    int world = 0, answered = 0;
    cJSON *errors = cJSON_AddArrayToObject(a, "errors");
    cJSON_ArrayForEach(d, nodes)
    {
        if (cli_json_str(d, "error")) {
            char msg[600];
            snprintf(msg, sizeof msg, "node %s: %s", cli_json_str(d, "node"),
                     cli_json_str(d, "error"));
            cJSON_AddItemToArray(errors, cJSON_CreateString(msg));
        }
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
        {
            const char *j = cli_json_str(r, "job");
            if (!j || strcmp(j, job) != 0)
                continue;
            if ((int)cli_json_num(r, "world_size", 0) > world)
                world = (int)cli_json_num(r, "world_size", 0);
            if (cli_json_str(r, "error")) {
                char msg[600];
                snprintf(msg, sizeof msg, "rank %.0f (node %s, pid %.0f): %s",
                         cli_json_num(r, "rank", -1), cli_json_str(r, "node"),
                         cli_json_num(r, "pid", 0), cli_json_str(r, "error"));
                cJSON_AddItemToArray(errors, cJSON_CreateString(msg));
            } else {
                answered++;
            }
        }
    }
    cJSON_AddStringToObject(a, "job", job);
    cJSON_AddNumberToObject(a, "world_size", world);
    cJSON_AddItemToObject(a, "flight_recorder", cli_cluster_fr_analyse(nodes, job));
    cJSON_AddItemToObject(a, "sequence", cli_cluster_seq_analyse(nodes, job));
    int rc = answered > 0 ? CLI_OK : CLI_FAIL;
    if (o->json) {
        cli_print_json(a);
        cJSON_Delete(a);
        return rc;
    }
    int nrec;
    char *rec = json_ranges(cJSON_GetObjectItemCaseSensitive(a, "recording"), &nrec);
    printf("job %s: world size %d, %d rank%s answered, %d with records of collectives%s%s\n",
           cli_tx(job), world, answered, answered == 1 ? "" : "s", nrec, nrec ? ": " : "",
           nrec ? rec : "");
    free(rec);
    int nnone;
    char *none = json_ranges(cJSON_GetObjectItemCaseSensitive(a, "no_records"), &nnone);
    if (nnone)
        printf("no records from rank%s %s: start the recorder there ('probing -p PID perf "
               "--comm') before the collectives to compare\n",
               nnone == 1 ? "" : "s", none);
    free(none);
    /* torch's own sequence numbers: all there is when nothing recorded; beside the records
     * when they show no hang but torch counted collectives they did not see (DDP's, from C++). */
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(a, "sequence");
    int seq_behind = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(seq, "behind"));
    int hangs = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "hangs"));
    if (nrec == 0) {
        if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(seq, "read")) +
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(seq, "not_read")) >
            0)
            cli_cluster_seq_print(seq, 0);
        int shown = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(seq, "read")) +
                        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(seq, "not_read")) >
                    0;
        printf("%snothing to line up: start 'probing -p PID perf --comm' (or perf --torch) on "
               "every rank of the job (their pids: 'probing cluster list')%s\n",
               shown ? "\n" : "",
               shown ? " to see which collective each rank entered and the "
                       "stragglers"
                     : "");
        cJSON_Delete(a);
        return rc;
    }
    printf("\n");
    int mismatches = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "mismatches")) +
                     cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "failures"));
    if (hangs == 0 && mismatches == 0)
        printf("no hang: no rank waits in a collective that another member of its group has "
               "not entered, or in a send/recv its peer has not posted\n");
    else
        cli_cluster_comm_print_hangs(a);
    if (hangs == 0 && seq_behind)
        cli_cluster_seq_print(seq, 1);
    printf("\nstragglers (per rank: median and max of how long the others waited for it to "
           "enter, over %.0f collectives every member entered):\n",
           cli_json_num(a, "compared", 0));
    const cJSON *s;
    int shown = 0, flagged = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(a, "ranks"))
    {
        if (shown == 10)
            break;
        int st = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "straggler"));
        flagged += st;
        printf("  rank %-5.0f median %8.3f ms  max %8.3f ms  (%s, pid %.0f)%s\n",
               cli_json_num(s, "rank", 0), cli_json_num(s, "median_wait_ms", 0),
               cli_json_num(s, "max_wait_ms", 0), cli_json_text(s, "node"),
               cli_json_num(s, "pid", 0), st ? "  STRAGGLER" : "");
        shown++;
    }
    if (!flagged)
        printf("  no straggler: no rank kept the others waiting a median of %g ms or more over "
               "%d collectives or more\n",
               STRAGGLER_MS, STRAGGLER_MIN);
    cli_cluster_fr_print(cJSON_GetObjectItemCaseSensitive(a, "flight_recorder"));
    const cJSON *e;
    cJSON_ArrayForEach(e, errors) fprintf(stderr, "probing: warning: %s\n", cli_tx(e->valuestring));
    cJSON_Delete(a);
    return rc;
}
