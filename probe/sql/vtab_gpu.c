/* SPDX-License-Identifier: MIT */
/* system.gpus and system.gpu_processes (live) and their history tables system.gpu_history and
 * system.gpu_process_history, from NVML (common/nvml.c: dlopen at first use). Without an
 * NVIDIA GPU or driver the live tables are empty and the query's note says why in one line;
 * the collector stops asking after the first failure. No GIL. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nvml.h"
#include "vtab.h"

const struct probe_column vtab_gpus_cols[17] = {
    {"gpu", "INTEGER", "device index (NVML's, as nvidia-smi numbers them)"},
    {"name", "TEXT", "product name"},
    {"uuid", "TEXT", "GPU-... (the same in CUDA_VISIBLE_DEVICES and nvidia-smi -L)"},
    {"util_gpu", "INTEGER", "percent of the last sample period a kernel ran"},
    {"util_mem", "INTEGER", "percent of the last sample period device memory was read or written"},
    {"mem_used", "INTEGER", "device memory used, bytes (every process)"},
    {"mem_total", "INTEGER", "device memory, bytes"},
    {"temperature_c", "INTEGER", "GPU temperature, Celsius"},
    {"power_w", "REAL", "power draw, watts"},
    {"power_limit_w", "REAL", "enforced power limit, watts"},
    {"clock_sm_mhz", "INTEGER", "SM clock, MHz"},
    {"clock_mem_mhz", "INTEGER", "memory clock, MHz"},
    {"throttle", "TEXT",
     "clock throttle reasons, ',' between (gpu_idle, sw_power_cap, "
     "hw_slowdown, sw_thermal, hw_thermal, hw_power_brake...); '' none"},
    {"ecc_corrected", "INTEGER", "corrected ECC errors since the driver loaded (NULL: no ECC)"},
    {"ecc_uncorrected", "INTEGER", "uncorrected ECC errors since the driver loaded"},
    {"xid_count", "INTEGER",
     "critical XID events NVML reported since this process began to "
     "read GPUs"},
    {"last_xid", "INTEGER", "the last one's XID number (NULL none)"},
};
const struct probe_column vtab_gpu_procs_cols[4] = {
    {"gpu", "INTEGER", "device index (as in system.gpus)"},
    {"pid", "INTEGER", "process id as the driver sees it (the host's)"},
    {"used_memory", "INTEGER", "device memory it holds, bytes (NULL when NVML cannot tell)"},
    {"is_self", "INTEGER", "1 for this process (its pid, in this pid namespace)"},
};

static void add_opt_int(struct probe_rows *r, long long v)
{
    v < 0 ? core_rows_add_null(r) : core_rows_add_int(r, v);
}

static void add_opt_real(struct probe_rows *r, double v)
{
    v < 0 ? core_rows_add_null(r) : core_rows_add_real(r, v);
}

static struct pb_gpu gpus[PB_GPU_MAX];
static struct pb_gpu_proc procs[PB_GPU_PROC_MAX];

/* Task thread: reads into the arrays above; 0 devices and the note set when there is none. */
static int read_all(int *nprocs)
{
    struct pb_err err = {0};
    int n = pb_nvml_read(gpus, procs, nprocs, &err);
    if (n < 0) {
        pb_strlcpy(probe_vtab_note, err.msg, sizeof probe_vtab_note);
        *nprocs = 0;
        return 0;
    }
    return n;
}

static void gpu_row(struct probe_rows *r, const struct pb_gpu *g)
{
    char thr[160];
    pb_nvml_throttle_names(g->throttle, thr, sizeof thr);
    core_rows_add_int(r, g->index);
    core_rows_add_text(r, g->name);
    core_rows_add_text(r, g->uuid);
    add_opt_int(r, g->util_gpu);
    add_opt_int(r, g->util_mem);
    add_opt_int(r, g->mem_used);
    add_opt_int(r, g->mem_total);
    add_opt_int(r, g->temp_c);
    add_opt_real(r, g->power_w);
    add_opt_real(r, g->power_limit_w);
    add_opt_int(r, g->clock_sm_mhz);
    add_opt_int(r, g->clock_mem_mhz);
    g->throttle < 0 ? core_rows_add_null(r) : core_rows_add_text(r, thr);
    add_opt_int(r, g->ecc_corrected);
    add_opt_int(r, g->ecc_uncorrected);
    add_opt_int(r, g->xid_count);
    add_opt_int(r, g->last_xid);
}

int sql_vtab_gpus_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    int np, n = read_all(&np);
    for (int i = 0; !core_rows_error(r) && i < n; i++)
        gpu_row(r, &gpus[i]);
    return core_rows_error(r);
}

int sql_vtab_gpu_procs_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    int np;
    read_all(&np);
    long self = (long)getpid();
    for (int i = 0; !core_rows_error(r) && i < np; i++) {
        core_rows_add_int(r, procs[i].gpu);
        core_rows_add_int(r, procs[i].pid);
        add_opt_int(r, procs[i].used);
        core_rows_add_int(r, procs[i].pid == self);
    }
    return core_rows_error(r);
}

/* ---- the collector ---- */

static int gpu_absent;

int sql_gpu_tables_define(struct pb_err *err)
{
    int rc = sql_history_define("system.gpu_history",
                                "system.gpus sampled every "
                                "history.interval_s seconds (built-in collector; empty without "
                                "an NVIDIA GPU and driver)",
                                vtab_gpus_cols, 17, err);
    return rc < 0 ? rc
                  : sql_history_define("system.gpu_process_history",
                                       "system.gpu_processes "
                                       "sampled every history.interval_s seconds (built-in "
                                       "collector; empty without an NVIDIA GPU and driver)",
                                       vtab_gpu_procs_cols, 4, err);
}

static struct probe_value vint(long long v)
{
    return v < 0 ? (struct probe_value){.type = PROBE_V_NULL}
                 : (struct probe_value){.type = PROBE_V_INT, .i = v, .d = (double)v};
}

static struct probe_value vreal(double v)
{
    return v < 0 ? (struct probe_value){.type = PROBE_V_NULL}
                 : (struct probe_value){.type = PROBE_V_REAL, .d = v};
}

void sql_gpu_sample(void)
{
    if (gpu_absent)
        return;
    struct pb_err err = {0};
    int np = 0, n = pb_nvml_read(gpus, procs, &np, &err);
    if (n < 0) {
        gpu_absent = 1;
        PB_LOG(PB_LOG_INFO, "GPU history off: %s", err.msg);
        return;
    }
    if (sql_gpu_tables_define(&err) < 0) {
        gpu_absent = 1;
        PB_LOG(PB_LOG_WARN, "GPU history: %s", err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        const struct pb_gpu *g = &gpus[i];
        char thr[160];
        pb_nvml_throttle_names(g->throttle, thr, sizeof thr);
        struct probe_value v[17] = {
            vint(g->index),
            {.type = PROBE_V_TEXT, .s = (char *)g->name},
            {.type = PROBE_V_TEXT, .s = (char *)g->uuid},
            vint(g->util_gpu),
            vint(g->util_mem),
            vint(g->mem_used),
            vint(g->mem_total),
            vint(g->temp_c),
            vreal(g->power_w),
            vreal(g->power_limit_w),
            vint(g->clock_sm_mhz),
            vint(g->clock_mem_mhz),
            g->throttle < 0 ? (struct probe_value){.type = PROBE_V_NULL}
                            : (struct probe_value){.type = PROBE_V_TEXT, .s = thr},
            vint(g->ecc_corrected),
            vint(g->ecc_uncorrected),
            vint(g->xid_count),
            vint(g->last_xid),
        };
        sql_history_append("system.gpu_history", v, 17);
    }
    long self = (long)getpid();
    for (int i = 0; i < np; i++) {
        struct probe_value v[4] = {vint(procs[i].gpu), vint(procs[i].pid), vint(procs[i].used),
                                   vint(procs[i].pid == self)};
        sql_history_append("system.gpu_process_history", v, 4);
    }
}
