/* SPDX-License-Identifier: MIT */
/* A stand-in for the probe library (tests/e2e/test_inject_signals.py builds it as
 * libprobing-3.X.so in a PROBING_LIBDIR of its own): its constructor, which runs inside the
 * injected dlopen, takes SLOW_CTOR_MS (default 400) milliseconds, so that a test can kill the
 * injecting CLI while the target's thread is surely inside the remote call. It creates
 * $SLOW_CTOR_MARK.start when it begins and $SLOW_CTOR_MARK.done when it ends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void mark(const char *suffix)
{
    const char *base = getenv("SLOW_CTOR_MARK");
    char path[4096];
    if (!base)
        return;
    snprintf(path, sizeof path, "%s.%s", base, suffix);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

__attribute__((constructor)) static void slow_ctor(void)
{
    const char *ms = getenv("SLOW_CTOR_MS");
    long total = ms ? atol(ms) : 400;
    struct timespec t = {total / 1000, (total % 1000) * 1000000L};
    mark("start");
    while (nanosleep(&t, &t) < 0 && errno == EINTR)
        ;
    mark("done");
}
