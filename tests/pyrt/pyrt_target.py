# SPDX-License-Identifier: MIT
# Target code for tests/pyrt: threads parked at known lines, each marked "# BP: name" (the
# tests find the lines by scanning for the markers). Parked threads wait on GATE, a lock held
# from the start; finish() releases it and each thread passes it on to the next.
import ctypes
import sys
import threading
import time

GATE = threading.Lock()
GATE.acquire()
INFO = {}  # thread name -> (ident, native_id, daemon)
THREADS = []
N_WORKERS = 12
WORKER_DEPTH = 17


class Point:
    def __init__(self):
        self.x = 1


class MyInt(int):
    pass


def note():
    t = threading.current_thread()
    INFO[t.name] = (threading.get_ident(), threading.get_native_id(), t.daemon)


def park():
    GATE.acquire()  # BP: park
    GATE.release()


def leaf(depth):
    n = 42
    s = "hello"
    lst = [1, 2, 'x']
    d = {'k': 1}
    obj = Point()
    big = 2 ** 5000
    longs = 'x' * 1000
    nested = [[[[1]]]]
    many = tuple(range(20))
    sub = MyInt(5)
    fl = 1.5
    uni = 'h\u00e9\u4e16\U0001f600'
    note()
    GATE.acquire()  # BP: leaf
    GATE.release()


def middle():
    captured = 'cell-value'

    def inner():
        return captured
    leaf(1)  # BP: middle
    return inner


class Holder:
    def method(self):
        middle()  # BP: method


def run_locals():
    Holder().method()  # BP: run_locals


def recurse(n):
    if n == 0:
        note()
        park()  # BP: recurse_leaf
        return
    recurse(n - 1)  # BP: recurse


def run_module():
    note()
    import pyrt_modblock  # BP: run_module
    del sys.modules['pyrt_modblock']


def busy_rec(n):
    if n:
        return busy_rec(n - 1) + 1
    return sum(range(50))


def busy(addr):
    note()
    stop = ctypes.c_int.from_address(addr)
    while not stop.value:
        busy_rec(6)  # BP: busy


def hog(addr, go_addr):
    ctypes.c_long.from_address(addr).value = threading.get_native_id()
    note()
    # Wait until the test has released the GIL from C: Thread.start() in start_hog must
    # return before this thread keeps the GIL forever.
    go = ctypes.c_int.from_address(go_addr)
    while not go.value:
        time.sleep(0.001)
    libc = ctypes.PyDLL(None)  # PyDLL: the GIL stays held across the call
    libc.pause()  # BP: hog


def spawn(name, target, args=(), daemon=False):
    t = threading.Thread(target=target, args=args, name=name, daemon=daemon)
    t.start()
    THREADS.append(t)
    return t


def start(busy_addr=0):
    """Starts the parked threads (and a busy one if busy_addr is given). Returns the number of
    threads expected to be parked."""
    spawn("pyrt-locals", run_locals)
    spawn("pyrt-deep", recurse, (30,))
    spawn("pyrt-daemon", recurse, (2,), daemon=True)
    spawn("pyrt-module", run_module)
    for i in range(N_WORKERS):
        spawn("pyrt-w%d" % i, recurse, (WORKER_DEPTH,))
    if busy_addr:
        spawn("pyrt-busy", busy, (busy_addr,))
    return 4 + N_WORKERS


def start_hog(addr, go_addr):
    spawn("pyrt-hog", hog, (addr, go_addr))


def finish():
    GATE.release()
    for t in THREADS:
        t.join(10)
    return all(not t.is_alive() for t in THREADS)
