/* SPDX-License-Identifier: MIT */
/* system.process and system.threads: this process and its native threads from /proc (no GIL,
 * no Python), plus the sampler of system.process_history. Times in seconds, sizes in bytes. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vtab.h"

/* Fields of a /proc stat line after the ")" that ends comm: field 3 (state) is f[0]. */
static int stat_fields(const char *buf, char *comm, size_t commn, char **f, int nf, char *copy,
                       size_t copyn)
{
    const char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (!open || !close || close < open)
        return -1;
    size_t cl = (size_t)(close - open - 1);
    if (comm) {
        if (cl >= commn)
            cl = commn - 1;
        memcpy(comm, open + 1, cl);
        comm[cl] = '\0';
    }
    pb_strlcpy(copy, close + 2 > buf + strlen(buf) ? "" : close + 2, copyn);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, " \n", &save); t && n < nf; t = strtok_r(NULL, " \n", &save))
        f[n++] = t;
    return n;
}

static const char *state_name(char s)
{
    switch (s) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk-wait";
    case 'T': return "stopped";
    case 't': return "tracing-stop";
    case 'Z': return "zombie";
    case 'X': return "dead";
    case 'I': return "idle";
    default: return "unknown";
    }
}

static long status_kb(const char *status, const char *key)
{
    const char *p = strstr(status, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the one opendir holds */
}

static double uptime_s(void)
{
    char buf[128];
    return pb_read_file("/proc/uptime", buf, sizeof buf) > 0 ? strtod(buf, NULL) : 0;
}

/* f[] indexes (0 = field 3 "state"): utime 11, stime 12, num_threads 17, starttime 19,
 * vsize 20, processor 36. */
enum {
    F_STATE = 0,
    F_UTIME = 11,
    F_STIME = 12,
    F_NTHREADS = 17,
    F_START = 19,
    F_VSIZE = 20,
    F_PROC = 36,
    F_N = 40
};

struct proc_now {
    long rss_kb, hwm_kb;
    double vms, utime, stime, start_s;
    int threads, fds;
};

static int read_proc(struct proc_now *p)
{
    char stat[1024], copy[1024], status[4096];
    char *f[F_N];
    long hz = sysconf(_SC_CLK_TCK);
    if (pb_read_file("/proc/self/stat", stat, sizeof stat) <= 0 ||
        pb_read_file("/proc/self/status", status, sizeof status) <= 0)
        return -1;
    if (stat_fields(stat, NULL, 0, f, F_N, copy, sizeof copy) <= F_VSIZE)
        return -1;
    p->utime = strtod(f[F_UTIME], NULL) / (double)hz;
    p->stime = strtod(f[F_STIME], NULL) / (double)hz;
    p->threads = atoi(f[F_NTHREADS]);
    p->start_s = strtod(f[F_START], NULL) / (double)hz;
    p->vms = strtod(f[F_VSIZE], NULL);
    p->rss_kb = status_kb(status, "VmRSS:");
    p->hwm_kb = status_kb(status, "VmHWM:");
    p->fds = count_fds();
    return 0;
}

int sql_vtab_process_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    struct proc_now p;
    if (read_proc(&p) < 0)
        return pb_err_set(err, PB_EUNKNOWN, "system.process: cannot read /proc/self");
    core_rows_add_int(r, getpid());
    core_rows_add_int(r, (long long)p.rss_kb * 1024);
    core_rows_add_int(r, (long long)p.vms);
    core_rows_add_int(r, (long long)p.hwm_kb * 1024);
    core_rows_add_real(r, p.utime);
    core_rows_add_real(r, p.stime);
    core_rows_add_int(r, p.threads);
    core_rows_add_int(r, p.fds);
    core_rows_add_real(r, uptime_s() - p.start_s);
    return core_rows_error(r);
}

int sql_vtab_process_sample(double out[6])
{
    struct proc_now p;
    if (read_proc(&p) < 0)
        return -1;
    out[0] = (double)p.rss_kb * 1024;
    out[1] = p.vms;
    out[2] = p.utime;
    out[3] = p.stime;
    out[4] = p.threads;
    out[5] = p.fds;
    return 0;
}

int sql_vtab_systhreads_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return pb_err_set(err, PB_EUNKNOWN, "system.threads: cannot read /proc/self/task");
    long hz = sysconf(_SC_CLK_TCK);
    struct dirent *e;
    int n = 0;
    while (!core_rows_error(r) && (e = readdir(d)) && n < 100000) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[64], stat[1024], copy[1024], comm[64];
        char *f[F_N];
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", atol(e->d_name));
        if (pb_read_file(path, stat, sizeof stat) <= 0 ||
            stat_fields(stat, comm, sizeof comm, f, F_N, copy, sizeof copy) <= F_PROC)
            continue; /* the thread just exited */
        core_rows_add_int(r, atol(e->d_name));
        core_rows_add_text(r, comm);
        core_rows_add_text(r, state_name(f[F_STATE][0]));
        core_rows_add_real(r, strtod(f[F_UTIME], NULL) / (double)hz);
        core_rows_add_real(r, strtod(f[F_STIME], NULL) / (double)hz);
        core_rows_add_int(r, atol(f[F_PROC]));
        n++;
    }
    closedir(d);
    return core_rows_error(r);
}

const char *sql_vtab_thread_state(long tid)
{
    char path[64], stat[1024], copy[1024];
    char *f[F_N];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    if (tid <= 0 || pb_read_file(path, stat, sizeof stat) <= 0 ||
        stat_fields(stat, NULL, 0, f, F_N, copy, sizeof copy) < 1)
        return "unknown";
    return state_name(f[F_STATE][0]);
}
