/* SPDX-License-Identifier: MIT */
/* NVIDIA GPUs through NVML, loaded with dlopen at first use: no build dependency, and nothing
 * loaded into a process on a machine without an NVIDIA driver (/dev/nvidiactl absent) unless
 * PROBING_NVML_LIB names a library (the tests' stub, tests/gpu/nvml_stub.c). Used by the probe
 * (system.gpus, system.gpu_processes, the history tables) and by probing serve (/metrics).
 * Thread-safe. Figures NVML cannot give are -1. */
#ifndef PB_NVML_H
#define PB_NVML_H

#include "pb.h"

#define PB_GPU_MAX 64
#define PB_GPU_PROC_MAX 256

struct pb_gpu {
    int index;
    char name[96];
    char uuid[96];
    int util_gpu, util_mem;        /* percent over the driver's last sample period */
    long long mem_used, mem_total; /* bytes */
    int temp_c;
    double power_w, power_limit_w;
    int clock_sm_mhz, clock_mem_mhz;
    long long throttle;                       /* nvmlClocksThrottleReasons bit mask */
    long long ecc_corrected, ecc_uncorrected; /* volatile counts (since the driver loaded) */
    long long xid_count; /* critical XID events seen since this process began to watch */
    long long last_xid;  /* the last one's XID number, -1 none */
};

struct pb_gpu_proc {
    int gpu;        /* device index */
    long pid;       /* as NVML sees it (the host's pid namespace) */
    long long used; /* device memory, bytes (-1 when NVML cannot tell, e.g. in a container) */
};

/* Every device and every compute process on them: fills gpus (up to PB_GPU_MAX) and procs (up to
 * PB_GPU_PROC_MAX, *nprocs); returns the number of devices, or a negative code with err's one
 * line saying there is no NVIDIA GPU or driver (or what NVML said). */
int pb_nvml_read(struct pb_gpu *gpus, struct pb_gpu_proc *procs, int *nprocs, struct pb_err *err);

/* Names of the throttle reasons set in mask, ',' between ("" none), into buf. */
void pb_nvml_throttle_names(long long mask, char *buf, size_t n);

#endif
