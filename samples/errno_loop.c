/* SPDX-License-Identifier: MIT */
/* For samples/errno_loop.py: errno_watch() sets errno to a known value and reads it back
 * continuously until *stop is set, counting every time it reads something else (an injection
 * that leaves its own errno behind in this thread). */
#include <errno.h>

int errno_watch(volatile int *stop, int value, int *first_seen)
{
    volatile int *e = &errno; /* volatile: reread at every turn, never hoisted */
    int changes = 0;
    *e = value;
    while (!*stop) {
        int now = *e;
        if (now != value) {
            if (!changes)
                *first_seen = now;
            changes++;
            *e = value;
        }
    }
    return changes;
}
