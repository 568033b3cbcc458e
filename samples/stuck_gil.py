# SPDX-License-Identifier: MIT
"""Test target: the main thread enters a C function that never returns while holding the GIL
(ctypes.PyDLL keeps the GIL during the call), the classic hang. A worker thread started before
is then stuck waiting for the GIL."""
import ctypes
import os
import threading
import time


def worker():
    while True:
        time.sleep(0.01)  # BP: worker_sleep


def hold_gil_forever():
    libc = ctypes.PyDLL(None)
    print("ready {\"pid\": %d}" % os.getpid(), flush=True)
    libc.pause()  # BP: stuck_call


def main():
    threading.Thread(target=worker, name="gil-waiter", daemon=True).start()
    time.sleep(0.1)
    hold_gil_forever()


if __name__ == "__main__":
    main()
