# SPDX-License-Identifier: MIT
"""Test target: a garbage collection that does not end. A reference cycle whose finalizer the
gc runs sleeps forever, so a dump taken then catches the collection running (gcCollecting).
Prints 'ready {...}', then 'ok finalizing' from inside the finalizer; the tests find lines
through the "# BP: name" markers, never by number."""
import gc
import json
import os
import time


class Blocker:
    def __del__(self):
        print("ok finalizing", flush=True)
        while True:
            time.sleep(0.05)  # BP: finalizer_sleep


def main():
    gc.disable()  # only the collection below, none started by an allocation before it
    b = Blocker()
    b.me = b  # a cycle: only the gc frees it
    del b
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    gc.collect()  # BP: collect


main()
