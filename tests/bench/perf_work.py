# SPDX-License-Identifier: MIT
# The workload of bench_perf.py: a fixed amount of Python + C work (hot_c_work of
# samples/perf_hot.c through ctypes, called from Python with Python arithmetic around it),
# split over N threads (started first, parked until the work begins). Prints "ready {}" and
# waits for a line on stdin (the bench attaches the sampler meanwhile), runs, prints "elapsed
# SECONDS cpu SECONDS switches N" (the process's context switches meanwhile), waits for another
# line (the bench stops the sampler meanwhile) and exits.
# With PERF_FLOOR_LIB (tests/bench/perf_floor.c built) and PERF_FLOOR_NS in the environment,
# each worker first opens the perf event the sampler would give it, at that period, sending
# SIGPROF to a handler that only counts when PERF_FLOOR_SIGNAL=1: the kernel's part without the
# probe (the line then ends with "signals N").
# Usage: perf_work.py LIB.so THREADS UNITS
import ctypes
import json
import os
import resource
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.hot_c_work.argtypes = [ctypes.c_long]
lib.hot_c_work.restype = ctypes.c_ulong
nthreads, units = int(sys.argv[2]), int(sys.argv[3])
floor_ns = int(os.environ.get("PERF_FLOOR_NS", "0"))
floor = None
if floor_ns > 0:
    floor = ctypes.CDLL(os.environ["PERF_FLOOR_LIB"])
    floor.floor_arm.argtypes = [ctypes.c_long, ctypes.c_int]
    floor.floor_count.restype = ctypes.c_long
    if floor.floor_setup() != 0:
        sys.exit("perf_work: sigaction(SIGPROF) failed")
floor_signal = int(os.environ.get("PERF_FLOOR_SIGNAL", "0"))
floor_errors = []
armed = threading.Semaphore(0)


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
    if floor is not None:
        rc = floor.floor_arm(floor_ns, floor_signal)
        if rc != 0:
            floor_errors.append(os.strerror(-rc))
        armed.release()
    go.wait()
    for _ in range(k):
        unit_of_work()


# Threads exist (parked) before "ready", as in a server, so the sampler has seen them.
ths = [threading.Thread(target=worker, args=(units // nthreads,)) for _ in range(nthreads)]
for t in ths:
    t.start()
if floor is not None:
    for _ in ths:
        armed.acquire()
    if floor_errors:
        sys.exit("perf_work: perf_event_open: " + floor_errors[0])
print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
time.sleep(0.3)  # the sampler's thread scan (every 100 ms) arms the timers meanwhile
ru = resource.getrusage(resource.RUSAGE_SELF)
switches0 = ru.ru_nvcsw + ru.ru_nivcsw
t0, c0 = time.perf_counter(), time.process_time()
go.set()
for t in ths:
    t.join()
elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
ru = resource.getrusage(resource.RUSAGE_SELF)
print("elapsed %.6f cpu %.6f switches %d%s" % (
    elapsed, cpu, ru.ru_nvcsw + ru.ru_nivcsw - switches0,
    " signals %d" % floor.floor_count() if floor else ""), flush=True)
sys.stdin.readline()  # the bench reads the sampler's figures meanwhile
