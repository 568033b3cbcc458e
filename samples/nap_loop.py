# SPDX-License-Identifier: MIT
"""Test target for the debugger (tests/e2e/test_debug.py): the main loop alternates between
nap() and idle(), each printing a line as it starts and then sleeping 0.3 s, so a test knows
which of them runs when it sets a breakpoint. Prints "ready {json}" first. Lines by
"# BP: name" markers."""
import json
import os
import time


def nap(n):
    print("napping %d" % n, flush=True)
    time.sleep(0.3)
    done = n + 1  # BP: nap_after
    return done


def idle(n):
    print("idle %d" % n, flush=True)
    time.sleep(0.3)


def main():
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    n = 0
    while True:
        n = nap(n)
        print("tick %d" % n, flush=True)  # BP: loop_tick
        idle(n)


if __name__ == "__main__":
    main()
