# SPDX-License-Identifier: MIT
"""Benchmark target: N threads (default 16, argv[1]) each blocked a few frames deep, plus a
ticking main thread."""
import json
import os
import sys
import threading
import time


def level(depth, ev):
    if depth == 0:
        ev.wait()  # BP: deep_wait
        return 0
    return level(depth - 1, ev) + 1


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    ev = threading.Event()
    for i in range(n - 1):
        threading.Thread(target=level, args=(8, ev), name="worker-%d" % i, daemon=True).start()
    time.sleep(0.2)
    print("ready " + json.dumps({"pid": os.getpid(), "threads": threading.active_count()}),
          flush=True)
    k = 0
    while True:
        print("tick %d" % k, flush=True)
        k += 1
        time.sleep(0.2)


if __name__ == "__main__":
    main()
