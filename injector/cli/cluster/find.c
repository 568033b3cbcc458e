/* SPDX-License-Identifier: MIT */
/* Finding the ranks of distributed jobs on this node from what their launcher already set in
 * their environment (/proc/N/environ): torchrun and plain torch.distributed (RANK, WORLD_SIZE,
 * LOCAL_RANK, GROUP_RANK, TORCHELASTIC_RUN_ID, MASTER_ADDR/PORT), Open MPI
 * (OMPI_COMM_WORLD_*), PMI (PMI_RANK/SIZE) and SLURM (SLURM_PROCID/NTASKS/JOB_ID). Only Python
 * processes count. A launcher (the torchrun agent under SLURM, an MPI daemon) that is itself
 * matched is told apart by its children: see drop_launchers_and_forks. */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cluster.h"
#include "injector/ptrace/ptrace.h"

#define ENV_MAX (256 * 1024)

const char *cli_cluster_node_name(void)
{
    static char name[256];
    if (!name[0]) {
        struct utsname u;
        pb_strlcpy(name, uname(&u) == 0 ? u.nodename : "?", sizeof name);
    }
    return name;
}

/* The value of key in a NUL-separated environment block, or NULL. */
static const char *env_get(const char *env, long len, const char *key)
{
    size_t kl = strlen(key);
    for (long i = 0; i < len;) {
        const char *e = env + i;
        size_t el = strnlen(e, (size_t)(len - i));
        if (el > kl && strncmp(e, key, kl) == 0 && e[kl] == '=')
            return e + kl + 1;
        i += (long)el + 1;
    }
    return NULL;
}

static int env_int(const char *env, long len, const char *key, long *v)
{
    const char *s = env_get(env, len, key);
    char *end;
    if (!s || !*s)
        return 0;
    *v = strtol(s, &end, 10);
    return *end == '\0' && *v >= 0 && *v <= CLUSTER_WORLD_MAX;
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    int ppid = 0;
    char state;
    if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
        return 0;
    return (pid_t)ppid;
}

/* The rank description of pid, or NULL when its environment names no distributed job. */
static cJSON *describe(pid_t pid, const char *env, long len)
{
    long rank, size, local = -1, group = -1;
    const char *launcher, *m_addr = env_get(env, len, "MASTER_ADDR");
    const char *m_port = env_get(env, len, "MASTER_PORT");
    char job[512], master[300] = "";
    if (m_addr && m_port)
        snprintf(master, sizeof master, "%s:%s", m_addr, m_port);
    if (env_int(env, len, "RANK", &rank) && env_int(env, len, "WORLD_SIZE", &size)) {
        const char *run = env_get(env, len, "TORCHELASTIC_RUN_ID");
        launcher = run ? "torchrun" : "torch";
        if (run)
            snprintf(job, sizeof job, "torchrun:%s@%s", run, master[0] ? master : "?");
        else
            snprintf(job, sizeof job, "torch:%s", master[0] ? master : "?");
        env_int(env, len, "LOCAL_RANK", &local);
        env_int(env, len, "GROUP_RANK", &group);
    } else if (env_int(env, len, "OMPI_COMM_WORLD_RANK", &rank) &&
               env_int(env, len, "OMPI_COMM_WORLD_SIZE", &size)) {
        const char *id = env_get(env, len, "OMPI_MCA_ess_base_jobid");
        if (!id)
            id = env_get(env, len, "PMIX_NAMESPACE");
        if (!id)
            id = env_get(env, len, "OMPI_MCA_orte_ess_jobid");
        launcher = "openmpi";
        snprintf(job, sizeof job, "openmpi:%s", id ? id : "?");
        env_int(env, len, "OMPI_COMM_WORLD_LOCAL_RANK", &local);
        env_int(env, len, "OMPI_COMM_WORLD_NODE_RANK", &group);
    } else if (env_int(env, len, "PMI_RANK", &rank) && env_int(env, len, "PMI_SIZE", &size)) {
        const char *id = env_get(env, len, "PMI_JOBID");
        if (!id)
            id = env_get(env, len, "SLURM_JOB_ID");
        launcher = "pmi";
        snprintf(job, sizeof job, "pmi:%s", id ? id : "?");
        env_int(env, len, "MPI_LOCALRANKID", &local);
        /* srun --mpi=pmi2 starts each rank as its own task: PMI_RANK is SLURM_PROCID, and SLURM
         * gives the local rank and node (it sets no MPI_LOCALRANKID). Under MPICH's hydra inside
         * an allocation SLURM's variables are a proxy's, whose task number is not the rank. */
        long task;
        if (env_int(env, len, "SLURM_PROCID", &task) && task == rank) {
            if (local < 0)
                env_int(env, len, "SLURM_LOCALID", &local);
            env_int(env, len, "SLURM_NODEID", &group);
        }
    } else if (env_int(env, len, "SLURM_PROCID", &rank) &&
               env_int(env, len, "SLURM_NTASKS", &size) && env_get(env, len, "SLURM_JOB_ID")) {
        const char *step = env_get(env, len, "SLURM_STEP_ID");
        launcher = "slurm";
        snprintf(job, sizeof job, "slurm:%s.%s", env_get(env, len, "SLURM_JOB_ID"),
                 step ? step : "?");
        env_int(env, len, "SLURM_LOCALID", &local);
        env_int(env, len, "SLURM_NODEID", &group);
    } else {
        return NULL;
    }
    if (size <= 0 || rank >= size)
        return NULL;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "job", job);
    cJSON_AddStringToObject(r, "launcher", launcher);
    cJSON_AddNumberToObject(r, "rank", (double)rank);
    if (local >= 0)
        cJSON_AddNumberToObject(r, "local_rank", (double)local);
    else
        cJSON_AddNullToObject(r, "local_rank");
    cJSON_AddNumberToObject(r, "world_size", (double)size);
    if (group >= 0)
        cJSON_AddNumberToObject(r, "group_rank", (double)group);
    else
        cJSON_AddNullToObject(r, "group_rank");
    if (master[0])
        cJSON_AddStringToObject(r, "master", master);
    else
        cJSON_AddNullToObject(r, "master");
    cJSON_AddNumberToObject(r, "pid", pid);
    cJSON_AddStringToObject(r, "node", cli_cluster_node_name());
    return r;
}

/* The effective uid of pid (the owner of its probe's socket directory), or -1; and its parent
 * (*ppid, 0 if unknown) from the same read. */
static long uid_of(pid_t pid, pid_t *ppid)
{
    char path[64], status[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    *ppid = 0;
    if (pb_read_file(path, status, sizeof status) <= 0)
        return -1;
    const char *u = strstr(status, "\nUid:"), *pp = strstr(status, "\nPPid:");
    long ruid, euid, parent;
    if (pp && sscanf(pp + 6, "%ld", &parent) == 1 && parent > 0)
        *ppid = (pid_t)parent;
    return u && sscanf(u + 5, "%ld %ld", &ruid, &euid) == 2 ? euid : -1;
}

/* Per job on this node: its uid ("job_uid" on each rank: the uid of most of its processes, the
 * lowest rank's on a tie), ranks of another uid marked "foreign" (anyone can set RANK and
 * MASTER_ADDR in their own process: such a process is not asked, see local.c), and a rank number
 * claimed by several processes marked "duplicate". out is sorted by job then rank. */
static void mark_uids_and_duplicates(cJSON *out)
{
    int n = cJSON_GetArraySize(out);
    cJSON **v = calloc((size_t)n + 1, sizeof *v);
    if (!v)
        return;
    int k = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, out) v[k++] = r;
    for (int a = 0; a < n;) {
        int b = a;
        while (b < n && strcmp(cli_json_str(v[a], "job"), cli_json_str(v[b], "job")) == 0)
            b++;
        long best = -1;
        int best_count = 0;
        for (int i = a; i < b; i++) {
            long u = (long)cli_json_num(v[i], "uid", -1);
            int c = 0;
            for (int j = a; j < b; j++)
                c += (long)cli_json_num(v[j], "uid", -1) == u;
            if (c > best_count) /* ties: the first in rank order wins */
                best = u, best_count = c;
        }
        for (int i = a; i < b; i++) {
            cJSON_AddNumberToObject(v[i], "job_uid", (double)best);
            if ((long)cli_json_num(v[i], "uid", -1) != best)
                cJSON_AddBoolToObject(v[i], "foreign", 1);
            if ((i > a && cli_json_num(v[i - 1], "rank", -1) == cli_json_num(v[i], "rank", -1)) ||
                (i + 1 < b && cli_json_num(v[i + 1], "rank", -1) == cli_json_num(v[i], "rank", -1)))
                cJSON_AddBoolToObject(v[i], "duplicate", 1);
        }
        a = b;
    }
    free(v);
}

static int same_rank(const cJSON *a, const cJSON *b)
{
    return strcmp(cli_json_str(a, "job"), cli_json_str(b, "job")) == 0 &&
           cli_json_num(a, "rank", -1) == cli_json_num(b, "rank", -1);
}

/* A process found, and what is known of it so far. */
struct cand {
    cJSON *r;
    pid_t pid;
    int py;    /* runs CPython: 1, 0, or -1 not read yet (read only where it decides) */
    char drop; /* 1: a fork of a rank or a launcher; 2: not Python */
    char ver[32];
    int loaded; /* maps the probe's library */
};

/* Whether c runs CPython: its version and whether the probe is loaded, from one read of /proc
 * (nothing injected), on first use. */
static int is_python(struct cand *c)
{
    if (c->py < 0) {
        struct ptrace_pyver pv;
        struct pb_err err;
        c->py =
            ptrace_pyver_detect_mapping(c->pid, &pv, CLI_PROBE_LIB_PREFIX, &c->loaded, &err) == 0;
        if (c->py)
            snprintf(c->ver, sizeof c->ver, "%d.%d.%d", pv.major, pv.minor, pv.micro);
        else
            c->drop = 2;
    }
    return c->py;
}

/* Parents of the processes walked, asked of /proc once each: forks of 64 ranks share their
 * ancestors. Open addressing over pid; a full table just asks again. */
#define PARENTS 4096
struct parents {
    pid_t pid[PARENTS], ppid[PARENTS];
};

/* Remembers p's parent, read with something else (uid_of). */
static void parent_seed(struct parents *pc, pid_t p, pid_t ppid)
{
    unsigned h = ((unsigned)p * 2654435761u) & (PARENTS - 1);
    for (int k = 0; k < 64 && ppid > 0; k++, h = (h + 1) & (PARENTS - 1)) {
        if (pc->pid[h] == p)
            return;
        if (pc->pid[h] == 0) {
            pc->pid[h] = p;
            pc->ppid[h] = ppid;
            return;
        }
    }
}

static pid_t parent_cached(struct parents *pc, pid_t p)
{
    unsigned h = ((unsigned)p * 2654435761u) & (PARENTS - 1);
    for (int k = 0; k < 64; k++, h = (h + 1) & (PARENTS - 1)) {
        if (pc->pid[h] == p)
            return pc->ppid[h];
        if (pc->pid[h] == 0) {
            pc->pid[h] = p;
            return pc->ppid[h] = parent_of(p);
        }
    }
    return parent_of(p);
}

static int by_pid(const void *a, const void *b)
{
    pid_t x = ((const struct cand *)a)->pid, y = ((const struct cand *)b)->pid;
    return x < y ? -1 : x > y;
}

/* A matched process whose ancestor is matched too is either a fork of that rank (same job and
 * rank: a DataLoader worker, a subprocess; the ancestor is the rank) or a rank started by a
 * launcher that carries a job's variables itself (the torchrun agent under SLURM, an MPI
 * daemon; the ancestor is not a rank). A non-Python ancestor (a shell wrapper) is neither.
 * c is sorted by pid. Marks what to drop; whether a process runs Python is read only where it
 * decides: a fork of a Python rank goes whatever it runs. */
static void drop_launchers_and_forks(struct cand *c, int n, struct parents *pc)
{
    for (int i = 0; i < n; i++) {
        pid_t p = c[i].pid;
        for (int depth = 0; depth < 32 && p > 1 && c[i].drop != 2; depth++) {
            p = parent_cached(pc, p);
            struct cand key = {.pid = p};
            struct cand *a = bsearch(&key, c, (size_t)n, sizeof *c, by_pid);
            if (!a || a == &c[i] || !is_python(a))
                continue;
            if (same_rank(a->r, c[i].r))
                c[i].drop = c[i].drop ? c[i].drop : 1;
            else if (is_python(&c[i]) && !a->drop)
                a->drop = 1;
        }
    }
}

static int by_job_rank(const void *pa, const void *pb)
{
    const cJSON *a = *(const cJSON *const *)pa, *b = *(const cJSON *const *)pb;
    int c = strcmp(cli_json_str(a, "job"), cli_json_str(b, "job"));
    if (c)
        return c;
    double ra = cli_json_num(a, "rank", 0), rb = cli_json_num(b, "rank", 0);
    return ra < rb ? -1 : ra > rb;
}

cJSON *cli_cluster_find_ranks(void)
{
    cJSON *found = cJSON_CreateArray();
    char *env = malloc(ENV_MAX);
    struct parents *pc = calloc(1, sizeof *pc);
    DIR *d = opendir("/proc");
    if (!env || !d || !pc) {
        free(env);
        free(pc);
        if (d)
            closedir(d);
        return found;
    }
    struct dirent *e;
    pid_t self = getpid();
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        if (pid == self)
            continue;
        long len = pb_read_file(path, env, ENV_MAX);
        if (len <= 0)
            continue; /* gone, a kernel thread, or another user's */
        cJSON *r = describe(pid, env, len);
        if (r) {
            pid_t ppid;
            cJSON_AddNumberToObject(r, "uid", (double)uid_of(pid, &ppid));
            parent_seed(pc, pid, ppid); /* what drop_launchers_and_forks asks first */
            cJSON_AddItemToArray(found, r);
        }
    }
    closedir(d);
    free(env);
    /* Python only: the version (and whether the probe is loaded) from /proc, nothing injected. */
    int n = cJSON_GetArraySize(found);
    struct cand *c = calloc((size_t)n + 1, sizeof *c);
    cJSON *out = cJSON_CreateArray();
    if (!c) {
        free(c);
        free(pc);
        cJSON_Delete(found);
        return out;
    }
    for (int i = n - 1; i >= 0; i--) {
        c[i].r = cJSON_DetachItemFromArray(found, i);
        c[i].pid = (pid_t)cli_json_num(c[i].r, "pid", 0);
        c[i].py = -1;
    }
    cJSON_Delete(found);
    qsort(c, (size_t)n, sizeof *c, by_pid);
    drop_launchers_and_forks(c, n, pc);
    cJSON **keep = calloc((size_t)n + 1, sizeof *keep);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!c[i].drop && is_python(&c[i]) && keep) {
            cJSON_AddStringToObject(c[i].r, "python", c[i].ver);
            cJSON_AddStringToObject(c[i].r, "probe", c[i].loaded ? "loaded" : "not loaded");
            keep[k++] = c[i].r;
        } else {
            cJSON_Delete(c[i].r);
        }
    }
    if (k > 0)
        qsort(keep, (size_t)k, sizeof *keep, by_job_rank);
    for (int i = 0; i < k; i++)
        cJSON_AddItemToArray(out, keep[i]);
    free(keep);
    free(c);
    free(pc);
    mark_uids_and_duplicates(out);
    return out;
}
