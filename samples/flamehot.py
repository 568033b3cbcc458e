# SPDX-License-Identifier: MIT
"""Test target for flame graphs (probing flamegraph, docs/flamegraph.md): a known CPU profile.

Usage: flamehot.py. The main thread spends about 80% of its time in native code called from
Python (native_share -> zlib.compress: deflate in libz) and about 20% in pure Python
(python_share). A thread 'spinner' runs spin_python, pure Python, at a lower duty cycle.
Prints "ready {json}" (pid, main and spinner native ids), then "tick N" about every 0.2 s."""
import json
import os
import threading
import time
import zlib

DATA = os.urandom(1 << 16) + bytes(1 << 16)


def native_share(until):
    n = 0
    while time.monotonic() < until:
        zlib.compress(DATA, 9)  # BP: native
        n += 1
    return n


def python_share(until):
    x = 0
    while time.monotonic() < until:
        for i in range(200):
            x = (x * 31 + i) % 1000003  # BP: python
    return x


def spin_python(stop):
    x = 0
    while not stop.is_set():
        t = time.monotonic() + 0.02
        while time.monotonic() < t:
            x = (x + 7) % 65521
        time.sleep(0.05)


def main():
    stop = threading.Event()
    spinner = threading.Thread(target=spin_python, args=(stop,), name="spinner", daemon=True)
    spinner.start()
    while spinner.native_id is None:
        time.sleep(0.01)
    print("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id(),
                                 "spinner": spinner.native_id}), flush=True)
    n = 0
    while True:
        t = time.monotonic()
        native_share(t + globals().get("NATIVE_SECONDS", 0.16))  # eval: NATIVE_SECONDS = 0.01
        python_share(t + 0.2)
        print("tick %d" % n, flush=True)
        n += 1


if __name__ == "__main__":
    main()
