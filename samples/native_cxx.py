# SPDX-License-Identifier: MIT
# A target with threads that run no Python (debug --dump --native; tests/e2e/
# test_native_threads.py): samples/native_cxx.cpp, compiled here with g++ -g and loaded with
# ctypes.CDLL (RTLD_LOCAL: its libstdc++ is not in the process's global scope), starts
# "cxx-waiter", a pthread blocked in read(2) inside cxxs::Reducer::finalize_backward(int), and
# with --spin "cxx-spinner", computing in cxxs::Spinner::spin() forever (--plain: built with
# -DCXX_PLAIN, the library links no libstdc++ and the process has none). The Python thread
# "py-cxx" calls cxx_block, blocked in the same C++ member function. Prints "ready {...}"
# (pid, the tids), then "tick N" every 0.2 s.
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

SO = os.path.join(tempfile.mkdtemp(prefix="native_cxx-"), "libnative_cxx.so")
subprocess.run(["g++", "-g", "-O0", "-shared", "-fPIC", "-pthread", "-o", SO,
                *(["-DCXX_PLAIN"] if "--plain" in sys.argv else []),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_cxx.cpp")],
               check=True)
lib = ctypes.CDLL(SO)
lib.cxx_start.argtypes = [ctypes.c_int, ctypes.c_int]
lib.cxx_block.argtypes = [ctypes.c_int]
lib.cxx_waiter_tid.restype = ctypes.c_long
lib.cxx_spinner_tid.restype = ctypes.c_long
rfd, wfd = os.pipe()
tids = {}
placed = threading.Event()


def run_block():
    tids["py-cxx"] = threading.get_native_id()
    placed.set()
    lib.cxx_block(rfd)  # BP: cxx_block


def main():
    lib.cxx_start(rfd, int("--spin" in sys.argv))
    tids["cxx-waiter"] = lib.cxx_waiter_tid()
    if "--spin" in sys.argv:
        tids["cxx-spinner"] = lib.cxx_spinner_tid()
    threading.Thread(target=run_block, name="py-cxx", daemon=True).start()
    placed.wait()
    time.sleep(0.3)  # let each thread reach its wait
    print("ready " + json.dumps({"pid": os.getpid(), "tids": tids}), flush=True)
    n = 0
    while True:
        time.sleep(0.2)
        n += 1
        print("tick %d" % n, flush=True)


if __name__ == "__main__":
    main()
