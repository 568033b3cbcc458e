/* SPDX-License-Identifier: MIT */
/* The agent's loop and the probe's identity (struct probe_info): one libuv loop, run by the
 * agent thread, that every service arms its handles on (timers, asyncs) and the server serves
 * connections on. Owned here so that services reach the loop without reaching the server;
 * the composition root (entry.c) initialises it, fills the identity and starts the thread. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

static uv_loop_t loop;
static struct probe_info info;
static pthread_t agent_thread;
static int agent_running;
static void (*on_start)(void);

const struct probe_info *core_info_get(void)
{
    return &info;
}

struct probe_info *core_info_edit(void)
{
    return &info;
}

uv_loop_t *core_agent_loop(void)
{
    return &loop;
}

int core_loop_init(struct pb_err *err)
{
    info.pid = getpid();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    info.start_time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (core_uv_static_init() < 0)
        return pb_err_set(err, -ENOMEM, "cannot set up libuv's stderr stream: out of memory");
    int rc = uv_loop_init(&loop);
    if (rc < 0)
        return pb_err_set(err, rc, "uv_loop_init: %s", uv_strerror(rc));
    return 0;
}

static void *agent_main(void *arg)
{
    (void)arg;
    if (on_start)
        on_start();
    uv_run(&loop, UV_RUN_DEFAULT);
    return NULL;
}

int core_loop_start(void (*first)(void), struct pb_err *err)
{
    on_start = first;
    int rc = core_thread_start(&agent_thread, agent_main, 0);
    if (rc < 0)
        return pb_err_set(err, rc, "pthread_create: %s", strerror(-rc));
    agent_running = 1;
    return 0;
}

void core_loop_close(void)
{
    /* before the agent thread ever ran it: close callbacks run here, then the loop goes */
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

int core_on_agent_thread(void)
{
    return agent_running && pthread_equal(pthread_self(), agent_thread);
}
