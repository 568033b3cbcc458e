# SPDX-License-Identifier: MIT
"""Benchmark target: CPU-bound, function-call-heavy pure Python that times itself.

Usage: callheavy.py [BATCH_SECONDS [UNITS]]. At start it sizes one batch of work to about
BATCH_SECONDS (default 0.25), or takes UNITS units per batch when given (so that two processes
do the same work), keeps that size for its whole life, prints "ready {json}", then runs
batches forever, printing after each one "batch K end=T ms=M cpu=C": T is the batch's end on
the system-wide monotonic clock (time.monotonic, comparable across processes), M its length in
milliseconds, C the CPU time the whole process (every thread) used meanwhile, in milliseconds.
A benchmark thus measures any window of the process's life (before and after attaching a
debugger) without restarting it. The work: small functions and methods calling each other
(about 1,600 Python calls per unit), recursion, a closure, a generator. never_called() is
what it says: the benchmark sets a breakpoint in it (the line marked "BP: never_called").
It imports threading, as nearly every real program does (directly or through the standard
library)."""
import json
import os
import sys
import threading
import time


class Vec:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def add(self, other):
        return Vec(self.x + other.x, self.y + other.y)

    def dot(self, other):
        return self.x * other.x + self.y * other.y


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) * 2 - leaf(x - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def make_scaler(k):
    def scale(v):
        return k * v
    return scale


def evens(n):
    for i in range(n):
        if i % 2 == 0:
            yield i


def unit(seed):
    """One unit of work: about 1,600 Python-level calls (753 of them in fib(13))."""
    scale = make_scaler(3)
    acc = Vec(0, 0)
    total = 0
    for i in range(100):
        v = Vec(i, seed)
        acc = acc.add(v)
        total += middle(i) + scale(i) + acc.dot(v) % 7
    for e in evens(40):
        total += leaf(e)
    return total + fib(13)


def never_called():
    raise AssertionError("never_called() was called")  # BP: never_called


def batch(units):
    total = 0
    for s in range(units):
        total += unit(s)
    return total


def calibrate(target):
    """The number of units that takes about target seconds (the doubling runs warm up)."""
    units = 1
    while True:
        t0 = time.perf_counter()
        batch(units)
        dt = time.perf_counter() - t0
        if dt >= 0.05:
            break
        units *= 2
    return max(1, int(units * target / dt))


def main():
    target = float(sys.argv[1]) if len(sys.argv) > 1 else 0.25
    units = int(sys.argv[2]) if len(sys.argv) > 2 else calibrate(target)
    print("ready " + json.dumps({"pid": os.getpid(), "units": units,
                                 "main": threading.main_thread().native_id
                                 if hasattr(threading, "get_native_id") else None,
                                 "python": "%d.%d.%d" % sys.version_info[:3]}), flush=True)
    k = 0
    while True:
        t0, c0 = time.monotonic(), time.process_time()
        batch(units)
        t1, c1 = time.monotonic(), time.process_time()
        print("batch %d end=%.6f ms=%.3f cpu=%.3f" % (k, t1, (t1 - t0) * 1000, (c1 - c0) * 1000),
              flush=True)
        k += 1


if __name__ == "__main__":
    main()
