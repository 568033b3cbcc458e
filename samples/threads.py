# SPDX-License-Identifier: MIT
"""Test target: a main thread that ticks and worker threads blocked at known lines.

Prints "ready {json}" once every thread is in place (names and native ids), then "tick N"
lines. The tests find lines through the "# BP: name" markers, never by number."""
import json
import os
import sys
import threading
import time

started = threading.Barrier(3)


def sleeper(seconds):
    label = "sleeping"
    count = 3
    started.wait()
    time.sleep(seconds)  # BP: sleeper_sleep
    return label, count


def reader(fd):
    payload = {"kind": "pipe", "fd": fd}
    items = [1, 2, 3]
    started.wait()
    return os.read(fd, 1), payload, items  # BP: reader_read


def tick_forever():
    n = 0
    big = 7 ** 500
    text = "x" * 5000
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.2)  # BP: main_sleep


def main():
    r, w = os.pipe()
    ts = [
        threading.Thread(target=sleeper, args=(3600,), name="sleeper-1", daemon=True),
        threading.Thread(target=reader, args=(r,), name="reader-1", daemon=True),
    ]
    for t in ts:
        t.start()
    started.wait()
    time.sleep(0.1)
    native = getattr(threading, "get_native_id", lambda: None)  # 3.8+
    info = {"pid": os.getpid(), "main": native(),
            "threads": {t.name: getattr(t, "native_id", None) for t in ts}}
    print("ready " + json.dumps(info), flush=True)
    tick_forever()


if __name__ == "__main__":
    sys.exit(main())
