# SPDX-License-Identifier: MIT
"""Test target: the main thread enters a C function that never returns while holding the GIL
(ctypes.PyDLL keeps the GIL during the call), the classic hang. A worker thread started before
is then stuck waiting for the GIL. With --on-signal the main thread first runs Python (ready
printed) and enters the C call at SIGUSR1, printing "holding" just before: a hang that starts
after a debugger came."""
import ctypes
import os
import signal
import sys
import threading
import time


def worker():
    while True:
        time.sleep(0.01)  # BP: worker_sleep


def hold_gil_forever(ready=True):
    libc = ctypes.PyDLL(None)
    print(("ready {\"pid\": %d}" if ready else "holding %d") % os.getpid(), flush=True)
    libc.pause()  # BP: stuck_call


def main():
    threading.Thread(target=worker, name="gil-waiter", daemon=True).start()
    time.sleep(0.1)
    if "--on-signal" in sys.argv:
        go = []
        signal.signal(signal.SIGUSR1, lambda *_: go.append(1))
        print("ready {\"pid\": %d}" % os.getpid(), flush=True)
        while not go:
            time.sleep(0.01)
        hold_gil_forever(ready=False)
    hold_gil_forever()


if __name__ == "__main__":
    main()
