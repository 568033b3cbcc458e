/* SPDX-License-Identifier: MIT */
/* srv_fds_polled (probe/server/admit.c): the descriptor count the probe admits connections by
 * when the target has no /proc (a chroot that mounts none); before it, every connection was
 * refused there ("cannot count the open descriptors"). It agrees with /proc/self/fd. */
#include <fcntl.h>
#include <unistd.h>

#include "server/admit.h"
#include "unit.h"

TEST(admit_fds_polled_agrees_with_proc)
{
    long max = srv_fds_max();
    long limit = max < 0 || max > 65536 ? 65536 : max;
    long proc = srv_fds_open(), polled = srv_fds_polled(limit);
    ASSERT(proc > 2);
    ASSERT_EQ(polled, proc);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT(fd >= 0);
    ASSERT_EQ(srv_fds_polled(limit), polled + 1);
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(limit > 1000 ? 1000 : limit - 1));
    ASSERT(hi >= 0);
    ASSERT_EQ(srv_fds_polled(limit), polled + 2);
    close(hi);
    close(fd);
    ASSERT_EQ(srv_fds_polled(limit), proc);
}
