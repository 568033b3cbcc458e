# SPDX-License-Identifier: MIT
"""Test target for fork and exec: a main thread that ticks, a worker thread, and two commands
sent by signal, acted on by the main loop (never inside the handler).

SIGUSR1: fork a child that keeps running; it prints "ok child ready {json}" once, then
"ok child tick N" lines (the parent's "tick N" lines stay its own). SIGUSR2: os.execv the same
interpreter on this file with "--execed"; the new image prints "ready {json}" with
"execed": true, then ticks as before. A child is reaped when it ends."""
import json
import os
import signal
import sys
import threading
import time
import warnings

# 3.12+ warns that fork() in a multi-threaded process may deadlock the child: this sample has a
# worker thread of its own, and its child only prints and sleeps.
warnings.filterwarnings("ignore", r"This process .* is multi-threaded", DeprecationWarning)

commands = []


def say(line):
    # One write(2) per line: parent and child share the output file, and print() may write a
    # line and its newline separately, letting the other's line in between.
    os.write(1, (line + "\n").encode())


def worker_loop():
    while True:
        time.sleep(0.05)  # BP: worker_sleep


def child_loop():
    say("ok child ready " + json.dumps({"pid": os.getpid(), "ppid": os.getppid()}))
    n = 0
    while True:
        say("ok child tick %d" % n)
        n += 1
        time.sleep(0.1)  # BP: child_sleep


def main():
    execed = "--execed" in sys.argv
    signal.signal(signal.SIGUSR1, lambda *_: commands.append("fork"))
    signal.signal(signal.SIGUSR2, lambda *_: commands.append("exec"))
    threading.Thread(target=worker_loop, name="worker", daemon=True).start()
    say("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id(),
                               "execed": execed}))
    n = 0
    while True:
        while commands:
            what = commands.pop(0)
            if what == "fork":
                if os.fork() == 0:
                    child_loop()
            else:
                os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "--execed"])
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pass
        say("tick %d" % n)
        n += 1
        time.sleep(0.1)  # BP: main_sleep


if __name__ == "__main__":
    main()
