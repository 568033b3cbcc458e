# SPDX-License-Identifier: MIT
"""What this machine's kernel has, asked of it directly (for the tests and the benches)."""
import fcntl
import struct

PROCMAP_QUERY = 0xC0686611  # _IOWR('f', 17, struct procmap_query): include/uapi/linux/fs.h


def procmap_query():
    """Whether this kernel answers PROCMAP_QUERY (Linux 6.11+), asked of our own maps."""
    q = bytearray(struct.pack("=9Q4I2Q", 104, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    with open("/proc/self/maps", "rb") as f:
        try:
            fcntl.ioctl(f.fileno(), PROCMAP_QUERY, q)
            return True
        except OSError:
            return False
