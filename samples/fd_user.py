# SPDX-License-Identifier: MIT
"""Test target: a process that needs file descriptors. Holds HOLD descriptors (argv[1], /dev/null)
the whole time, then every tick opens 8 more files and closes them, printing
"tick N value=0" when all 8 opened, or "tick N value=-E" with the errno of the open that failed
(-24: EMFILE, the process is out of descriptors). Run it under `ulimit -n`."""
import json
import os
import sys
import time


def main():
    hold = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[1]) if len(sys.argv) > 1
                                                            else 0)]
    print("ready " + json.dumps({"pid": os.getpid(), "held": len(hold)}), flush=True)
    n = 0
    while True:
        fds, value = [], 0
        try:
            for _ in range(8):
                fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            value = -e.errno
        for fd in fds:
            os.close(fd)
        print("tick %d value=%d" % (n, value), flush=True)
        n += 1
        time.sleep(0.2)  # BP: fd_sleep


if __name__ == "__main__":
    main()
