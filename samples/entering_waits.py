# SPDX-License-Identifier: MIT
# A target whose threads keep entering waits that a signal would cut short
# (tests/e2e/test_native_blocked.py::test_threads_entering_waits_are_never_cut_short): two
# threads alternate about 1 ms of Python (holding the GIL, running their own code) with a 1 ms
# wait in C that does not retry on EINTR, through ctypes (the GIL released):
#   "enter-sleep"  nanosleep(1 ms)                 (EINTR on a signal with a handler)
#   "enter-epoll"  epoll_wait(empty set, 1 ms)     (EINTR likewise)
# so a dump finds each running about half the time, and one that signalled it would often reach
# it inside its next wait. Forty more threads ("idle-K") wait on an event for good: each is read
# where it waits, which takes the dump a while between its look at a thread and its ask.
# Each cut-short wait prints "cut KIND rc=RC errno=E" at once; every 200 rounds of a kind print
# "rounds KIND N". Prints "ready {...}" (pid, tids) once all threads run.
# argv[1] "no-perf-events": first of all, a seccomp filter as a container's default profile has
# (perf_event_open fails with EACCES; samples/perf_hot.py).
import ctypes
import json
import os
import sys
import threading
import time

if sys.argv[1:2] == ["no-perf-events"]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from perf_hot import refuse_perf_events
    refuse_perf_events()

libc = ctypes.CDLL(None, use_errno=True)
libc.epoll_wait.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
lock = threading.Lock()
tids = {}
forever = threading.Event()


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def say(line):
    with lock:
        print(line, flush=True)


def python_for_a_while():
    t = time.monotonic() + 0.001
    x = 0
    while time.monotonic() < t:
        for i in range(50):
            x += i
    return x


def loop(kind, wait):
    tids["enter-" + kind] = threading.get_native_id() if hasattr(threading, "get_native_id") else -1
    n = 0
    while True:
        python_for_a_while()
        rc = wait()
        if rc < 0:
            say("cut %s rc=%d errno=%d" % (kind, rc, ctypes.get_errno()))
        n += 1
        if n % 200 == 0:
            say("rounds %s %d" % (kind, n))


def enter_sleep():
    req = Timespec(0, 1000000)
    loop("sleep", lambda: libc.nanosleep(ctypes.byref(req), None))


def enter_epoll():
    ep = libc.epoll_create1(0)
    ev = ctypes.create_string_buffer(64)
    loop("epoll", lambda: libc.epoll_wait(ep, ev, 4, 1))


def idle(k):
    tids["idle-%d" % k] = -1
    forever.wait()


threads = [threading.Thread(target=idle, args=(k,), name="idle-%d" % k, daemon=True)
           for k in range(20)]
threads += [threading.Thread(target=enter_sleep, name="enter-sleep", daemon=True),
            threading.Thread(target=enter_epoll, name="enter-epoll", daemon=True)]
threads += [threading.Thread(target=idle, args=(k,), name="idle-%d" % k, daemon=True)
            for k in range(20, 40)]
for t in threads:
    t.start()
while len(tids) < len(threads):
    time.sleep(0.01)
print("ready " + json.dumps({"pid": os.getpid(), "tids": {k: v for k, v in tids.items()
                                                          if k.startswith("enter")}}), flush=True)
while True:
    time.sleep(1)
