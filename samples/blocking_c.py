# SPDX-License-Identifier: MIT
# A target whose threads wait in C system calls that a signal would cut short
# (tests/e2e/test_native_blocked.py): three threads call libc through ctypes (the GIL released),
# round after round, each call meant to last 3 s:
#   "c-sleep"  sleep(3)                    (nanosleep: EINTR, sleep() returns what was left)
#   "c-read"   read() on a pipe that another thread writes 3 s after the round starts
#   "c-epoll"  epoll_wait() on an empty epoll set with a 3000 ms timeout (EINTR on a signal)
# None retries on EINTR, as much C code does not. They start once the file named by argv[1]
# exists (so that the probe can be injected first); each round prints
# "ok KIND start=T0 end=T1 rc=RC" (CLOCK_MONOTONIC seconds, RC the call's return value).
# Prints "ready {...}" (pid, tids) at once. With "wakes" (argv[2]) a fourth thread, "c-read-wakes",
# reads a pipe that another thread writes every 20 ms: a call that returns and is made again
# (a thread that may wake while its stack is read).
import ctypes
import json
import os
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.sleep.argtypes = [ctypes.c_uint]
libc.read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
libc.read.restype = ctypes.c_ssize_t
libc.epoll_wait.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
GO = sys.argv[1]
lock = threading.Lock()
tids = {}


def report(kind, t0, rc):
    with lock:
        print("ok %s start=%.3f end=%.3f rc=%d" % (kind, t0, time.monotonic(), rc), flush=True)


def c_sleep():
    while True:
        t0 = time.monotonic()
        report("sleep", t0, libc.sleep(3))


def c_read():
    buf = ctypes.create_string_buffer(8)
    while True:
        r, w = os.pipe()
        t0 = time.monotonic()
        writer = threading.Timer(3.0, os.write, (w, b"x"))
        writer.start()
        rc = libc.read(r, buf, 1)
        report("read", t0, rc)
        writer.join()
        os.close(r)
        os.close(w)


def c_epoll():
    ep = libc.epoll_create1(0)
    ev = ctypes.create_string_buffer(64)
    while True:
        t0 = time.monotonic()
        report("epoll", t0, libc.epoll_wait(ep, ev, 4, 3000))


def run(name, fn):
    tids[name] = threading.get_native_id() if hasattr(threading, "get_native_id") else -1
    while not os.path.exists(GO):
        time.sleep(0.02)
    fn()


def c_read_wakes():
    r, w = os.pipe()

    def writer():
        while True:
            time.sleep(0.02)
            os.write(w, b"x")

    threading.Thread(target=writer, name="c-read-wakes-writer", daemon=True).start()
    buf = ctypes.create_string_buffer(8)
    while True:
        libc.read(r, buf, 1)


kinds = [("c-sleep", c_sleep), ("c-read", c_read), ("c-epoll", c_epoll)]
if sys.argv[2:3] == ["wakes"]:
    kinds.append(("c-read-wakes", c_read_wakes))
threads = [threading.Thread(target=run, args=(n, f), name=n, daemon=True) for n, f in kinds]
for t in threads:
    t.start()
while len(tids) < len(kinds):
    time.sleep(0.01)
print("ready " + json.dumps({"pid": os.getpid(), "tids": tids}), flush=True)
while True:
    time.sleep(1)
