/* SPDX-License-Identifier: MIT */
/* `probing cluster stacks`: the node documents merged into one view of the job, STAT-style.
 * Every rank's (or, with --thread all, every thread's) stack is interned; ranks with the same
 * stack in the last sample form a group; a group whose ranks kept the same stack in every sample
 * is stuck. Groups print smallest first with compact rank ranges, the frames that differ from
 * the largest group marked; --tree prints the merged prefix tree with rank sets at branches.
 * Ranks that WORLD_SIZE expects and that did not answer are listed as missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"

/* ---- interning ---- */
int cli_cluster_intern_id(struct flame_intern *t, char *key, int *is_new)
{
    long id = flame_intern_id(t, key, strlen(key), is_new);
    free(key);
    return id < 0 ? 0 : (int)id;
}

char *cli_cluster_stack_key(const cJSON *frames)
{
    size_t cap = 256, len = 0;
    char *s = malloc(cap);
    const cJSON *f;
    if (!s)
        return NULL;
    s[0] = '\0';
    cJSON_ArrayForEach(f, frames)
    {
        const char *fn = cli_json_str(f, "func"), *file = cli_json_str(f, "file");
        size_t need = (fn ? strlen(fn) : 0) + (file ? strlen(file) : 0) + 32;
        if (len + need >= cap) {
            while (len + need >= cap)
                cap *= 2;
            char *b = realloc(s, cap);
            if (!b)
                break;
            s = b;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s\x1f%s\x1f%d\x1e", fn ? fn : "",
                                file ? file : "", (int)cli_json_num(f, "line", 0));
    }
    return s;
}

/* ---- rank ranges ---- */
char *cli_cluster_ranges(const int *v, int n)
{
    size_t cap = 64 + (size_t)n * 24, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        if (j == i)
            len += (size_t)snprintf(s + len, cap - len, "%s%d", len ? "," : "", v[i]);
        else
            len += (size_t)snprintf(s + len, cap - len, "%s%d-%d", len ? "," : "", v[i], v[j]);
        i = j + 1;
    }
    return s;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

void cli_cluster_gaps(const int *present, int n, long world, struct cli_cluster_gaps *g)
{
    memset(g, 0, sizeof *g);
    g->list = cJSON_CreateArray();
    int *v = malloc(sizeof(int) * ((size_t)n + 1)), k = 0;
    /* at most one range per rank found, plus one: "-" and two 10-digit numbers and "," */
    size_t cap = 32 + ((size_t)n + 1) * 24, len = 0;
    g->ranges = malloc(cap);
    if (!v || !g->ranges) {
        free(v);
        return;
    }
    g->ranges[0] = '\0';
    for (int i = 0; i < n; i++)
        if (present[i] >= 0 && present[i] < world)
            v[k++] = present[i];
    if (k > 0)
        qsort(v, (size_t)k, sizeof *v, cmp_int);
    long next = 0; /* the lowest rank not yet accounted for */
    int listed = 0;
    for (int i = 0; i <= k; i++) {
        long upto = i < k ? v[i] : world; /* the gap is [next, upto) */
        if (upto > next) {
            g->count += upto - next;
            if (upto - 1 == next)
                len += (size_t)snprintf(g->ranges + len, cap - len, "%s%ld", len ? "," : "", next);
            else
                len += (size_t)snprintf(g->ranges + len, cap - len, "%s%ld-%ld", len ? "," : "",
                                        next, upto - 1);
            for (long r = next; r < upto && listed < CLUSTER_MISSING_LIST; r++, listed++)
                cJSON_AddItemToArray(g->list, cJSON_CreateNumber((double)r));
        }
        if (i < k && upto + 1 > next)
            next = upto + 1;
    }
    free(v);
}

void cli_cluster_gaps_to_json(cJSON *o, struct cli_cluster_gaps *g)
{
    cJSON_AddItemToObject(o, "missing", g->list ? g->list : cJSON_CreateArray());
    g->list = NULL;
    cJSON_AddNumberToObject(o, "missing_count", (double)g->count);
    cJSON_AddStringToObject(o, "missing_ranges", g->ranges ? g->ranges : "");
}

void cli_cluster_gaps_free(struct cli_cluster_gaps *g)
{
    cJSON_Delete(g->list);
    free(g->ranges);
    memset(g, 0, sizeof *g);
}

/* Sorts v and drops duplicates; returns the new count. */
static int uniq(int *v, int n)
{
    if (n > 0) /* v is NULL when nothing was added: qsort(NULL, 0) is undefined */
        qsort(v, (size_t)n, sizeof *v, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i])
            v[k++] = v[i];
    return k;
}

const char *cli_cluster_pick_job(const struct cli_cluster_opts *o, const cJSON *nodes)
{
    const char *jobs[16];
    int nj = 0, more = 0;
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes)
    {
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
        {
            const char *j = cli_json_str(r, "job");
            if (!j || (o->job && strcmp(o->job, j) != 0))
                continue;
            int k = 0;
            while (k < nj && strcmp(jobs[k], j) != 0)
                k++;
            if (k == nj && nj < 16)
                jobs[nj++] = j;
            else if (k == nj)
                more = 1;
        }
    }
    if (nj == 1)
        return jobs[0];
    if (nj == 0) {
        /* Why a node had nothing to say comes first: its ssh error, its timeout. */
        cJSON_ArrayForEach(d, nodes)
        {
            if (cli_json_str(d, "error"))
                fprintf(stderr, "probing: warning: node %s: %s\n", cli_json_text(d, "node"),
                        cli_json_text(d, "error"));
        }
        if (o->job)
            cli_error("cluster: no rank of job '%s' found on %d node%s: see 'probing cluster "
                      "list'",
                      o->job, cJSON_GetArraySize(nodes), cJSON_GetArraySize(nodes) == 1 ? "" : "s");
        else
            cli_error("cluster: no rank of a distributed job found on %d node%s (RANK/WORLD_SIZE, "
                      "OMPI_COMM_WORLD_*, PMI_*, SLURM_* in a Python process's environment): "
                      "check the hosts, or run as the job's user or root",
                      cJSON_GetArraySize(nodes), cJSON_GetArraySize(nodes) == 1 ? "" : "s");
        return NULL;
    }
    char list[1024] = "";
    for (int k = 0; k < nj; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", jobs[k]);
    cli_error("cluster: %d%s jobs found (%s): choose one with --job", nj, more ? "+" : "", list);
    return NULL;
}

/* ---- the merged view ---- */
struct task {
    int rank, pid, thread;
    const char *node, *tname;
    int *ids;           /* global stack id per sample, -1 where the thread was not seen */
    int final;          /* id in the last sample */
    const cJSON *child; /* --subprocesses: the rank's child process this is, NULL for the rank */
};

struct group {
    int stack;
    int *tasks, n;
    int *ranks, nranks;
    int stuck;
    int child; /* a group of ranks' child processes (--subprocesses) */
};

/* --tasks: asyncio tasks of every rank with the same state and coroutine chain. */
struct agroup {
    int stack;         /* global stack id of the chain, -1 none (a finished task) */
    const char *state; /* borrowed from a node document */
    int n;             /* tasks */
    int *ranks, nranks, cap;
    cJSON *names;   /* the first few task names */
    int more_names; /* other names than those */
};
#define AGROUP_NAMES 3

struct view {
    struct agroup *agroups;
    int nagroups, cap_agroups;
    cJSON *task_errors;         /* [{rank, node, pid, error}] of ranks whose tasks were not read */
    int *mem_ranks, nmem_ranks; /* ranks whose tasks were read from memory, without the GIL */
    const char *job;
    int world, samples, ntasks, ngroups;
    cJSON **stacks; /* global id -> frames (borrowed from the node documents) */
    int nstacks, cap_stacks;
    struct task *tasks;
    struct group *groups;
    struct cli_cluster_gaps gaps; /* the ranks that did not answer */
    cJSON *errors;
    cJSON *other_children; /* [{rank, node, pid, ppid, comm, cmdline, note}]: listed, not read */
    int nodes_answered, answered;
};

static int by_size(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    if (a->child != b->child) /* the ranks' own groups first, then their children's */
        return a->child ? 1 : -1;
    if (a->nranks != b->nranks)
        return a->nranks < b->nranks ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->ranks[0] < b->ranks[0] ? -1 : a->ranks[0] > b->ranks[0];
}

static void add_task(struct view *v, const cJSON *r, const cJSON *d, int tid, const char *tname,
                     const int *map, int nmap, const cJSON *samples)
{
    struct task *t = &v->tasks[v->ntasks++];
    t->rank = (int)cli_json_num(r, "rank", -1);
    t->pid = (int)cli_json_num(r, "pid", 0);
    t->node = cli_json_str(r, "node") ? cli_json_str(r, "node") : cli_json_str(d, "node");
    t->thread = tid;
    t->tname = tname;
    t->ids = malloc(sizeof(int) * (size_t)(v->samples > 0 ? v->samples : 1));
    int s = 0;
    const cJSON *sample, *th;
    cJSON_ArrayForEach(sample, samples)
    {
        if (s >= v->samples)
            break;
        t->ids[s] = -1;
        cJSON_ArrayForEach(th, sample)
        {
            if (tid >= 0 && (int)cli_json_num(th, "thread", -1) != tid)
                continue;
            int local = (int)cli_json_num(th, "stack", -1);
            t->ids[s] = local >= 0 && local < nmap ? map[local] : -1;
            break;
        }
        s++;
    }
    for (; s < v->samples; s++)
        t->ids[s] = -1;
    t->final = t->ids[v->samples - 1];
}

/* Adds rank r's tasks (--tasks) to their groups; map turns node stack ids into global ones. */
static void add_atasks(struct view *v, const cJSON *r, const int *map, int nmap)
{
    const cJSON *t;
    int rank = (int)cli_json_num(r, "rank", -1);
    if (cli_json_str(r, "tasksError")) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "rank", rank);
        cJSON_AddStringToObject(e, "node", cli_json_str(r, "node") ? cli_json_str(r, "node") : "?");
        cJSON_AddNumberToObject(e, "pid", cli_json_num(r, "pid", 0));
        cJSON_AddStringToObject(e, "error", cli_json_str(r, "tasksError"));
        cJSON_AddItemToArray(v->task_errors, e);
        return;
    }
    const char *via = cli_json_str(r, "tasksVia");
    if (via && strcmp(via, "memory") == 0) {
        int *m = realloc(v->mem_ranks, sizeof *m * (size_t)(v->nmem_ranks + 1));
        if (m) {
            v->mem_ranks = m;
            v->mem_ranks[v->nmem_ranks++] = rank;
        }
    }
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(r, "tasks"))
    {
        int local = (int)cli_json_num(t, "stack", -1);
        int stack = local >= 0 && local < nmap ? map[local] : -1;
        const char *state = cli_json_str(t, "state") ? cli_json_str(t, "state") : "?";
        struct agroup *g = NULL;
        for (int i = 0; i < v->nagroups && !g; i++)
            if (v->agroups[i].stack == stack && strcmp(v->agroups[i].state, state) == 0)
                g = &v->agroups[i];
        if (!g) {
            if (v->nagroups == v->cap_agroups) {
                int ncap = v->cap_agroups ? v->cap_agroups * 2 : 16;
                void *na = realloc(v->agroups, sizeof *v->agroups * (size_t)ncap);
                if (!na)
                    return;
                v->agroups = na;
                v->cap_agroups = ncap;
            }
            g = &v->agroups[v->nagroups++];
            memset(g, 0, sizeof *g);
            g->stack = stack;
            g->state = state;
            g->names = cJSON_CreateArray();
        }
        if (g->n == g->cap) {
            int ncap = g->cap ? g->cap * 2 : 8;
            void *nr = realloc(g->ranks, sizeof *g->ranks * (size_t)ncap);
            if (!nr)
                return;
            g->ranks = nr;
            g->cap = ncap;
        }
        g->ranks[g->n++] = rank;
        const char *name = cli_json_str(t, "name");
        int have = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, g->names) have |= name && strcmp(x->valuestring, name) == 0;
        if (name && !have && cJSON_GetArraySize(g->names) < AGROUP_NAMES)
            cJSON_AddItemToArray(g->names, cJSON_CreateString(name));
        else if (name && !have)
            g->more_names = 1;
    }
}

static int by_count(const void *pa, const void *pb)
{
    const struct agroup *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static void view_free(struct view *v)
{
    for (int i = 0; i < v->nagroups; i++) {
        free(v->agroups[i].ranks);
        cJSON_Delete(v->agroups[i].names);
    }
    free(v->agroups);
    free(v->mem_ranks);
    cJSON_Delete(v->task_errors);
    for (struct task *t = v->tasks; t < v->tasks + v->ntasks; t++)
        free(t->ids);
    for (struct group *g = v->groups; g < v->groups + v->ngroups; g++) {
        free(g->tasks);
        free(g->ranks);
    }
    free(v->tasks);
    free(v->groups);
    free(v->stacks);
    cli_cluster_gaps_free(&v->gaps);
    cJSON_Delete(v->errors);
    cJSON_Delete(v->other_children);
}

/* --subprocesses: each child of rank r read in one sample, as tasks of the rank marked with
 * the child; the others kept to be listed. */
static void add_children(struct view *v, const cJSON *r, const cJSON *d, int mode, const int *map,
                         int nmap)
{
    const cJSON *c, *th;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "children"))
    {
        const cJSON *samples = cJSON_GetObjectItemCaseSensitive(c, "samples");
        if (!samples) {
            cJSON *e = cJSON_Duplicate(c, 1);
            cJSON_AddNumberToObject(e, "rank", cli_json_num(r, "rank", -1));
            cJSON_AddStringToObject(e, "node",
                                    cli_json_str(r, "node")   ? cli_json_str(r, "node")
                                    : cli_json_str(d, "node") ? cli_json_str(d, "node")
                                                              : "?");
            cJSON_AddItemToArray(v->other_children, e);
            continue;
        }
        const cJSON *only = cJSON_GetArrayItem(samples, 0);
        int first = v->ntasks;
        if (mode == CLUSTER_THREAD_ALL) {
            cJSON_ArrayForEach(th, only) add_task(v, r, d, (int)cli_json_num(th, "thread", -1),
                                                  cli_json_str(th, "name"), map, nmap, samples);
        } else if (cJSON_GetArraySize(only) > 0) {
            add_task(v, r, d, -1, cli_json_str(cJSON_GetArrayItem(only, 0), "name"), map, nmap,
                     samples);
        }
        for (int i = first; i < v->ntasks; i++) { /* read once, at the end: its one sample */
            struct task *t = &v->tasks[i];
            t->child = c;
            t->pid = (int)cli_json_num(c, "pid", 0);
            t->final = t->ids[0];
            for (int s = 1; s < v->samples; s++)
                t->ids[s] = t->final;
        }
    }
}

static int view_build(const struct cli_cluster_opts *o, cJSON *nodes, struct view *v)
{
    memset(v, 0, sizeof *v);
    v->job = cli_cluster_pick_job(o, nodes);
    if (!v->job)
        return -1;
    v->errors = cJSON_CreateArray();
    v->task_errors = cJSON_CreateArray();
    v->other_children = cJSON_CreateArray();
    struct flame_intern tab = {0};
    const cJSON *d, *r;
    int maxtasks = 0;
    cJSON_ArrayForEach(d, nodes)
    {
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "samples");
            if (cJSON_GetArraySize(s) > v->samples)
                v->samples = cJSON_GetArraySize(s);
            const cJSON *first = cJSON_GetArrayItem(s, cJSON_GetArraySize(s) - 1), *sample;
            int m = 0;
            cJSON_ArrayForEach(sample, s) m += cJSON_GetArraySize(sample);
            maxtasks += m + cJSON_GetArraySize(first) + 1;
            const cJSON *kid;
            cJSON_ArrayForEach(kid, cJSON_GetObjectItemCaseSensitive(r, "children")) maxtasks +=
                cJSON_GetArraySize(
                    cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(kid, "samples"), 0)) +
                1;
        }
    }
    if (v->samples == 0)
        v->samples = 1;
    v->tasks = calloc((size_t)maxtasks + 1, sizeof *v->tasks);
    cJSON_ArrayForEach(d, nodes)
    {
        if (cli_json_str(d, "error")) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "node",
                                    cli_json_str(d, "node") ? cli_json_str(d, "node") : "?");
            cJSON_AddStringToObject(e, "error", cli_json_str(d, "error"));
            cJSON_AddItemToArray(v->errors, e);
            continue;
        }
        v->nodes_answered++;
        const cJSON *stacks = cJSON_GetObjectItemCaseSensitive(d, "stacks"), *f;
        int nmap = cJSON_GetArraySize(stacks), k = 0;
        int *map = calloc((size_t)nmap + 1, sizeof *map);
        cJSON_ArrayForEach(f, stacks)
        {
            int is_new = 0;
            map[k] = cli_cluster_intern_id(&tab, cli_cluster_stack_key(f), &is_new);
            if (is_new) {
                if (v->nstacks == v->cap_stacks) {
                    v->cap_stacks = v->cap_stacks ? v->cap_stacks * 2 : 64;
                    v->stacks = realloc(v->stacks, sizeof *v->stacks * (size_t)v->cap_stacks);
                }
                v->stacks[v->nstacks++] = (cJSON *)f;
            }
            k++;
        }
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
        {
            if (strcmp(cli_json_str(r, "job"), v->job) != 0)
                continue;
            int ws = (int)cli_json_num(r, "world_size", 0);
            if (ws > v->world)
                v->world = ws;
            if (cli_json_str(r, "error")) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddNumberToObject(e, "rank", cli_json_num(r, "rank", -1));
                cJSON_AddStringToObject(e, "node", cli_json_str(r, "node"));
                cJSON_AddNumberToObject(e, "pid", cli_json_num(r, "pid", 0));
                cJSON_AddStringToObject(e, "error", cli_json_str(r, "error"));
                cJSON_AddItemToArray(v->errors, e);
                continue;
            }
            if (o->tasks)
                add_atasks(v, r, map, nmap);
            const cJSON *samples = cJSON_GetObjectItemCaseSensitive(r, "samples");
            const cJSON *last = cJSON_GetArrayItem(samples, cJSON_GetArraySize(samples) - 1), *th;
            if (o->thread == CLUSTER_THREAD_ALL) {
                cJSON_ArrayForEach(th, last) add_task(v, r, d, (int)cli_json_num(th, "thread", -1),
                                                      cli_json_str(th, "name"), map, nmap, samples);
            } else if (cJSON_GetArraySize(last) > 0) {
                add_task(v, r, d, -1, cli_json_str(cJSON_GetArrayItem(last, 0), "name"), map, nmap,
                         samples);
            }
            add_children(v, r, d, o->thread, map, nmap);
        }
        free(map);
    }
    flame_intern_free(&tab);
    /* Who answered, and so who is missing. */
    int *ok = malloc(sizeof(int) * ((size_t)v->ntasks + 1));
    for (int i = 0; ok && i < v->ntasks; i++)
        ok[i] = v->tasks[i].rank;
    cli_cluster_gaps(ok, ok ? v->ntasks : 0, v->world, &v->gaps);
    int answered = ok ? uniq(ok, v->ntasks) : 0;
    for (int i = 0; i < answered; i++)
        if (ok[i] >= 0 && ok[i] < v->world)
            v->answered++;
    free(ok);
    /* Groups: tasks by their last stack. */
    v->groups = calloc((size_t)v->ntasks + 1, sizeof *v->groups);
    /* a rank's own stacks and its children's in separate groups: gof, then the children's */
    int *gof = calloc(2 * ((size_t)v->nstacks + 2), sizeof *gof);
    for (int i = 0; i < 2 * (v->nstacks + 2); i++)
        gof[i] = -1;
    for (int i = 0; i < v->ntasks; i++) {
        int key = v->tasks[i].final + 1; /* -1 (no stack) groups at 0 */
        if (v->tasks[i].child)
            key += v->nstacks + 2;
        if (gof[key] < 0) {
            gof[key] = v->ngroups;
            struct group *g = &v->groups[v->ngroups++];
            g->stack = v->tasks[i].final;
            g->tasks = malloc(sizeof(int) * (size_t)v->ntasks);
            g->ranks = malloc(sizeof(int) * (size_t)v->ntasks);
            g->child = v->tasks[i].child != NULL;
            g->stuck = v->samples > 1 && !g->child; /* a child is read once */
        }
        struct group *g = &v->groups[gof[key]];
        g->tasks[g->n] = i;
        g->ranks[g->n++] = v->tasks[i].rank;
        for (int s = 0; s < v->samples; s++)
            if (v->tasks[i].ids[s] != v->tasks[i].final || v->tasks[i].final < 0)
                g->stuck = 0;
    }
    free(gof);
    for (int g = 0; g < v->ngroups; g++)
        v->groups[g].nranks = uniq(v->groups[g].ranks, v->groups[g].n);
    if (v->ngroups > 0)
        qsort(v->groups, (size_t)v->ngroups, sizeof *v->groups, by_size);
    for (int g = 0; g < v->nagroups; g++)
        v->agroups[g].nranks = uniq(v->agroups[g].ranks, v->agroups[g].n);
    if (v->nagroups > 0)
        qsort(v->agroups, (size_t)v->nagroups, sizeof *v->agroups, by_count);
    return 0;
}

static const cJSON *group_frames(const struct view *v, const struct group *g)
{
    return g->stack >= 0 ? v->stacks[g->stack] : NULL;
}

/* How many innermost frames of a differ from b, compared from the outermost frame. */
static int differing(const cJSON *a, const cJSON *b)
{
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b), common = 0;
    while (common < na && common < nb) {
        const cJSON *fa = cJSON_GetArrayItem(a, na - 1 - common);
        const cJSON *fb = cJSON_GetArrayItem(b, nb - 1 - common);
        if (strcmp(cli_json_str(fa, "func"), cli_json_str(fb, "func")) != 0 ||
            strcmp(cli_json_str(fa, "file"), cli_json_str(fb, "file")) != 0 ||
            cli_json_num(fa, "line", 0) != cli_json_num(fb, "line", 0))
            break;
        common++;
    }
    return na - common;
}

static void print_frame(const cJSON *f, int mark, int color)
{
    const char *on = mark && color ? "\033[1;31m" : "", *off = mark && color ? "\033[0m" : "";
    if (cli_json_true(f, "native")) /* --native: function in object */
        printf("  %s %s(native) %s in %s%s\n", mark ? ">" : " ", on, cli_json_text(f, "func"),
               cli_json_text(f, "file"), off);
    else
        printf("  %s %s%s (%s:%d)%s\n", mark ? ">" : " ", on, cli_json_text(f, "func"),
               cli_json_text(f, "file"), (int)cli_json_num(f, "line", 0), off);
}

static void print_header(const struct cli_cluster_opts *o, const struct view *v, int nodes)
{
    int answered = v->answered, nchild = 0;
    for (int g = 0; g < v->ngroups; g++)
        nchild += v->groups[g].child;
    printf("job %s: world size %d, %d rank%s answered on %d of %d node%s, %d group%s",
           cli_tx(v->job), v->world, answered, answered == 1 ? "" : "s", v->nodes_answered, nodes,
           nodes == 1 ? "" : "s", v->ngroups - nchild, v->ngroups - nchild == 1 ? "" : "s");
    if (nchild > 0)
        printf(" and %d of child processes", nchild);
    if (v->samples > 1)
        printf(" (%d samples, %.3g s apart)", v->samples, o->interval);
    printf("\n");
}

static void print_missing(const struct view *v)
{
    long n = v->gaps.count;
    const cJSON *e;
    if (n > 0)
        printf("\nmissing: %ld rank%s: %s\n", n, n == 1 ? "" : "s",
               v->gaps.ranges ? v->gaps.ranges : "");
    cJSON_ArrayForEach(e, v->errors)
    {
        if (cJSON_GetObjectItemCaseSensitive(e, "rank"))
            printf("  rank %d (node %s, pid %d): %s\n", (int)cli_json_num(e, "rank", -1),
                   cli_json_text(e, "node"), (int)cli_json_num(e, "pid", 0),
                   cli_json_text(e, "error"));
        else
            printf("  node %s: %s\n", cli_json_text(e, "node"), cli_json_text(e, "error"));
    }
}

/* The distinct child processes of a group (a child has several tasks with --thread all). */
static int group_processes(const struct view *v, const struct group *gr)
{
    int n = 0;
    for (int i = 0; i < gr->n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = v->tasks[gr->tasks[j]].pid == v->tasks[gr->tasks[i]].pid &&
                   strcmp(v->tasks[gr->tasks[j]].node, v->tasks[gr->tasks[i]].node) == 0;
        n += !seen;
    }
    return n;
}

/* "a child process (node n, pid p, DataLoader worker 1 of rank 2)" or "4 child processes
 * (DataLoader workers)". */
static void print_child_group(const struct cli_cluster_opts *o, const struct view *v,
                              const struct group *gr)
{
    const struct task *t0 = &v->tasks[gr->tasks[0]];
    int np = group_processes(v, gr), same = 1, loaders = 1, nids = 0;
    int *ids = malloc(sizeof(int) * (size_t)gr->n);
    const char *role0 = cli_json_str(t0->child, "role");
    for (int i = 0; i < gr->n; i++) {
        const cJSON *c = v->tasks[gr->tasks[i]].child;
        const char *r = cli_json_str(c, "role");
        loaders &= r && strncmp(r, "DataLoader worker", 17) == 0;
        same &= (!r && !role0) || (r && role0 && strcmp(r, role0) == 0);
        if (ids && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "workerId")))
            ids[nids++] = (int)cli_json_num(c, "workerId", 0);
    }
    if (ids && nids > 0) { /* the worker ids, sorted and unique, as ranges */
        qsort(ids, (size_t)nids, sizeof *ids, cmp_int);
        nids = uniq(ids, nids);
    }
    if (np == 1) {
        printf(", in %s child process (node %s, pid %d", gr->nranks == 1 ? "its" : "a",
               cli_tx(t0->node), t0->pid);
        if (role0)
            printf(", %s of rank %d", cli_tx(role0), t0->rank);
        else
            printf(", child of rank %d: %s", t0->rank, cli_json_text(t0->child, "cmdline"));
        if (o->thread == CLUSTER_THREAD_ALL)
            printf(", thread %d \"%s\"", t0->thread, t0->tname ? cli_tx(t0->tname) : "");
        printf(")");
    } else {
        printf(", in %d child processes", np);
        char *wr = loaders && nids > 0 ? cli_cluster_ranges(ids, nids) : NULL;
        if (loaders)
            printf(" (DataLoader workers%s%s)", wr ? " " : "", wr ? wr : "");
        else if (same && role0)
            printf(" (%s)", cli_tx(role0));
        free(wr);
    }
    free(ids);
}

static void print_groups(const struct cli_cluster_opts *o, const struct view *v, int children)
{
    /* the largest group of ranks (the last before the children's) and of children (the last):
     * a group's frames that differ from its kind's largest are marked */
    const struct group *big = NULL, *bigchild = NULL;
    for (int g = 0; g < v->ngroups; g++) {
        if (!v->groups[g].child)
            big = &v->groups[g];
        else
            bigchild = &v->groups[g];
    }
    for (int g = 0; g < v->ngroups; g++) {
        const struct group *gr = &v->groups[g];
        if (children >= 0 && gr->child != children)
            continue;
        char *rs = cli_cluster_ranges(gr->ranks, gr->nranks);
        printf("\n%d rank%s: %s", gr->nranks, gr->nranks == 1 ? "" : "s", rs ? rs : "");
        free(rs);
        if (gr->child) {
            print_child_group(o, v, gr);
        } else if (gr->n == 1) {
            const struct task *t = &v->tasks[gr->tasks[0]];
            printf(" (node %s, pid %d", cli_tx(t->node), t->pid);
            if (o->thread == CLUSTER_THREAD_ALL)
                printf(", thread %d \"%s\"", t->thread, t->tname ? cli_tx(t->tname) : "");
            printf(")");
        } else if (o->thread == CLUSTER_THREAD_ALL) {
            printf(" (%d threads)", gr->n);
        }
        if (gr->stuck)
            printf("  STUCK: unchanged in all %d samples", v->samples);
        else if (v->samples > 1 && !gr->child)
            printf("  moving");
        else if (v->samples > 1)
            printf("  (read once, at the last sample)");
        printf("\n");
        const cJSON *frames = group_frames(v, gr), *f;
        if (!frames) {
            printf("    (no Python frames)\n");
            continue;
        }
        const struct group *ref = gr->child ? bigchild : big;
        int diff = gr == ref ? 0 : differing(frames, group_frames(v, ref)), i = 0;
        if (cJSON_GetArraySize(frames) == 0)
            printf("    (no Python frames)\n");
        cJSON_ArrayForEach(f, frames) print_frame(f, i++ < diff, o->color);
    }
}

static void print_other_children(const struct view *v)
{
    const cJSON *c;
    int n = cJSON_GetArraySize(v->other_children);
    if (n > 0)
        printf("\n%d child process%s not read:\n", n, n == 1 ? "" : "es");
    cJSON_ArrayForEach(c, v->other_children) printf(
        "  rank %d (node %s): pid %d (parent %d): %s: %s\n", (int)cli_json_num(c, "rank", -1),
        cli_json_text(c, "node"), (int)cli_json_num(c, "pid", 0), (int)cli_json_num(c, "ppid", 0),
        cli_json_text(c, "cmdline"), cli_json_text(c, "note"));
}

/* ---- the prefix tree ---- */
struct tnode {
    const cJSON *frame;
    struct tnode *kids;
    int nkids, capkids;
    int *ranks, n, cap;
    int ends; /* tasks whose stack ends here */
};

static int same_frame(const cJSON *a, const cJSON *b)
{
    return strcmp(cli_json_str(a, "func"), cli_json_str(b, "func")) == 0 &&
           strcmp(cli_json_str(a, "file"), cli_json_str(b, "file")) == 0 &&
           cli_json_num(a, "line", 0) == cli_json_num(b, "line", 0);
}

static void tnode_add_rank(struct tnode *t, int rank)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 8;
        t->ranks = realloc(t->ranks, sizeof(int) * (size_t)t->cap);
    }
    t->ranks[t->n++] = rank;
}

static void tree_insert(struct tnode *root, const cJSON *frames, int rank)
{
    struct tnode *t = root;
    tnode_add_rank(t, rank);
    for (int i = cJSON_GetArraySize(frames) - 1; i >= 0; i--) {
        const cJSON *f = cJSON_GetArrayItem(frames, i);
        int k = 0;
        while (k < t->nkids && !same_frame(t->kids[k].frame, f))
            k++;
        if (k == t->nkids) {
            if (t->nkids == t->capkids) {
                t->capkids = t->capkids ? t->capkids * 2 : 4;
                t->kids = realloc(t->kids, sizeof *t->kids * (size_t)t->capkids);
            }
            memset(&t->kids[k], 0, sizeof t->kids[k]);
            t->kids[k].frame = f;
            t->nkids++;
        }
        t = &t->kids[k];
        tnode_add_rank(t, rank);
    }
    t->ends++;
}

/* first: the prefix of this node's line; cont: of the lines below it. A branch's children
 * hang off "|-" and "`-" (ASCII, so that any terminal and log shows it). */
static void tree_print(struct tnode *t, const char *first, const char *cont, int color)
{
    t->n = uniq(t->ranks, t->n);
    char *rs = cli_cluster_ranges(t->ranks, t->n);
    if (t->frame) {
        const char *on = color ? "\033[36m" : "", *off = color ? "\033[0m" : "";
        if (cli_json_true(t->frame, "native"))
            printf("%s%s[%s]%s (native) %s in %s\n", first, on, rs ? rs : "", off,
                   cli_json_text(t->frame, "func"), cli_json_text(t->frame, "file"));
        else
            printf("%s%s[%s]%s %s (%s:%d)\n", first, on, rs ? rs : "", off,
                   cli_json_text(t->frame, "func"), cli_json_text(t->frame, "file"),
                   (int)cli_json_num(t->frame, "line", 0));
    }
    free(rs);
    if (t->ends && t->nkids)
        printf("%s(%d stack%s end%s here)\n", cont, t->ends, t->ends == 1 ? "" : "s",
               t->ends == 1 ? "s" : "");
    for (int k = 0; k < t->nkids; k++) {
        char f[1024], c[1024];
        if (t->nkids == 1) {
            tree_print(&t->kids[k], cont, cont, color);
            continue;
        }
        int last = k == t->nkids - 1;
        snprintf(f, sizeof f, "%s%s", cont, last ? "`-" : "|-");
        snprintf(c, sizeof c, "%s%s", cont, last ? "  " : "| ");
        tree_print(&t->kids[k], f, c, color);
    }
}

static void tree_free(struct tnode *t)
{
    for (int k = 0; k < t->nkids; k++)
        tree_free(&t->kids[k]);
    free(t->kids);
    free(t->ranks);
}

/* --tasks: the groups of asyncio tasks, fewest tasks first (the odd ones out), each with its
 * ranks, a few names, and its coroutine chain innermost first. */
static void print_atasks(const struct view *v)
{
    const cJSON *e, *x;
    int total = 0;
    for (int g = 0; g < v->nagroups; g++)
        total += v->agroups[g].n;
    /* 3.14+ ranks whose GIL could not be had were read from memory (pending tasks only) */
    char *mem = v->nmem_ranks ? cli_cluster_ranges(v->mem_ranks, v->nmem_ranks) : NULL;
    printf("\nasyncio: %d task%s in %d group%s, read with the GIL", total, total == 1 ? "" : "s",
           v->nagroups, v->nagroups == 1 ? "" : "s");
    if (mem)
        printf(", without it on rank%s %s (pending tasks; a future awaited is not known)",
               v->nmem_ranks == 1 ? "" : "s", mem);
    printf("\n");
    free(mem);
    for (int g = 0; g < v->nagroups; g++) {
        const struct agroup *a = &v->agroups[g];
        char *rs = cli_cluster_ranges(a->ranks, a->nranks);
        printf("\n%d task%s %s on %d rank%s: %s (", a->n, a->n == 1 ? "" : "s", cli_tx(a->state),
               a->nranks, a->nranks == 1 ? "" : "s", rs ? rs : "");
        free(rs);
        int k = 0;
        cJSON_ArrayForEach(x, a->names) printf("%s\"%s\"", k++ ? ", " : "", cli_tx(x->valuestring));
        printf("%s)\n", a->more_names ? ", ..." : "");
        const cJSON *f;
        if (a->stack >= 0)
            cJSON_ArrayForEach(f, v->stacks[a->stack]) print_frame(f, 0, 0);
    }
    cJSON_ArrayForEach(e, v->task_errors) printf(
        "  rank %d (node %s, pid %d): tasks not read: %s\n", (int)cli_json_num(e, "rank", -1),
        cli_json_text(e, "node"), (int)cli_json_num(e, "pid", 0), cli_json_text(e, "error"));
}

static cJSON *atasks_json(const struct view *v)
{
    cJSON *arr = cJSON_CreateArray();
    for (int g = 0; g < v->nagroups; g++) {
        const struct agroup *a = &v->agroups[g];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "ranks", cJSON_CreateIntArray(a->ranks, a->nranks));
        cJSON_AddNumberToObject(j, "count", a->n);
        cJSON_AddStringToObject(j, "state", a->state);
        cJSON_AddItemToObject(j, "names", cJSON_Duplicate(a->names, 1));
        cJSON_AddItemToObject(j, "frames",
                              a->stack >= 0 ? cJSON_Duplicate(v->stacks[a->stack], 1)
                                            : cJSON_CreateArray());
        cJSON_AddItemToArray(arr, j);
    }
    return arr;
}

/* ---- JSON ---- */
static cJSON *view_json(const struct view *v, int o_thread_all)
{
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "job", v->job);
    cJSON_AddNumberToObject(out, "world_size", v->world);
    cJSON_AddNumberToObject(out, "samples", v->samples);
    cJSON *groups = cJSON_AddArrayToObject(out, "groups");
    for (int g = 0; g < v->ngroups; g++) {
        const struct group *gr = &v->groups[g];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "ranks", cJSON_CreateIntArray(gr->ranks, gr->nranks));
        cJSON_AddBoolToObject(j, "stuck", gr->stuck);
        cJSON *nodes = cJSON_AddArrayToObject(j, "nodes");
        for (int i = 0; i < gr->n; i++) {
            const char *nd = v->tasks[gr->tasks[i]].node;
            const cJSON *x;
            int have = 0;
            cJSON_ArrayForEach(x, nodes) have |= strcmp(x->valuestring, nd) == 0;
            if (!have)
                cJSON_AddItemToArray(nodes, cJSON_CreateString(nd));
        }
        if (gr->n == 1)
            cJSON_AddNumberToObject(j, "pid", v->tasks[gr->tasks[0]].pid);
        if (gr->child) {
            cJSON_AddBoolToObject(j, "children", 1);
            cJSON *ps = cJSON_AddArrayToObject(j, "processes");
            for (int i = 0; i < gr->n; i++) {
                const struct task *t = &v->tasks[gr->tasks[i]];
                cJSON *p = cJSON_CreateObject();
                cJSON_AddNumberToObject(p, "rank", t->rank);
                cJSON_AddStringToObject(p, "node", t->node);
                cJSON_AddNumberToObject(p, "pid", t->pid);
                cJSON_AddNumberToObject(p, "ppid", cli_json_num(t->child, "ppid", 0));
                const char *role = cli_json_str(t->child, "role");
                if (role)
                    cJSON_AddStringToObject(p, "role", role);
                else
                    cJSON_AddNullToObject(p, "role");
                if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t->child, "workerId")))
                    cJSON_AddNumberToObject(p, "workerId", cli_json_num(t->child, "workerId", 0));
                if (o_thread_all)
                    cJSON_AddNumberToObject(p, "thread", t->thread);
                cJSON_AddItemToArray(ps, p);
            }
        }
        const cJSON *frames = group_frames(v, gr);
        cJSON_AddItemToObject(j, "frames",
                              frames ? cJSON_Duplicate(frames, 1) : cJSON_CreateArray());
        cJSON_AddItemToArray(groups, j);
    }
    cJSON_AddItemToObject(out, "missing", cJSON_Duplicate(v->gaps.list, 1));
    cJSON_AddNumberToObject(out, "missing_count", (double)v->gaps.count);
    cJSON_AddStringToObject(out, "missing_ranges", v->gaps.ranges ? v->gaps.ranges : "");
    cJSON_AddItemToObject(out, "errors", cJSON_Duplicate(v->errors, 1));
    if (cJSON_GetArraySize(v->other_children) > 0)
        cJSON_AddItemToObject(out, "otherChildren", cJSON_Duplicate(v->other_children, 1));
    return out;
}

int cli_cluster_stacks_report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    struct view v;
    if (view_build(o, nodes, &v) < 0)
        return CLI_FAIL;
    /* With the collectives recorder on (perf --comm), who has not entered which collective. */
    cJSON *comm = cli_cluster_comm_analyse(nodes, v.job);
    int recording = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(comm, "recording")) > 0;
    if (o->json) {
        cJSON *j = view_json(&v, o->thread == CLUSTER_THREAD_ALL);
        if (recording) {
            cJSON_AddItemToObject(j, "collectives",
                                  cJSON_DetachItemFromObjectCaseSensitive(comm, "hangs"));
            cJSON_AddItemToObject(j, "mismatches",
                                  cJSON_DetachItemFromObjectCaseSensitive(comm, "mismatches"));
            cJSON_AddItemToObject(j, "failures",
                                  cJSON_DetachItemFromObjectCaseSensitive(comm, "failures"));
        }
        if (o->tasks) {
            cJSON_AddItemToObject(j, "tasks", atasks_json(&v));
            cJSON_AddItemToObject(j, "taskErrors", cJSON_Duplicate(v.task_errors, 1));
            /* ranks whose tasks were read from memory, without the GIL (3.14+) */
            cJSON_AddItemToObject(j, "tasksWithoutGil",
                                  cJSON_CreateIntArray(v.mem_ranks, v.nmem_ranks));
        }
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        print_header(o, &v, cJSON_GetArraySize(nodes));
        if (recording)
            cli_cluster_comm_print_hangs(comm);
        if (o->tree) {
            struct tnode root = {0};
            for (int i = 0; i < v.ntasks; i++)
                if (v.tasks[i].final >= 0 && !v.tasks[i].child)
                    tree_insert(&root, v.stacks[v.tasks[i].final], v.tasks[i].rank);
            printf("\n");
            tree_print(&root, "", "", o->color);
            tree_free(&root);
            print_groups(o, &v, 1); /* the children's groups after the ranks' tree */
        } else {
            print_groups(o, &v, -1);
        }
        print_other_children(&v);
        if (o->tasks)
            print_atasks(&v);
        print_missing(&v);
    }
    cJSON_Delete(comm);
    int rc = v.ntasks > 0 ? CLI_OK : CLI_FAIL;
    view_free(&v);
    return rc;
}
