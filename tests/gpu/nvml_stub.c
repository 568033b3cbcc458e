/* SPDX-License-Identifier: MIT */
/* A stand-in for libnvidia-ml.so.1 for the tests (tests/e2e/test_gpu.py): the NVML calls
 * common/nvml.c makes, answering with two fixed fake GPUs. Built by the Makefile as
 * build/<variant>/tests/libnvml-stub.so; a target or probing serve started with
 * PROBING_NVML_LIB=<that path> reads it instead of a driver. Written from NVML's public API
 * reference: only the calls, argument types and return codes it documents.
 *   GPU 0 "NVIDIA Stub H100 80GB": busy (87 % / 40 %), 40 GiB of 80 used, 61 C, 312.5 W of
 *         700 W, SM 1980 MHz, memory 2619 MHz, no throttling, 3 corrected ECC errors;
 *   GPU 1 "NVIDIA Stub H100 80GB": idle (throttle gpu_idle), no ECC (not supported), one
 *         critical XID 79 event.
 * Processes: the calling process on GPU 0 with 1 GiB, and pid 1 on GPU 1 with its memory not
 * available (as in a container); NVML_STUB_PID=N puts pid N on GPU 0 instead of the caller
 * (probing serve's test: the target's GPU memory). NVML_STUB_FAIL_INIT=1 makes nvmlInit fail
 * (no driver). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#define OK 0
#define ERR_INVALID_ARGUMENT 2
#define ERR_NOT_SUPPORTED 3
#define ERR_INSUFFICIENT_SIZE 7
#define ERR_DRIVER_NOT_LOADED 9
#define ERR_TIMEOUT 10

struct nvml_dev_st {
    int index;
};
struct nvml_evset_st {
    int delivered;
};
struct utilization {
    unsigned int gpu, memory;
};
struct memory {
    unsigned long long total, free, used;
};
struct process {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
};
struct event {
    struct nvml_dev_st *device;
    unsigned long long type, data;
    unsigned int gi, ci;
};

static struct nvml_dev_st devs[2] = {{0}, {1}};
static struct nvml_evset_st evset;
static int registered;

#define GIB (1024ULL * 1024 * 1024)

static int bad(const struct nvml_dev_st *d)
{
    return d != &devs[0] && d != &devs[1];
}

EXPORT int nvmlInit_v2(void);
EXPORT int nvmlInit_v2(void)
{
    const char *f = getenv("NVML_STUB_FAIL_INIT");
    return f && *f == '1' ? ERR_DRIVER_NOT_LOADED : OK;
}

EXPORT int nvmlShutdown(void);
EXPORT int nvmlShutdown(void)
{
    return OK;
}

EXPORT const char *nvmlErrorString(int rc);
EXPORT const char *nvmlErrorString(int rc)
{
    return rc == ERR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

EXPORT int nvmlDeviceGetCount_v2(unsigned int *n);
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = 2;
    return OK;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct nvml_dev_st **d);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct nvml_dev_st **d)
{
    if (i > 1)
        return ERR_INVALID_ARGUMENT;
    *d = &devs[i];
    return OK;
}

static int copy(char *buf, unsigned int n, const char *s)
{
    if (strlen(s) + 1 > n)
        return ERR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return OK;
}

EXPORT int nvmlDeviceGetName(struct nvml_dev_st *d, char *buf, unsigned int n);
EXPORT int nvmlDeviceGetName(struct nvml_dev_st *d, char *buf, unsigned int n)
{
    return bad(d) ? ERR_INVALID_ARGUMENT : copy(buf, n, "NVIDIA Stub H100 80GB");
}

EXPORT int nvmlDeviceGetUUID(struct nvml_dev_st *d, char *buf, unsigned int n);
EXPORT int nvmlDeviceGetUUID(struct nvml_dev_st *d, char *buf, unsigned int n)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    return copy(buf, n,
                d->index ? "GPU-00000000-0000-0000-0000-000000000001"
                         : "GPU-00000000-0000-0000-0000-000000000000");
}

EXPORT int nvmlDeviceGetUtilizationRates(struct nvml_dev_st *d, struct utilization *u);
EXPORT int nvmlDeviceGetUtilizationRates(struct nvml_dev_st *d, struct utilization *u)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    u->gpu = d->index ? 0 : 87;
    u->memory = d->index ? 0 : 40;
    return OK;
}

EXPORT int nvmlDeviceGetMemoryInfo(struct nvml_dev_st *d, struct memory *m);
EXPORT int nvmlDeviceGetMemoryInfo(struct nvml_dev_st *d, struct memory *m)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    m->total = 80 * GIB;
    m->used = d->index ? GIB / 2 : 40 * GIB;
    m->free = m->total - m->used;
    return OK;
}

EXPORT int nvmlDeviceGetTemperature(struct nvml_dev_st *d, int sensor, unsigned int *t);
EXPORT int nvmlDeviceGetTemperature(struct nvml_dev_st *d, int sensor, unsigned int *t)
{
    if (bad(d) || sensor != 0)
        return ERR_INVALID_ARGUMENT;
    *t = d->index ? 34 : 61;
    return OK;
}

EXPORT int nvmlDeviceGetPowerUsage(struct nvml_dev_st *d, unsigned int *mw);
EXPORT int nvmlDeviceGetPowerUsage(struct nvml_dev_st *d, unsigned int *mw)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    *mw = d->index ? 71000 : 312500;
    return OK;
}

EXPORT int nvmlDeviceGetEnforcedPowerLimit(struct nvml_dev_st *d, unsigned int *mw);
EXPORT int nvmlDeviceGetEnforcedPowerLimit(struct nvml_dev_st *d, unsigned int *mw)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    *mw = 700000;
    return OK;
}

EXPORT int nvmlDeviceGetClockInfo(struct nvml_dev_st *d, int type, unsigned int *mhz);
EXPORT int nvmlDeviceGetClockInfo(struct nvml_dev_st *d, int type, unsigned int *mhz)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    if (type == 1) /* SM */
        *mhz = d->index ? 345 : 1980;
    else if (type == 2) /* memory */
        *mhz = 2619;
    else
        return ERR_NOT_SUPPORTED;
    return OK;
}

EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(struct nvml_dev_st *d,
                                                     unsigned long long *mask);
EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(struct nvml_dev_st *d,
                                                     unsigned long long *mask)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    *mask = d->index ? 0x1 : 0;
    return OK;
}

EXPORT int nvmlDeviceGetTotalEccErrors(struct nvml_dev_st *d, int type, int counter,
                                       unsigned long long *n);
EXPORT int nvmlDeviceGetTotalEccErrors(struct nvml_dev_st *d, int type, int counter,
                                       unsigned long long *n)
{
    (void)counter;
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    if (d->index)
        return ERR_NOT_SUPPORTED;
    *n = type == 0 ? 3 : 0;
    return OK;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(struct nvml_dev_st *d, unsigned int *n,
                                                   struct process *p);
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(struct nvml_dev_st *d, unsigned int *n,
                                                   struct process *p)
{
    if (bad(d))
        return ERR_INVALID_ARGUMENT;
    if (*n < 1) {
        *n = 1;
        return ERR_INSUFFICIENT_SIZE;
    }
    *n = 1;
    memset(p, 0, sizeof *p);
    const char *pid = getenv("NVML_STUB_PID");
    p->pid = d->index ? 1 : pid && *pid ? (unsigned int)atoi(pid) : (unsigned int)getpid();
    p->used = d->index ? ~0ULL : GIB;
    return OK;
}

EXPORT int nvmlEventSetCreate(struct nvml_evset_st **s);
EXPORT int nvmlEventSetCreate(struct nvml_evset_st **s)
{
    *s = &evset;
    return OK;
}

EXPORT int nvmlDeviceRegisterEvents(struct nvml_dev_st *d, unsigned long long types,
                                    struct nvml_evset_st *s);
EXPORT int nvmlDeviceRegisterEvents(struct nvml_dev_st *d, unsigned long long types,
                                    struct nvml_evset_st *s)
{
    if (bad(d) || s != &evset || !(types & 0x8))
        return ERR_INVALID_ARGUMENT;
    registered |= 1 << d->index;
    return OK;
}

EXPORT int nvmlEventSetWait_v2(struct nvml_evset_st *s, struct event *e, unsigned int ms);
EXPORT int nvmlEventSetWait_v2(struct nvml_evset_st *s, struct event *e, unsigned int ms)
{
    (void)ms;
    if (s != &evset)
        return ERR_INVALID_ARGUMENT;
    if (s->delivered || !(registered & 2))
        return ERR_TIMEOUT;
    s->delivered = 1;
    memset(e, 0, sizeof *e);
    e->device = &devs[1];
    e->type = 0x8;
    e->data = 79;
    return OK;
}
