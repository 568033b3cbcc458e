# SPDX-License-Identifier: MIT
# The workload of bench_perf.py: a fixed amount of Python + C work (hot_c_work of
# samples/perf_hot.c through ctypes, called from Python with Python arithmetic around it),
# split over N threads (started first, parked until the work begins). Prints "ready {}" and waits for a line on stdin (the bench attaches
# the sampler meanwhile), runs, prints "elapsed SECONDS cpu SECONDS", waits for another line
# (the bench stops the sampler meanwhile) and exits.
# Usage: perf_work.py LIB.so THREADS UNITS
import ctypes
import json
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.hot_c_work.argtypes = [ctypes.c_long]
lib.hot_c_work.restype = ctypes.c_ulong
nthreads, units = int(sys.argv[2]), int(sys.argv[3])


def py_part(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) & 0xFFFFFF
    return x


def unit_of_work():
    py_part(3000)
    lib.hot_c_work(300000)


go = threading.Event()


def worker(k):
    go.wait()
    for _ in range(k):
        unit_of_work()


# Threads exist (parked) before "ready", as in a server, so the sampler has seen them.
ths = [threading.Thread(target=worker, args=(units // nthreads,)) for _ in range(nthreads)]
for t in ths:
    t.start()
print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
time.sleep(0.3)  # the sampler's thread scan (every 100 ms) arms the timers meanwhile
t0, c0 = time.perf_counter(), time.process_time()
go.set()
for t in ths:
    t.join()
print("elapsed %.6f cpu %.6f" % (time.perf_counter() - t0, time.process_time() - c0), flush=True)
sys.stdin.readline()  # the bench reads the sampler's figures meanwhile
