# SPDX-License-Identifier: MIT
"""Test target for signal hygiene: the application's own signal handling, driven by commands.

Usage: signals.py DIR. At start: faulthandler.enable() (on stderr), and Python handlers
'before' for SIGUSR1 and SIGPROF. Prints "ready {json}", then "tick N" every 0.2 s, and
"ok got SIGNAME handler=NAME n=COUNT" whenever a handler has run (counted in the handler,
printed by the main loop: printing from a handler could re-enter the buffered writer).
Commands are lines appended to DIR/commands:
  install SIGNAME   signal.signal(SIGNAME, handler 'after'): "ok installed SIGNAME old=NAME"
  itimer            ITIMER_PROF every 5 ms while the main thread burns CPU, until 5 SIGPROF
                    (or 10 s): "ok itimer n=COUNT"
  receiver          blocks SIGUSR2 in the main thread, starts a thread 'receiver' that unblocks
                    it, registers faulthandler for SIGUSR2 (all threads, to DIR/dumps): the dump
                    marks the thread the signal was delivered to as "Current thread"
  segv              ctypes.string_at(0): faulthandler's dump on stderr, then death by SIGSEGV
"""
import ctypes
import faulthandler
import json
import os
import signal
import sys
import threading
import time

counts = {}


def make_handler(name):
    def handler(signum, frame):
        key = (signal.Signals(signum).name, name)
        counts[key] = counts.get(key, 0) + 1
    handler.__name__ = name
    return handler


before = make_handler("before")
after = make_handler("after")


def handler_name(h):
    if h is signal.SIG_DFL:
        return "SIG_DFL"
    if h is signal.SIG_IGN:
        return "SIG_IGN"
    return getattr(h, "__name__", repr(h))


def do_itimer():
    key = ("SIGPROF", "before")
    start = counts.get(key, 0)
    signal.setitimer(signal.ITIMER_PROF, 0.005, 0.005)
    deadline = time.time() + 10
    x = 0
    while counts.get(key, 0) - start < 5 and time.time() < deadline:
        x += 1
    signal.setitimer(signal.ITIMER_PROF, 0)
    print("ok itimer n=%d" % (counts.get(key, 0) - start), flush=True)


def receiver_main(ready):
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR2})
    ready.set()
    while True:
        time.sleep(3600)  # BP: receiver_sleep


def do_receiver(workdir):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    ready = threading.Event()
    t = threading.Thread(target=receiver_main, args=(ready,), name="receiver", daemon=True)
    t.start()
    ready.wait(10)
    dumps = open(os.path.join(workdir, "dumps"), "w")
    faulthandler.register(signal.SIGUSR2, file=dumps, all_threads=True)
    print("ok receiver ident=0x%016x main=0x%016x" % (t.ident, threading.main_thread().ident),
          flush=True)
    return dumps


def do_segv():
    ctypes.string_at(0)  # BP: segv


def main():
    workdir = sys.argv[1]
    faulthandler.enable()
    signal.signal(signal.SIGUSR1, before)
    signal.signal(signal.SIGPROF, before)
    cmd_path = os.path.join(workdir, "commands")
    open(cmd_path, "a").close()
    print("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id()}),
          flush=True)
    done, n, shown, keep = 0, 0, {}, []
    while True:
        with open(cmd_path) as f:
            lines = f.read().split("\n")[:-1]  # complete lines only
        for line in lines[done:]:
            cmd, _, arg = line.partition(" ")
            if cmd == "install":
                old = signal.signal(getattr(signal, arg), after)
                print("ok installed %s old=%s" % (arg, handler_name(old)), flush=True)
            elif cmd == "itimer":
                do_itimer()
            elif cmd == "receiver":
                keep.append(do_receiver(workdir))
            elif cmd == "segv":
                do_segv()
        done = len(lines)
        for key, c in sorted(counts.items()):
            if shown.get(key) != c:
                shown[key] = c
                print("ok got %s handler=%s n=%d" % (key[0], key[1], c), flush=True)
        if n % 4 == 0:
            print("tick %d" % (n // 4), flush=True)
        n += 1
        time.sleep(0.05)  # BP: loop_sleep


if __name__ == "__main__":
    main()
