# SPDX-License-Identifier: MIT
"""Test target for crash capture (probing inject --crash, docs/crash.md): crashes on command.

Usage: crasher.py DIR [--faulthandler]. Core dumps are off (RLIMIT_CORE 0). With
--faulthandler, faulthandler.enable() at start (its dump goes to stderr). A thread 'parked'
waits in parked_wait. Prints "ready {json}", then "tick N" every 0.2 s. The main loop reads
DIR/command (one word; acted on once):
  segv          crash_outer -> crash_inner -> ctypes.string_at(0): SIGSEGV in the main thread
  abort         crash_outer -> crash_inner -> os.abort(): SIGABRT
  thread-segv   the same SIGSEGV, in a new thread 'crashing' (crashing_thread)
  overflow      crash_outer -> recurse: qsort's comparison callback calls qsort again until
                the main thread's C stack overflows (SIGSEGV); where CPython's C recursion
                limit stops it first (3.12), prints "ok survived DEPTH" and goes on
  thread-overflow  the same in a new thread 'overflowing' with a 512 KiB stack
  fork-segv     fork; the child crashes in crash_inner (SIGSEGV), the parent waits for it and
                prints "ok child PID signal N" (N: the signal that ended it, 0 if none)
"""
import ctypes
import faulthandler
import json
import os
import resource
import sys
import threading
import time


def crash_inner(how):
    if how == "overflow":
        recurse()  # BP: overflow
        return
    if how == "abort":
        os.abort()  # BP: abort
    ctypes.string_at(0)  # BP: segv


def crash_outer(how):
    crash_inner(how)  # BP: outer


def recurse():
    """Recursion through C: libc's qsort calls back into Python, which calls qsort again."""
    libc = ctypes.CDLL(None)
    cmp_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    arr = (ctypes.c_int * 2)(1, 2)
    depth = [0]

    def cmp(a, b):
        depth[0] += 1
        libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cb)  # BP: recurse
        return 0

    cb = cmp_t(cmp)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000000)
    try:
        libc.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), cb)
    except RecursionError:
        pass
    sys.setrecursionlimit(old)
    print("ok survived %d" % depth[0], flush=True)


def overflowing_thread():
    recurse()


def parked_wait(ev):
    ev.wait()  # BP: parked


def crashing_thread():
    crash_outer("segv")  # BP: thread


def main():
    workdir = sys.argv[1]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if "--faulthandler" in sys.argv:
        faulthandler.enable()
    ev = threading.Event()
    parked = threading.Thread(target=parked_wait, args=(ev,), name="parked", daemon=True)
    parked.start()
    while parked.native_id is None:
        time.sleep(0.01)
    cmd_path = os.path.join(workdir, "command")
    print("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id(),
                                 "parked": parked.native_id}), flush=True)
    n, last = 0, ""
    while True:
        try:
            with open(cmd_path) as f:
                cmd = f.read().strip()
        except FileNotFoundError:
            cmd = ""
        if cmd and cmd != last:
            last = cmd
            if cmd in ("segv", "abort", "overflow"):
                crash_outer(cmd)
            elif cmd == "thread-overflow":
                threading.stack_size(512 * 1024)
                threading.Thread(target=overflowing_thread, name="overflowing").start()
                threading.stack_size(0)
            elif cmd == "thread-segv":
                threading.Thread(target=crashing_thread, name="crashing").start()
            elif cmd == "fork-segv":
                child = os.fork()
                if child == 0:
                    crash_outer("segv")  # BP: fork
                    os._exit(0)
                _, status = os.waitpid(child, 0)
                print("ok child %d signal %d" % (
                    child, os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0), flush=True)
        if n % 4 == 0:
            print("tick %d" % (n // 4), flush=True)
        n += 1
        time.sleep(0.05)  # BP: loop


if __name__ == "__main__":
    main()
