# SPDX-License-Identifier: MIT
# A target for native frames (debug --dump --native; tests/e2e/test_native.py): Python calls C
# which calls back into Python, in three threads that then stay where they are:
#   "qsorter"  libc's qsort (ctypes) with a Python comparator that waits on an Event inside
#              the sort (Python -> C qsort -> Python cmp -> a lock);
#   "caller"   mix_call (samples/native_mix.c, compiled here with cc -g) calling back into
#              Python, which sleeps in time.sleep (Python -> C -> Python -> C sleep);
#   "blocker"  mix_block, blocked in read(2) inside C;
#   "masked"   blocks SIGPROF, then waits on an Event (blocked in a system call: its native
#              stack is read without a signal all the same).
# With --thread-cycle a thread "looped", started last (the head of the interpreter's thread
# list), points its own thread state's next at itself (a corrupted thread list: the probe reads
# it as this thread 4096 times) and runs mix_spin forever (tests/e2e/test_native.py).
# With --free-spin a thread "freespin" runs mix_spin with SIGPROF open (a test stops it with
# ptrace, so it cannot answer the dump's signal).
# With --masked-spin a thread "spinner" blocks SIGPROF, then runs mix_spin (C, the GIL released,
# no system call) forever: its native stack cannot be asked for (tests/e2e/test_native.py).
# With --sort-loop a fifth thread, "sorter", sorts again and again with libc's qsort and a Python
# comparator that runs to the end (a breakpoint in it stops the thread inside the inner Python;
# tests/e2e/test_debug_native.py). With --hold-gil the main thread then enters mix_block
# through ctypes.PyDLL, holding the GIL forever. Prints "ready {...}" (pid, tids) once every thread is in place, then "tick N" every
# 0.2 s.
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

# With DWARF (-g), so that file:line of mix_call and mix_block can be shown.
SO = os.path.join(tempfile.mkdtemp(prefix="native_mix-"), "libnative_mix.so")
subprocess.run(["cc", "-g", "-O0", "-shared", "-fPIC", "-o", SO,
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_mix.c")],
               check=True)
CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
lib = ctypes.CDLL(SO)
lib.mix_call.argtypes = [CB, ctypes.c_int]
lib.mix_block.argtypes = [ctypes.c_int]
lib.mix_big_block.argtypes = [ctypes.c_int]
libc = ctypes.CDLL(None)
tids = {}
placed = threading.Semaphore(0)
forever = threading.Event()
rfd, wfd = os.pipe()


def py_cmp(a, b):
    if "qsorter" not in tids:
        tids["qsorter"] = threading.get_native_id()
        placed.release()
        forever.wait()  # BP: cmp_wait
    return a[0] - b[0]


def run_qsort():
    arr = (ctypes.c_int * 8)(5, 3, 7, 1, 8, 2, 6, 4)
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMP(py_cmp))  # BP: qsort_call


def py_callback(x):
    tids["caller"] = threading.get_native_id()
    placed.release()
    time.sleep(3600)  # BP: callback_sleep
    return x


def run_call():
    lib.mix_call(CB(py_callback), 1)  # BP: mix_call


def run_block():
    tids["blocker"] = threading.get_native_id()
    placed.release()
    lib.mix_block(rfd)  # BP: block_call


def run_big_frame():
    tids["bigframe"] = threading.get_native_id()
    placed.release()
    lib.mix_big_block(rfd)  # BP: big_block_call


def run_masked():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
    tids["masked"] = threading.get_native_id()
    placed.release()
    forever.wait()  # BP: masked_wait


def run_spin():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
    tids["spinner"] = threading.get_native_id()
    placed.release()
    lib.mix_spin()  # BP: spin_call


def run_free_spin():
    tids["freespin"] = threading.get_native_id()
    placed.release()
    lib.mix_spin()


def run_looped():
    ts = ctypes.pythonapi.PyThreadState_Get
    ts.restype = ctypes.c_void_p
    me = ts()
    # struct _ts starts with prev, next on every CPython 3.8-3.15.
    ctypes.c_void_p.from_address(me + ctypes.sizeof(ctypes.c_void_p)).value = me
    tids["looped"] = threading.get_native_id()
    placed.release()
    lib.mix_spin()


def sort_cmp(a, b):
    return a[0] - b[0]  # BP: sort_cmp


def run_sort_loop():
    tids["sorter"] = threading.get_native_id()
    placed.release()
    arr = (ctypes.c_int * 8)()
    cmp = CMP(sort_cmp)
    while True:
        arr[:] = [5, 3, 7, 1, 8, 2, 6, 4]
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), cmp)  # BP: sort_call
        time.sleep(0.01)


def main():
    threads = [("qsorter", run_qsort), ("caller", run_call), ("blocker", run_block),
               ("masked", run_masked)]
    if "--sort-loop" in sys.argv:
        threads.append(("sorter", run_sort_loop))
    if "--masked-spin" in sys.argv:
        threads.append(("spinner", run_spin))
    if "--free-spin" in sys.argv:
        threads.append(("freespin", run_free_spin))
    if "--thread-cycle" in sys.argv:
        threads.append(("looped", run_looped))
    if "--big-frame" in sys.argv:
        threads.append(("bigframe", run_big_frame))
    for name, fn in threads:
        threading.Thread(target=fn, name=name, daemon=True).start()
    for _ in threads:
        placed.acquire()
    time.sleep(0.2)  # let each thread reach its wait
    ready = {"pid": os.getpid(), "tids": tids}
    if "--hold-gil" in sys.argv:
        print("ready " + json.dumps(ready), flush=True)
        ctypes.PyDLL(SO).mix_block(rfd)  # BP: hold_gil
    print("ready " + json.dumps(ready), flush=True)
    n = 0
    while True:
        time.sleep(0.2)  # BP: main_sleep
        n += 1
        print("tick %d" % n, flush=True)


if __name__ == "__main__":
    main()
