# SPDX-License-Identifier: MIT
# A target whose main thread (the one the injector hijacks) blocks in a C read() loop,
# read_watch (samples/read_loop.c, compiled here with cc, called through ctypes), fed one byte
# every 2 ms by a second thread, which also ticks. After SECONDS (first argument, default 8) the
# feeder stops the loop; the main thread prints "ok read anomalies N first M reads R" and exits.
# tests/e2e/test_inject_signals.py: an injection whose CLI is killed at any point leaves the
# hijacked thread's syscall, errno and FP state as they were.
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VALUE = 4343


def build_lib():
    d = tempfile.mkdtemp(prefix="read_loop-")
    so = os.path.join(d, "libread_loop.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so,
                    os.path.join(HERE, "read_loop.c")], check=True)
    return so


lib = ctypes.CDLL(build_lib())
lib.read_watch.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int,
                           ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_long)]
lib.read_watch.restype = ctypes.c_int
stop = ctypes.c_int(0)
first = ctypes.c_int(0)
reads = ctypes.c_long(0)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
r, w = os.pipe()


def feeder():
    end = time.time() + seconds
    i = 0
    last = 0.0
    while time.time() < end:
        os.write(w, b"x")
        if time.time() - last >= 0.1:
            print("tick %d" % i, flush=True)
            i += 1
            last = time.time()
        time.sleep(0.002)
    stop.value = 1
    os.write(w, b"x")


print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
threading.Thread(target=feeder, daemon=True).start()
bad = lib.read_watch(ctypes.byref(stop), r, VALUE, ctypes.byref(first), ctypes.byref(reads))
print("ok read anomalies %d first %d reads %d" % (bad, first.value, reads.value), flush=True)
