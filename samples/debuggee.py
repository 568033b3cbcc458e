# SPDX-License-Identifier: MIT
"""Test target for the debugger: a main loop calling small functions, a worker thread, values of
many kinds to inspect, a caught exception every step, and an uncaught one on demand.

Prints "ready {json}" once the worker runs, then "tick N value=V" each step (V is what
compute() returned, so a test that changes a variable sees the effect). Tests find lines through
the "# BP: name" markers, never by number."""
import json
import os
import threading
import time


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1
        self.b = "two"


settings = {"mode": "fast", "level": 3, "tags": ["a", "b"]}
numbers = list(range(250))
unique = {1, 2, 3}
pair = (1, "one")
slotted = Slotted()
crash_next = False  # a test sets it (evaluate) to make the worker raise an uncaught exception
fork_next = False  # a test sets it to make the main thread fork a child that calls compute()
fork_status = None  # the child's wait status


def add(a, b):
    total = a + b  # BP: add_body
    return total  # BP: add_return


def compute(n):
    values = [n, n * 2, n * 3]  # BP: compute_first
    mapping = {"n": n, "values": values}
    s = add(n, 1)  # BP: compute_call
    point = Point(n, s)  # BP: compute_point
    result = s * 2  # BP: compute_after
    return result  # BP: compute_return


def raise_and_catch(n):
    try:
        raise ValueError("caught %d" % n)  # BP: raise_caught
    except ValueError:
        return -1


def never_called():
    return 0  # BP: never_called


def explode():
    raise RuntimeError("uncaught in worker")  # BP: raise_uncaught


def worker_loop():
    global crash_next
    beats = 0
    while True:
        if crash_next:
            crash_next = False
            explode()  # BP: worker_explode
        beats += 1
        time.sleep(0.05)  # BP: worker_sleep


def fork_child():
    global fork_status
    pid = os.fork()
    if pid == 0:
        for i in range(3):
            compute(i)
        os._exit(7)
    fork_status = os.waitpid(pid, 0)[1]


def start_worker():
    t = threading.Thread(target=worker_loop, name="worker", daemon=True)
    t.start()
    return t


def main():
    global fork_next
    worker = start_worker()
    print("ready " + json.dumps({"pid": os.getpid(), "worker": worker.native_id,
                                 "main": threading.main_thread().native_id}), flush=True)
    n = 0
    while True:
        value = compute(n)  # BP: main_call
        raise_and_catch(n)
        print("tick %d value=%d" % (n, value), flush=True)  # BP: main_print
        n += 1
        if fork_next:
            fork_next = False
            fork_child()
        if not worker.is_alive():
            worker = start_worker()
        time.sleep(0.02)  # BP: main_sleep


if __name__ == "__main__":
    main()
