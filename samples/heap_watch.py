# SPDX-License-Identifier: MIT
"""Test target: a main thread that reports the interpreter's object heap, for the tests that
check that the probe leaves nothing in it (tests/e2e/test_footprint.py).

Imports threading (as nearly every program does, and so that the probe reads thread names from
it), starts one named worker thread that waits on an event, prints "ready {json}", then every
50 ms "tick N value=B", where B is sys.getallocatedblocks(): the memory blocks the interpreter's
object allocator has handed out and not taken back. Each tick runs the same code, which leaves
nothing behind, so B stays the same tick after tick until something else (another thread, the
probe) keeps objects alive."""
import json
import os
import sys
import threading
import time

done = threading.Event()
worker = threading.Thread(target=done.wait, name="heap-worker", daemon=True)
worker.start()


def main():
    print("ready " + json.dumps({"pid": os.getpid(),
                                 "python": "%d.%d.%d" % sys.version_info[:3]}), flush=True)
    n = 0
    while True:
        time.sleep(0.05)
        blocks = sys.getallocatedblocks()
        print("tick %d value=%d" % (n, blocks), flush=True)
        n += 1


if __name__ == "__main__":
    main()
