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

/* A frame of 4 KiB left uninitialised over stale return addresses (native_mix.py --big-frame:
 * the "bigframe" thread). mix_deep's 96 nested calls (through a volatile pointer: not made a
 * loop) leave return addresses into mix_deep and a chain of saved frame pointers on the stack
 * below mix_big_block; mix_big_read's buffer then lies over them while it blocks in read(2). A
 * thread blocked in a system call is read without its registers, its frame pointer unknown: the
 * unwinder must find mix_big_read's frame above its buffer, not a chain of the stale mix_deep
 * frames that also ends well (a sanitizer's interceptor of read, with its 2 KiB frame, is such
 * a function). */
int mix_deep(int n);
static int (*volatile mix_deep_again)(int) = mix_deep;
int mix_deep(int n)
{
    return n > 0 ? mix_deep_again(n - 1) + 1 : 0;
}

int mix_big_read(int fd);
int mix_big_read(int fd)
{
    char buf[4096];
    return (int)read(fd, buf, 1); /* BP: mix_big_read */
}

int mix_big_block(int fd);
int mix_big_block(int fd)
{
    mix_deep(96);
    return mix_big_read(fd); /* BP: mix_big_block */
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
