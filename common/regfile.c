/* SPDX-License-Identifier: MIT */
/* Opening a file the user or a hostile file named (a core's NT_FILE, /proc/PID/map_files, a
 * mapping's path) for reading, when it is a regular file only: a FIFO opened for reading blocks
 * until a writer comes, and opening a device can act (a tape rewinds, a watchdog starts). The
 * path is opened with O_PATH first, which opens nothing and never blocks; only when that inode
 * is a regular file is it opened for reading, through /proc/self/fd, so that a rename between
 * the check and the open cannot substitute another file. */
#include "pb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int pb_open_regular(const char *path, struct stat *st)
{
    char self[64];
    struct stat sb;
    if (!st)
        st = &sb;
    int p = open(path, O_PATH | O_CLOEXEC);
    if (p < 0)
        return -errno;
    if (fstat(p, st) != 0) {
        int rc = -errno;
        close(p);
        return rc;
    }
    if (!S_ISREG(st->st_mode)) {
        close(p);
        return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    }
    snprintf(self, sizeof self, "/proc/self/fd/%d", p);
    int fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int rc = fd < 0 ? -errno : fd;
    close(p);
    return rc;
}
