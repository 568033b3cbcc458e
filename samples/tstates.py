# SPDX-License-Identifier: MIT
"""Test target: counts the main interpreter's thread states (through the C API, with ctypes)
and prints "tick N value=COUNT" every 50 ms, so that a test sees a thread state the probe
keeps or leaves behind. One Python thread (main): COUNT is 1 when nothing else holds one."""
import ctypes
import json
import os
import threading
import time

api = ctypes.pythonapi
api.PyInterpreterState_Main.restype = ctypes.c_void_p
api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
api.PyThreadState_Next.restype = ctypes.c_void_p
api.PyThreadState_Next.argtypes = [ctypes.c_void_p]


def count():
    n, ts = 0, api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Main())
    while ts:
        n += 1
        ts = api.PyThreadState_Next(ts)
    return n


def main():
    print("ready " + json.dumps({"pid": os.getpid(), "main": threading.get_native_id()}),
          flush=True)
    i = 0
    while True:
        i += 1
        print("tick %d value=%d" % (i, count()), flush=True)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
