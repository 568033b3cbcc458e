/* SPDX-License-Identifier: MIT */
/* A known C function for perf --cc's tests and benchmark (samples/perf_hot.py compiles it with
 * cc -O1 -fno-omit-frame-pointer -shared into a temporary directory and calls it through
 * ctypes): hot_c_spin burns CPU for about `usec` microseconds of thread CPU time. */
#include <time.h>

volatile unsigned long perf_hot_sink;

long long hot_c_spin(long usec);
long long hot_c_spin(long usec)
{
    struct timespec t0, t;
    unsigned long x = perf_hot_sink + 1;
    long long n = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 6364136223846793005UL + 1442695040888963407UL;
        n++;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < usec);
    perf_hot_sink = x;
    return n;
}

/* A fixed amount of work (the benchmark's unit): n rounds of the generator. */
unsigned long hot_c_work(long n);
unsigned long hot_c_work(long n)
{
    unsigned long x = perf_hot_sink + 1;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    perf_hot_sink = x;
    return x;
}
