/* SPDX-License-Identifier: MIT */
/* For samples/read_loop.py: read_watch() blocks in read() on a pipe that another thread feeds
 * one byte at a time, and counts what an injection must never cause in the thread it hijacks:
 * a read that does not return its byte (EINTR, or a syscall "restarted" wrongly), errno changed
 * behind the loop's back, and floating-point state lost (a running sum kept in a vector
 * register). */
#include <errno.h>
#include <unistd.h>

int read_watch(volatile int *stop, int fd, int value, int *first_seen, long *reads)
{
    int bad = 0;
    double sum = 0.0, step = 0.25;
    long n = 0;
    errno = value;
    while (!*stop) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r != 1) {
            if (!bad)
                *first_seen = r < 0 ? -errno : 1000;
            bad++;
            if (r == 0)
                break;
            errno = value;
            continue;
        }
        if (errno != value) {
            if (!bad)
                *first_seen = 2000 + errno;
            bad++;
            errno = value;
        }
        n++;
        sum += step;
        if (sum != (double)n * step) {
            if (!bad)
                *first_seen = 3000;
            bad++;
            sum = (double)n * step;
        }
    }
    *reads = n;
    return bad;
}
