/* SPDX-License-Identifier: MIT */
/* C functions for the native-frames tests (samples/native_mix.py compiles this with cc -g into
 * a temporary directory and calls it through ctypes): Python -> C -> Python, and a thread
 * blocked in C. The BP markers name the lines the merged stacks must show. */
#include <unistd.h>

typedef int (*mix_cb)(int);

int mix_call(mix_cb cb, int x);
int mix_call(mix_cb cb, int x)
{
    int r = cb(x); /* BP: mix_call_cb */
    return r + 1;
}

int mix_block(int fd);
int mix_block(int fd)
{
    char c;
    return (int)read(fd, &c, 1); /* BP: mix_block_read */
}

/* Runs forever without a system call (native_mix.py --masked-spin: a thread that blocks SIGPROF
 * while running, so it cannot answer the probe's signal). */
void mix_spin(void);
void mix_spin(void)
{
    volatile unsigned long n = 0;
    for (;;)
        n++;
}
