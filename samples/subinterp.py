# SPDX-License-Identifier: MIT
"""Test target: the main interpreter's threads (a main thread that ticks, a sleeper) plus a
thread running code in a subinterpreter (3.12's _xxsubinterpreters, 3.13's _interpreters, 3.14+'s
concurrent.interpreters): its call blocks while `sub_worker`, a function of the
subinterpreter's, sleeps there. Prints "ready {json}" once the subinterpreter's code runs
(native ids, the subinterpreter's id), then "tick N" lines. With "busy" sub_worker computes; with
"busy churn" the main thread also starts and joins short threads between ticks (thread states
made and freed while a sampler reads the lists)."""
import json
import os
import sys
import threading
import time

# Runs in the subinterpreter: it says it is in place through a pipe (no shared object).
# With "busy" (argv[1]) it computes instead of sleeping (its own GIL: the main thread ticks on).
SUB_CODE = """
import os, time
def sub_worker(fd, busy):
    os.write(fd, b"x")
    while True:
        time.sleep(0.05) if not busy else sum(range(1000))
sub_worker(%d, %r)
"""


def run_in_subinterpreter(code, box):
    try:
        from concurrent import interpreters  # 3.14+
        interp = interpreters.create()
        box["interp"] = interp.id
        interp.exec(code)
        return
    except ImportError:
        pass
    try:
        import _interpreters as low  # 3.13
    except ImportError:
        import _xxsubinterpreters as low  # 3.12
    iid = low.create()
    box["interp"] = int(iid)
    (getattr(low, "exec", None) or low.run_string)(iid, code)


def sleeper():
    time.sleep(3600)


def main():
    r, w = os.pipe()
    box = {}
    busy = sys.argv[1:2] == ["busy"]
    churn = "churn" in sys.argv[2:]
    sub = threading.Thread(target=run_in_subinterpreter, args=(SUB_CODE % (w, busy), box),
                           name="subrunner", daemon=True)
    sl = threading.Thread(target=sleeper, name="sleeper-1", daemon=True)
    sub.start()
    sl.start()
    os.read(r, 1)  # sub_worker runs
    time.sleep(0.1)
    info = {"pid": os.getpid(), "main": threading.get_native_id(), "interp": box.get("interp"),
            "threads": {t.name: t.native_id for t in (sub, sl)}}
    print("ready " + json.dumps(info), flush=True)
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        end = time.monotonic() + 0.2
        while churn and time.monotonic() < end:
            th = threading.Thread(target=int)
            th.start()
            th.join()
        time.sleep(max(0.0, end - time.monotonic()))


if __name__ == "__main__":
    sys.exit(main())
