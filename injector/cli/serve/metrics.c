/* SPDX-License-Identifier: MIT */
/* `probing serve`'s /metrics (Prometheus text format 0.0.4: every process of the list, what
 * each probe says of its threads, GIL, sampler and torch steps, asked in parallel under one
 * deadline) and GET /api/gpus (NVML). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "nvml.h"

/* A Prometheus label value: backslash, quote and newline escaped (text format 0.0.4). */
static void label(FILE *f, const char *k, const char *v, int first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", k);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

/* {pid, rank, job} and up to two more labels (k1/v1, k2/v2 may be NULL). */
static void labels_with(FILE *f, const cJSON *p, const char *k1, const char *v1, const char *k2,
                        const char *v2)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)cli_json_num(p, "pid", 0));
    fputc('{', f);
    label(f, "pid", pid, 1);
    if (cli_json_str(p, "job")) {
        char rank[16];
        snprintf(rank, sizeof rank, "%d", (int)cli_json_num(p, "rank", 0));
        label(f, "rank", rank, 0);
        label(f, "job", cli_json_str(p, "job"), 0);
    }
    if (cli_json_str(p, "target"))
        label(f, "target", cli_json_str(p, "target"), 0);
    if (k1)
        label(f, k1, v1, 0);
    if (k2)
        label(f, k2, v2, 0);
    fputc('}', f);
}

static void labels(FILE *f, const cJSON *p)
{
    labels_with(f, p, NULL, NULL, NULL, NULL);
}

/* perf --torch's step times (a histogram) and per-module means, when it has run in pid:
 * p gains "torchSteps" (the row count, sum, bucket counts) and "torchModules" (rows module,
 * stage, mean seconds). */
static const double step_buckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define N_STEP_BUCKETS (sizeof step_buckets / sizeof step_buckets[0])

static void torch_metrics(struct dap_client *dc, cJSON *p)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", "status");
    int ran = dap_client_request(dc, "probing/torch", args, &body, &err) == 0 &&
              cli_json_num(body, "step", 0) > 0;
    cJSON_Delete(body);
    if (!ran)
        return;
    char sql[1024];
    size_t k = (size_t)snprintf(sql, sizeof sql, "SELECT COUNT(*), TOTAL(duration)");
    for (size_t i = 0; i < N_STEP_BUCKETS; i++)
        k += (size_t)snprintf(sql + k, sizeof sql - k, ", TOTAL(duration <= %g)", step_buckets[i]);
    snprintf(sql + k, sizeof sql - k, " FROM python.torch_steps");
    if ((body = cli_query(dc, sql, &err)) != NULL)
        cJSON_AddItemToObject(
            p, "torchSteps",
            cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(body, "rows"), 0));
    cJSON_Delete(body);
    if ((body = cli_query(dc,
                          "SELECT module, stage, AVG(duration) FROM python.torch_trace "
                          "WHERE stage IN ('forward_post', 'backward_post') GROUP BY 1, 2 "
                          "ORDER BY 1, 2",
                          &err)) != NULL)
        cJSON_AddItemToObject(p, "torchModules",
                              cJSON_DetachItemFromObjectCaseSensitive(body, "rows"));
    cJSON_Delete(body);
}

static void write_torch_metrics(FILE *f, const cJSON *procs)
{
    const cJSON *p;
    fputs("# HELP probing_torch_step_seconds Step times perf --torch saw (python.torch_steps).\n"
          "# TYPE probing_torch_step_seconds histogram\n",
          f);
    cJSON_ArrayForEach(p, procs)
    {
        const cJSON *row = cJSON_GetObjectItemCaseSensitive(p, "torchSteps");
        if (cJSON_GetArraySize(row) != (int)N_STEP_BUCKETS + 2)
            continue;
        for (size_t i = 0; i < N_STEP_BUCKETS; i++) {
            char le[32];
            snprintf(le, sizeof le, "%g", step_buckets[i]);
            fputs("probing_torch_step_seconds_bucket", f);
            labels_with(f, p, "le", le, NULL, NULL);
            fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, (int)i + 2)->valuedouble);
        }
        fputs("probing_torch_step_seconds_bucket", f);
        labels_with(f, p, "le", "+Inf", NULL, NULL);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 0)->valuedouble);
        fputs("probing_torch_step_seconds_sum", f);
        labels(f, p);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 1)->valuedouble);
        fputs("probing_torch_step_seconds_count", f);
        labels(f, p);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 0)->valuedouble);
    }
    fputs("# HELP probing_torch_module_seconds Mean time of a module's forward or backward call "
          "(perf --torch, python.torch_trace).\n"
          "# TYPE probing_torch_module_seconds gauge\n",
          f);
    cJSON_ArrayForEach(p, procs)
    {
        const cJSON *row;
        cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(p, "torchModules"))
        {
            const cJSON *mod = cJSON_GetArrayItem(row, 0), *stage = cJSON_GetArrayItem(row, 1);
            const cJSON *mean = cJSON_GetArrayItem(row, 2);
            if (!cJSON_IsString(mod) || !cJSON_IsString(stage) || !cJSON_IsNumber(mean))
                continue;
            fputs("probing_torch_module_seconds", f);
            labels_with(f, p, "module", mod->valuestring, "stage",
                        strncmp(stage->valuestring, "forward", 7) == 0 ? "forward" : "backward");
            fprintf(f, " %.17g\n", mean->valuedouble);
        }
    }
}

/* GET /api/gpus: {"gpus": [...], "processes": [...]} from NVML (common/nvml.c), or
 * {"gpus": [], "processes": [], "error": "no NVIDIA GPU or driver..."} (200 either way). */
void cli_serve_gpus(struct cli_serve_reply *r)
{
    static struct pb_gpu g[PB_GPU_MAX];
    static struct pb_gpu_proc gp[PB_GPU_PROC_MAX];
    static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    int np = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON *ga = cJSON_AddArrayToObject(o, "gpus"), *pa = cJSON_AddArrayToObject(o, "processes");
    pthread_mutex_lock(&gmu);
    int n = pb_nvml_read(g, gp, &np, &err);
    if (n < 0)
        cJSON_AddStringToObject(o, "error", err.msg);
    for (int i = 0; i < n; i++) {
        cJSON *d = cJSON_CreateObject();
        char thr[160];
        pb_nvml_throttle_names(g[i].throttle, thr, sizeof thr);
        cJSON_AddNumberToObject(d, "gpu", g[i].index);
        cJSON_AddStringToObject(d, "name", g[i].name);
        cJSON_AddStringToObject(d, "uuid", g[i].uuid);
        const struct {
            const char *k;
            double v;
        } f[] = {{"utilGpu", g[i].util_gpu},
                 {"utilMem", g[i].util_mem},
                 {"memUsed", (double)g[i].mem_used},
                 {"memTotal", (double)g[i].mem_total},
                 {"temperatureC", g[i].temp_c},
                 {"powerW", g[i].power_w},
                 {"powerLimitW", g[i].power_limit_w},
                 {"clockSmMhz", g[i].clock_sm_mhz},
                 {"clockMemMhz", g[i].clock_mem_mhz},
                 {"eccCorrected", (double)g[i].ecc_corrected},
                 {"eccUncorrected", (double)g[i].ecc_uncorrected},
                 {"xidCount", (double)g[i].xid_count},
                 {"lastXid", (double)g[i].last_xid}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            if (f[k].v < 0)
                cJSON_AddNullToObject(d, f[k].k);
            else
                cJSON_AddNumberToObject(d, f[k].k, f[k].v);
        }
        if (g[i].throttle < 0)
            cJSON_AddNullToObject(d, "throttle");
        else
            cJSON_AddStringToObject(d, "throttle", thr);
        cJSON_AddItemToArray(ga, d);
    }
    for (int i = 0; i < np; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "gpu", gp[i].gpu);
        cJSON_AddNumberToObject(d, "pid", (double)gp[i].pid);
        if (gp[i].used < 0)
            cJSON_AddNullToObject(d, "usedMemory");
        else
            cJSON_AddNumberToObject(d, "usedMemory", (double)gp[i].used);
        cJSON_AddItemToArray(pa, d);
    }
    pthread_mutex_unlock(&gmu);
    cli_serve_json(r, 200, o);
}

/* The machine's NVIDIA GPUs, read here by probing serve itself (common/nvml.c: NVML by dlopen
 * at the first scrape), and the GPU memory of each process, labelled as the process's other
 * figures when it is one of procs. Without a GPU or driver, one comment line says so. */
static void write_gpu_metrics(FILE *f, const cJSON *procs)
{
    static struct pb_gpu g[PB_GPU_MAX];
    static struct pb_gpu_proc gp[PB_GPU_PROC_MAX];
    static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    int np = 0;
    pthread_mutex_lock(&gmu);
    int n = pb_nvml_read(g, gp, &np, &err);
    if (n < 0) {
        fprintf(f, "# probing: %s\n", err.msg);
        pthread_mutex_unlock(&gmu);
        return;
    }
    static const struct {
        const char *name, *type, *help;
        int field;
    } m[] = {
        {"probing_gpu_utilization_percent", "gauge",
         "Percent of the last sample period a kernel ran on the GPU (NVML)", 0},
        {"probing_gpu_memory_utilization_percent", "gauge",
         "Percent of the last sample period device memory was read or written", 1},
        {"probing_gpu_memory_used_bytes", "gauge", "Device memory used (every process)", 2},
        {"probing_gpu_memory_total_bytes", "gauge", "Device memory", 3},
        {"probing_gpu_temperature_celsius", "gauge", "GPU temperature", 4},
        {"probing_gpu_power_watts", "gauge", "Power draw", 5},
        {"probing_gpu_power_limit_watts", "gauge", "Enforced power limit", 6},
        {"probing_gpu_sm_clock_hertz", "gauge", "SM clock", 7},
        {"probing_gpu_memory_clock_hertz", "gauge", "Memory clock", 8},
        {"probing_gpu_throttle_reasons", "gauge",
         "Clock throttle reasons, NVML's bit mask (0 none, 1 idle)", 9},
        {"probing_gpu_ecc_corrected_errors_total", "counter",
         "Corrected ECC errors since the driver loaded", 10},
        {"probing_gpu_ecc_uncorrected_errors_total", "counter",
         "Uncorrected ECC errors since the driver loaded", 11},
        {"probing_gpu_xid_errors_total", "counter",
         "Critical XID events NVML reported since probing serve began to read GPUs", 12},
    };
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        fprintf(f, "# HELP %s %s.\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
        for (int i = 0; i < n; i++) {
            const double v[] = {g[i].util_gpu,
                                g[i].util_mem,
                                (double)g[i].mem_used,
                                (double)g[i].mem_total,
                                g[i].temp_c,
                                g[i].power_w,
                                g[i].power_limit_w,
                                g[i].clock_sm_mhz < 0 ? -1 : g[i].clock_sm_mhz * 1e6,
                                g[i].clock_mem_mhz < 0 ? -1 : g[i].clock_mem_mhz * 1e6,
                                (double)g[i].throttle,
                                (double)g[i].ecc_corrected,
                                (double)g[i].ecc_uncorrected,
                                (double)g[i].xid_count};
            if (v[m[k].field] < 0)
                continue;
            char idx[16];
            snprintf(idx, sizeof idx, "%d", g[i].index);
            fprintf(f, "%s{", m[k].name);
            label(f, "gpu", idx, 1);
            label(f, "uuid", g[i].uuid, 0);
            label(f, "name", g[i].name, 0);
            fprintf(f, "} %.17g\n", v[m[k].field]);
        }
    }
    fputs("# HELP probing_gpu_process_memory_bytes Device memory a process holds on a GPU (NVML).\n"
          "# TYPE probing_gpu_process_memory_bytes gauge\n",
          f);
    for (int i = 0; i < np; i++) {
        if (gp[i].used < 0)
            continue;
        char idx[16], pid[24];
        snprintf(idx, sizeof idx, "%d", gp[i].gpu);
        snprintf(pid, sizeof pid, "%ld", gp[i].pid);
        const cJSON *p, *match = NULL;
        cJSON_ArrayForEach(p, procs)
        {
            if ((long)cli_json_num(p, "pid", 0) == gp[i].pid)
                match = p;
        }
        fputs("probing_gpu_process_memory_bytes", f);
        if (match) {
            labels_with(f, match, "gpu", idx, NULL, NULL);
        } else {
            fputc('{', f);
            label(f, "pid", pid, 1);
            label(f, "gpu", idx, 0);
            fputc('}', f);
        }
        fprintf(f, " %lld\n", gp[i].used);
    }
    pthread_mutex_unlock(&gmu);
}

/* /metrics asks the probes in parallel: a round (one per scrape) of jobs (one per probe), each
 * on a detached thread; the scrape waits until all answered or its deadline passed, and the
 * last one out of the scrape and the threads frees the round. */
#define METRICS_DEADLINE_MS 5000
struct metrics_round;
struct metrics_job {
    struct metrics_round *round;
    struct cli_serve_proc proc;
    cJSON *res; /* the figures, moved into the process's object when done in time */
    int done;
};
struct metrics_round {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC, as cli_now_ms */
    long long deadline;
    int refs, pending, n;
    struct metrics_job jobs[];
};

static void metrics_round_free(struct metrics_round *round)
{
    for (int i = 0; i < round->n; i++)
        cJSON_Delete(round->jobs[i].res);
    pthread_mutex_destroy(&round->mu);
    pthread_cond_destroy(&round->cv);
    free(round);
}

static void metrics_done(struct metrics_job *j)
{
    struct metrics_round *round = j->round;
    pthread_mutex_lock(&round->mu);
    j->done = 1;
    round->pending--;
    pthread_cond_broadcast(&round->cv);
    int last = --round->refs == 0;
    pthread_mutex_unlock(&round->mu);
    if (last)
        metrics_round_free(round);
}

/* Before each request: the time left to the round's deadline (at least 1 ms). */
static int metrics_left(const struct metrics_job *j)
{
    long long left = j->round->deadline - cli_now_ms();
    return left < 1 ? 1 : (int)left;
}

static void *metrics_ask(void *arg)
{
    struct metrics_job *j = arg;
    cJSON *p = j->res;
    struct pb_err err = {0};
    struct dap_client dc;
    /* The dump for threads and GIL (read without the GIL, no locals), perf status for the
     * sampler, torch's figures. */
    if (cli_serve_connect(&j->proc, &dc, metrics_left(j), &err) == 0) {
        cJSON *args = cJSON_CreateObject(), *body = NULL;
        cJSON_AddBoolToObject(args, "locals", 0);
        dc.timeout_ms = metrics_left(j);
        if (dap_client_request(&dc, "probing/dump", args, &body, &err) == 0) {
            const cJSON *gil = cJSON_GetObjectItemCaseSensitive(body, "gil");
            cJSON_AddNumberToObject(
                p, "pythreads",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(body, "threads")));
            cJSON_AddNumberToObject(
                p, "gil", cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(gil, "holder")));
        }
        cJSON_Delete(body);
        body = NULL;
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        dc.timeout_ms = metrics_left(j);
        if (dap_client_request(&dc, "probing/perf", args, &body, &err) == 0) {
            cJSON_AddNumberToObject(p, "running", cli_json_true(body, "running"));
            cJSON_AddNumberToObject(p, "samples", cli_json_num(body, "samples", 0));
            cJSON_AddNumberToObject(p, "missed", cli_json_num(body, "missed", 0));
            cJSON_AddNumberToObject(p, "lost", cli_json_num(body, "lost", 0));
        }
        cJSON_Delete(body);
        dc.timeout_ms = metrics_left(j);
        torch_metrics(&dc, p);
        cli_disconnect(&dc);
    }
    metrics_done(j);
    return NULL;
}

void cli_serve_metrics(struct cli_serve_reply *r)
{
    static const struct {
        const char *name, *type, *help, *key;
    } m[] = {
        {"probing_process_resident_memory_bytes", "gauge", "Resident memory (VmRSS)", "rss"},
        {"probing_process_threads", "gauge", "Threads of the process (all, native)", "threads"},
        {"probing_probe_loaded", "gauge", "1 when the probe is loaded", "probe"},
        {"probing_python_threads", "gauge", "Python threads (probe loaded)", "pythreads"},
        {"probing_gil_held", "gauge", "1 when a thread held the GIL when asked", "gil"},
        {"probing_perf_running", "gauge", "1 while perf --cc samples", "running"},
        {"probing_perf_samples_total", "counter", "Samples perf --cc kept", "samples"},
        {"probing_perf_missed_total", "counter", "Samples perf --cc missed", "missed"},
        {"probing_perf_lost_total", "counter", "Samples perf --cc could not keep", "lost"},
    };
    cJSON *procs = cli_serve_python_processes(), *p;
    int n = 0;
    cJSON_ArrayForEach(p, procs)
    {
        cJSON_ReplaceItemInObjectCaseSensitive(p, "probe",
                                               cJSON_CreateNumber(cli_json_true(p, "probe")));
        n += cli_json_num(p, "probe", 0) != 0;
    }
    /* Every probe at once, all under one deadline: a process posing as a probe that never
     * answers costs one METRICS_DEADLINE_MS per scrape, not a timeout per process. */
    struct metrics_round *round = calloc(1, sizeof *round + (size_t)n * sizeof round->jobs[0]);
    if (round) {
        pthread_mutex_init(&round->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&round->cv, &ca);
        pthread_condattr_destroy(&ca);
        round->deadline = cli_now_ms() + METRICS_DEADLINE_MS;
        round->refs = 1;
        round->n = n;
        int i = 0;
        cJSON_ArrayForEach(p, procs)
        {
            if (!cli_json_num(p, "probe", 0) || i >= n)
                continue;
            struct metrics_job *j = &round->jobs[i++];
            j->round = round;
            j->proc = cli_serve_proc_of(p);
            j->res = cJSON_CreateObject();
            pthread_t th;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            pthread_mutex_lock(&round->mu);
            round->refs++;
            round->pending++;
            pthread_mutex_unlock(&round->mu);
            if (!j->res || pthread_create(&th, &at, metrics_ask, j) != 0)
                metrics_done(j);
            pthread_attr_destroy(&at);
        }
        pthread_mutex_lock(&round->mu);
        struct timespec until = {(time_t)(round->deadline / 1000),
                                 (long)(round->deadline % 1000) * 1000000L};
        while (round->pending > 0 &&
               pthread_cond_timedwait(&round->cv, &round->mu, &until) != ETIMEDOUT)
            ;
        /* What the probes that answered in time said; the others' threads finish alone. */
        i = 0;
        cJSON_ArrayForEach(p, procs)
        {
            if (!cli_json_num(p, "probe", 0) || i >= n)
                continue;
            struct metrics_job *j = &round->jobs[i++];
            if (!j->done || !j->res)
                continue;
            cJSON *item;
            while ((item = j->res->child) != NULL) {
                cJSON_DetachItemViaPointer(j->res, item);
                cJSON_AddItemToObject(p, item->string, item);
            }
        }
        int last = --round->refs == 0;
        pthread_mutex_unlock(&round->mu);
        if (last)
            metrics_round_free(round);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        cJSON_Delete(procs);
        cli_serve_error(r, 500, "out of memory");
        return;
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        fprintf(f, "# HELP %s %s.\n# TYPE %s %s\n", m[i].name, m[i].help, m[i].name, m[i].type);
        cJSON_ArrayForEach(p, procs)
        {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, m[i].key);
            if (!cJSON_IsNumber(v) || v->valuedouble < 0)
                continue;
            fputs(m[i].name, f);
            labels(f, p);
            fprintf(f, " %.17g\n", v->valuedouble);
        }
    }
    write_torch_metrics(f, procs);
    write_gpu_metrics(f, procs);
    fclose(f);
    cJSON_Delete(procs);
    r->status = 200;
    r->type = "text/plain; version=0.0.4; charset=utf-8";
    r->body = buf;
    r->len = len;
}
