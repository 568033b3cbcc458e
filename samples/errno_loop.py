# SPDX-License-Identifier: MIT
# A target whose main thread (the one the injector hijacks) runs a C loop, errno_watch
# (samples/errno_loop.c, compiled here with cc, called through ctypes), that sets errno to 4242
# and checks it continuously (tests/e2e/test_faults.py: injection leaves the hijacked thread's
# errno as it was). A second thread ticks and, after SECONDS (first argument, default 8), stops
# the loop; the main thread then prints "ok errno changes N first M" and exits.
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VALUE = 4242


def build_lib():
    d = tempfile.mkdtemp(prefix="errno_loop-")
    so = os.path.join(d, "liberrno_loop.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so,
                    os.path.join(HERE, "errno_loop.c")], check=True)
    return so


lib = ctypes.CDLL(build_lib())
lib.errno_watch.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                            ctypes.POINTER(ctypes.c_int)]
lib.errno_watch.restype = ctypes.c_int
stop = ctypes.c_int(0)
first = ctypes.c_int(0)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0


def ticker():
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        print("tick %d" % i, flush=True)
        i += 1
        time.sleep(0.1)
    stop.value = 1


# "ready" before the ticker starts: print() writes text and newline apart, so two threads
# printing at once can run "tick 0" and "ready ..." into one line.
print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
threading.Thread(target=ticker, daemon=True).start()
changes = lib.errno_watch(ctypes.byref(stop), VALUE, ctypes.byref(first))  # BP: watch
print("ok errno changes %d first %d" % (changes, first.value), flush=True)
