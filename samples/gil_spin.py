# SPDX-License-Identifier: MIT
"""Test target: a thread 'spinner' computes in pure Python without end, so it holds the GIL
nearly all the time (it gives it up only at the switch interval, when another thread asks). The
main thread ticks. Who holds the GIL must read as the spinner whether the probe is loaded or
not (docs/cli.md, debug --dump). Prints "ready {json}" (pid, main and spinner native ids), then
"tick N" about every 0.2 s."""
import json
import os
import threading
import time


def spin():
    x = 0
    while True:
        x = (x * 31 + 7) % 1000003  # BP: spin


def main():
    t = threading.Thread(target=spin, name="spinner", daemon=True)
    t.start()
    while t.native_id is None:
        time.sleep(0.01)
    print("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id(),
                                 "spinner": t.native_id}), flush=True)
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.2)


if __name__ == "__main__":
    main()
