/* SPDX-License-Identifier: MIT */
/* DAP frame ids: (thread index << 12) | depth, where the thread index is a small number given
 * to each native thread id the first time a frame of it is shown. Ids stay below 2^31 (DAP
 * clients may hold them in 32-bit integers) even where thread ids go up to pid_max 4194304,
 * and a frame id names the same (thread, depth) for the life of the process. Any thread. */
#include <pthread.h>

#include "pb.h"

#define MAX_THREADS ((1 << 19) - 1)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long tids[MAX_THREADS];
static int ntids;

long long pb_frame_id(long tid, int depth)
{
    pthread_mutex_lock(&mu);
    int i = ntids - 1;
    while (i >= 0 && tids[i] != tid)
        i--;
    if (i < 0) {
        if (ntids == MAX_THREADS)
            ntids = 0; /* half a million threads seen: start over (old ids go stale) */
        i = ntids++;
        tids[i] = tid;
    }
    pthread_mutex_unlock(&mu);
    return ((long long)(i + 1) << 12) | (depth & 0xfff);
}

int pb_frame_id_parse(long long id, long *tid, int *depth)
{
    long long idx = (id >> 12) - 1;
    int ok = 0;
    pthread_mutex_lock(&mu);
    if (id > 0 && idx >= 0 && idx < ntids) {
        *tid = tids[idx];
        *depth = (int)(id & 0xfff);
        ok = 1;
    }
    pthread_mutex_unlock(&mu);
    return ok ? 0 : -1;
}
