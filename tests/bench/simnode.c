/* SPDX-License-Identifier: MIT */
/* make bench, cluster part (bench_cluster.py): one simulated node of a large job. Usage:
 * simnode SECONDS FILE [REMOTE COMMAND...]: waits SECONDS (the remote latency: an ssh round trip
 * and the node's collect), then copies FILE (that node's `cluster stacks --local --json`
 * document) to stdout; the remote command `--exec` appends (what ssh would run there) is
 * ignored. One process per node, as an ssh client is on the node that fans out (its template
 * has nothing for a shell to do, so none is started); the shell, sleep and cat it replaces
 * were three, and their starts, not probing's work, were most of the 4,096 ranks' time on a
 * 2-core machine. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: simnode SECONDS FILE [REMOTE COMMAND...]\n");
        return 2;
    }
    double s = atof(argv[1]);
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        if (errno != EINTR) {
            fprintf(stderr, "simnode: '%s' is not a time to sleep: give seconds >= 0\n", argv[1]);
            return 2;
        }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        perror(argv[2]);
        return 1;
    }
    static char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (write(1, buf, (size_t)n) != n)
            return 1;
    return n < 0;
}
