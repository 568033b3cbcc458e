# SPDX-License-Identifier: MIT
"""Test target for the switch interval the probe lowers while it waits for the GIL
(tests/e2e/test_gil_hurry.py). Usage: switch_watch.py [--interval S] [--set-when-lowered S] [--fork-when-lowered].
It sets its own switch interval (--interval), then a thread computes in Python for ever, holding
the GIL but for switches: it reads sys.getswitchinterval() in a tight loop and counts in
`seen` each value other than the program's own (a Python thread runs only while it holds the
GIL, so it sees only what is set while it computes). With --set-when-lowered it sets that value
itself on seeing another one, as a program changing its setting during the probe's wait would.
With --fork-when-lowered it forks on seeing another one (at most 5 times): the child prints
"ok child interval=V" and exits; the parent, once the child ended, appends to `forks` the value it
read after the fork.
The main thread sleeps; at SIGUSR1 it prints "ok holding" and enters a C function that keeps
the GIL (ctypes.PyDLL: pause()) until SIGUSR2, then prints "ok released interval=V"."""
import ctypes
import json
import os
import signal
import sys
import threading
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork() in a threaded process

seen = {}  # switch interval (s) -> times the computing thread read it
own = []   # the program's own setting (the last one it made)
forks = []  # with --fork-when-lowered: the parent's switch interval right after each fork


def arg(name):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else None


def fork():
    pid = os.fork()
    if pid == 0:
        print("ok child interval=%r" % sys.getswitchinterval(), flush=True)
        os._exit(0)
    after = sys.getswitchinterval()
    os.waitpid(pid, 0)
    forks.append(after)


def compute(set_to):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGUSR2})
    with_fork = "--fork-when-lowered" in sys.argv
    while True:
        v = sys.getswitchinterval()
        if v != own[-1]:
            if with_fork and len(forks) < 5:
                fork()
            seen[v] = seen.get(v, 0) + 1
            if set_to is not None:
                sys.setswitchinterval(set_to)
                own.append(sys.getswitchinterval())


def main():
    if arg("--interval") is not None:
        sys.setswitchinterval(arg("--interval"))
    hold = []
    signal.signal(signal.SIGUSR1, lambda *_: hold.append(1))
    signal.signal(signal.SIGUSR2, lambda *_: None)
    own.append(sys.getswitchinterval())
    # Ready first: a fork must not find that line half written in sys.stdout's buffer.
    print("ready %s" % json.dumps({"pid": os.getpid(), "interval": own[0]}), flush=True)
    threading.Thread(target=compute, args=(arg("--set-when-lowered"),), name="computing",
                     daemon=True).start()
    libc = ctypes.PyDLL(None)
    while True:
        time.sleep(0.01)
        if hold:
            hold.clear()
            print("ok holding", flush=True)
            libc.pause()  # returns once SIGUSR2's (C-level) handler ran; the GIL kept meanwhile
            print("ok released interval=%r" % sys.getswitchinterval(), flush=True)


if __name__ == "__main__":
    main()
