/* SPDX-License-Identifier: MIT */
/* Logging to the file named by PROBING_LOG (never to stdout/stderr of the host process).
 * Each line is written with one write(2) on an O_APPEND descriptor, so concurrent writers
 * (agent thread, worker thread, CLI) do not interleave within a line. */
#include "pb.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int pb_log_level = PB_LOG_OFF;
static int log_fd = -1;
static char log_who[16] = "probing";

void pb_log_init(const char *who)
{
    const char *path = getenv("PROBING_LOG");
    const char *lvl = getenv("PROBING_LOG_LEVEL");
    if (who)
        pb_strlcpy(log_who, who, sizeof log_who);
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (log_fd >= 0)
        close(log_fd);
    log_fd = fd;
    pb_log_level = PB_LOG_INFO;
    if (lvl && *lvl) {
        static const char *names[] = {"off", "error", "warn", "info", "debug", "trace"};
        for (int i = 0; i < 6; i++)
            if (strcmp(lvl, names[i]) == 0)
                pb_log_level = i;
        if (lvl[0] >= '0' && lvl[0] <= '5' && lvl[1] == '\0')
            pb_log_level = lvl[0] - '0';
    }
}

void pb_log_write(int level, const char *file, int line, const char *fmt, ...)
{
    static const char tag[] = "-EWIDT";
    char buf[2048];
    struct timespec ts;
    if (log_fd < 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    const char *base = strrchr(file, '/');
    int n = snprintf(buf, sizeof buf, "%lld.%06ld %s[%d/%ld] %c %s:%d: ", (long long)ts.tv_sec,
                     ts.tv_nsec / 1000, log_who, (int)getpid(), (long)syscall(SYS_gettid),
                     tag[level < 0 || level > 5 ? 0 : level], base ? base + 1 : file, line);
    if (n < 0 || (size_t)n >= sizeof buf)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n +
                 ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
    buf[len++] = '\n';
    ssize_t w = write(log_fd, buf, len);
    (void)w;
}
