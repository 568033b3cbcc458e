/* SPDX-License-Identifier: MIT */
/* NVML by dlopen (nvml.h). The few prototypes and structs used are declared here from NVIDIA's
 * public NVML API reference (docs.nvidia.com/deploy/nvml-api); no header of NVIDIA's is needed
 * to build. The library is opened once, on the first read, and kept open once it has seen a
 * device (NVML keeps threads of its own); when it has none, or fails, it is closed again. XIDs: NVML reports them as events only, so the first read registers an
 * event set for critical XID errors on every device and each read drains it without waiting. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml.h"

typedef int nvml_ret;                 /* nvmlReturn_t: 0 success */
typedef struct nvml_dev_st *nvml_dev; /* nvmlDevice_t */
typedef struct nvml_evset_st *nvml_evset;

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_EVENT_XID_CRITICAL 0x8ULL
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

struct nvml_utilization {
    unsigned int gpu, memory;
};
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_process { /* nvmlProcessInfo_v2_t, also what the _v3 call fills */
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
struct nvml_event { /* nvmlEventData_t */
    nvml_dev device;
    unsigned long long event_type, event_data;
    unsigned int gpu_instance_id, compute_instance_id;
};

static struct {
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*handle)(unsigned int, nvml_dev *);
    nvml_ret (*name)(nvml_dev, char *, unsigned int);
    nvml_ret (*uuid)(nvml_dev, char *, unsigned int);
    nvml_ret (*utilization)(nvml_dev, struct nvml_utilization *);
    nvml_ret (*memory)(nvml_dev, struct nvml_memory *);
    nvml_ret (*temperature)(nvml_dev, int, unsigned int *);
    nvml_ret (*power)(nvml_dev, unsigned int *);
    nvml_ret (*power_limit)(nvml_dev, unsigned int *);
    nvml_ret (*clock)(nvml_dev, int, unsigned int *);
    nvml_ret (*throttle)(nvml_dev, unsigned long long *);
    nvml_ret (*ecc)(nvml_dev, int, int, unsigned long long *);
    nvml_ret (*procs)(nvml_dev, unsigned int *, struct nvml_process *);
    nvml_ret (*evset_create)(nvml_evset *);
    nvml_ret (*register_events)(nvml_dev, unsigned long long, nvml_evset);
    nvml_ret (*evset_wait)(nvml_evset, struct nvml_event *, unsigned int);
} fn;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int opened; /* 1 ready, -1 failed (why in open_err) */
static struct pb_err open_err;
static nvml_evset xid_set;
static long long xid_count[PB_GPU_MAX], last_xid[PB_GPU_MAX];
static nvml_dev devs[PB_GPU_MAX];
static int ndevs;

/* The first of the names the library has, or NULL. */
static void *sym(void *h, const char *a, const char *b)
{
    void *p = dlsym(h, a);
    return p || !b ? p : dlsym(h, b);
}

static int open_nvml(struct pb_err *err)
{
    const char *lib = getenv("PROBING_NVML_LIB");
    if ((!lib || !*lib) && access("/dev/nvidiactl", F_OK) != 0)
        return pb_err_set(err, PB_EUNKNOWN,
                          "no NVIDIA GPU or driver on this machine "
                          "(/dev/nvidiactl is absent)");
    if (!lib || !*lib)
        lib = "libnvidia-ml.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return pb_err_set(err, PB_EUNKNOWN,
                          "no NVIDIA GPU or driver: NVML could not be "
                          "loaded (%s)",
                          e ? e : lib);
    }
    *(void **)&fn.init = sym(h, "nvmlInit_v2", "nvmlInit");
    *(void **)&fn.shutdown = sym(h, "nvmlShutdown", NULL);
    *(void **)&fn.error_string = sym(h, "nvmlErrorString", NULL);
    *(void **)&fn.count = sym(h, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&fn.handle = sym(h, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&fn.name = sym(h, "nvmlDeviceGetName", NULL);
    *(void **)&fn.uuid = sym(h, "nvmlDeviceGetUUID", NULL);
    *(void **)&fn.utilization = sym(h, "nvmlDeviceGetUtilizationRates", NULL);
    *(void **)&fn.memory = sym(h, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&fn.temperature = sym(h, "nvmlDeviceGetTemperature", NULL);
    *(void **)&fn.power = sym(h, "nvmlDeviceGetPowerUsage", NULL);
    *(void **)&fn.power_limit = sym(h, "nvmlDeviceGetEnforcedPowerLimit", NULL);
    *(void **)&fn.clock = sym(h, "nvmlDeviceGetClockInfo", NULL);
    *(void **)&fn.throttle = sym(h, "nvmlDeviceGetCurrentClocksEventReasons",
                                 "nvmlDeviceGetCurrentClocksThrottleReasons");
    *(void **)&fn.ecc = sym(h, "nvmlDeviceGetTotalEccErrors", NULL);
    *(void **)&fn.procs = sym(h, "nvmlDeviceGetComputeRunningProcesses_v3",
                              "nvmlDeviceGetComputeRunningProcesses_v2");
    *(void **)&fn.evset_create = sym(h, "nvmlEventSetCreate", NULL);
    *(void **)&fn.register_events = sym(h, "nvmlDeviceRegisterEvents", NULL);
    *(void **)&fn.evset_wait = sym(h, "nvmlEventSetWait_v2", NULL);
    /* Any failure from here unloads the library again: nothing stays in a process that has
     * no GPU to read. */
    if (!fn.init || !fn.count || !fn.handle) {
        pb_err_set(err, PB_EUNKNOWN,
                   "no usable NVIDIA driver: %s lacks nvmlInit or "
                   "nvmlDeviceGetCount",
                   lib);
        dlclose(h);
        return err->code;
    }
    nvml_ret rc = fn.init();
    if (rc != NVML_SUCCESS) {
        pb_err_set(err, PB_EUNKNOWN, "no NVIDIA GPU or driver: nvmlInit failed (%s)",
                   fn.error_string ? fn.error_string(rc) : "NVML error");
        dlclose(h);
        return err->code;
    }
    unsigned int n = 0;
    if (fn.count(&n) != NVML_SUCCESS || n == 0) {
        pb_err_set(err, PB_EUNKNOWN, "no NVIDIA GPU: the driver sees no device");
        if (fn.shutdown)
            fn.shutdown();
        dlclose(h);
        return err->code;
    }
    ndevs = n > PB_GPU_MAX ? PB_GPU_MAX : (int)n;
    for (int i = 0; i < ndevs; i++) {
        if (fn.handle((unsigned int)i, &devs[i]) != NVML_SUCCESS)
            devs[i] = NULL;
        last_xid[i] = -1;
    }
    if (fn.evset_create && fn.register_events && fn.evset_wait &&
        fn.evset_create(&xid_set) == NVML_SUCCESS) {
        int any = 0;
        for (int i = 0; i < ndevs; i++)
            if (devs[i] &&
                fn.register_events(devs[i], NVML_EVENT_XID_CRITICAL, xid_set) == NVML_SUCCESS)
                any = 1;
        if (!any)
            xid_set = NULL;
    }
    return 0;
}

static void drain_xids(void)
{
    struct nvml_event ev;
    for (int k = 0; xid_set && k < 1024; k++) {
        memset(&ev, 0, sizeof ev);
        if (fn.evset_wait(xid_set, &ev, 0) != NVML_SUCCESS)
            break;
        for (int i = 0; i < ndevs; i++)
            if (devs[i] == ev.device && (ev.event_type & NVML_EVENT_XID_CRITICAL)) {
                xid_count[i]++;
                last_xid[i] = (long long)ev.event_data;
            }
    }
}

static int u(nvml_ret (*f)(nvml_dev, unsigned int *), nvml_dev d)
{
    unsigned int v = 0;
    return f && f(d, &v) == NVML_SUCCESS ? (int)v : -1;
}

static void read_device(int i, struct pb_gpu *g)
{
    nvml_dev d = devs[i];
    memset(g, 0, sizeof *g);
    g->index = i;
    if (!fn.name || fn.name(d, g->name, sizeof g->name) != NVML_SUCCESS)
        g->name[0] = '\0';
    if (!fn.uuid || fn.uuid(d, g->uuid, sizeof g->uuid) != NVML_SUCCESS)
        g->uuid[0] = '\0';
    struct nvml_utilization ut;
    int ok = fn.utilization && fn.utilization(d, &ut) == NVML_SUCCESS;
    g->util_gpu = ok ? (int)ut.gpu : -1;
    g->util_mem = ok ? (int)ut.memory : -1;
    struct nvml_memory m;
    ok = fn.memory && fn.memory(d, &m) == NVML_SUCCESS;
    g->mem_used = ok ? (long long)m.used : -1;
    g->mem_total = ok ? (long long)m.total : -1;
    unsigned int v = 0;
    g->temp_c =
        fn.temperature && fn.temperature(d, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS ? (int)v : -1;
    int mw = u(fn.power, d), lim = u(fn.power_limit, d);
    g->power_w = mw < 0 ? -1 : mw / 1000.0;
    g->power_limit_w = lim < 0 ? -1 : lim / 1000.0;
    g->clock_sm_mhz = fn.clock && fn.clock(d, NVML_CLOCK_SM, &v) == NVML_SUCCESS ? (int)v : -1;
    g->clock_mem_mhz = fn.clock && fn.clock(d, NVML_CLOCK_MEM, &v) == NVML_SUCCESS ? (int)v : -1;
    unsigned long long t = 0;
    g->throttle = fn.throttle && fn.throttle(d, &t) == NVML_SUCCESS ? (long long)t : -1;
    g->ecc_corrected =
        fn.ecc && fn.ecc(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &t) == NVML_SUCCESS
            ? (long long)t
            : -1;
    g->ecc_uncorrected = fn.ecc && fn.ecc(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                                          &t) == NVML_SUCCESS
                             ? (long long)t
                             : -1;
    g->xid_count = xid_set ? xid_count[i] : -1;
    g->last_xid = xid_set ? last_xid[i] : -1;
}

int pb_nvml_read(struct pb_gpu *gpus, struct pb_gpu_proc *procs, int *nprocs, struct pb_err *err)
{
    pthread_mutex_lock(&mu);
    if (!opened)
        opened = open_nvml(&open_err) == 0 ? 1 : -1;
    if (opened < 0) {
        pb_err_set(err, open_err.code, "%s", open_err.msg);
        pthread_mutex_unlock(&mu);
        return open_err.code;
    }
    drain_xids();
    int np = 0;
    for (int i = 0; i < ndevs; i++) {
        if (!devs[i]) {
            memset(&gpus[i], 0, sizeof gpus[i]);
            gpus[i].index = i;
            continue;
        }
        read_device(i, &gpus[i]);
        struct nvml_process ps[PB_GPU_PROC_MAX];
        unsigned int n = PB_GPU_PROC_MAX;
        if (!fn.procs || fn.procs(devs[i], &n, ps) != NVML_SUCCESS)
            continue;
        for (unsigned int k = 0; k < n && np < PB_GPU_PROC_MAX; k++, np++) {
            procs[np].gpu = i;
            procs[np].pid = (long)ps[k].pid;
            procs[np].used = ps[k].used_gpu_memory == NVML_VALUE_NOT_AVAILABLE_ULL
                                 ? -1
                                 : (long long)ps[k].used_gpu_memory;
        }
    }
    *nprocs = np;
    int n = ndevs;
    pthread_mutex_unlock(&mu);
    return n;
}

void pb_nvml_throttle_names(long long mask, char *buf, size_t n)
{
    static const struct {
        long long bit;
        const char *name;
    } reasons[] = {
        {0x1, "gpu_idle"},    {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
        {0x8, "hw_slowdown"}, {0x10, "sync_boost"},         {0x20, "sw_thermal"},
        {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},     {0x100, "display_clocks"},
    };
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; mask > 0 && i < sizeof reasons / sizeof reasons[0]; i++)
        if ((mask & reasons[i].bit) && k + strlen(reasons[i].name) + 2 < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? "," : "", reasons[i].name);
}
