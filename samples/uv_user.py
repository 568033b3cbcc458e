# SPDX-License-Identifier: MIT
"""Test target with a libuv of its own (tests/e2e/test_container.py): loads the system's
libuv.so.1 with ctypes and, every tick, runs a loop of it with a timer that fires once, printing
"tick N value=<uv_version()>". The probe carries its own libuv, hidden: the two never meet.
Prints "ready {json}" (with the libuv version) first."""
import ctypes
import json
import os
import time

uv = ctypes.CDLL("libuv.so.1")
uv.uv_version.restype = ctypes.c_uint
uv.uv_loop_size.restype = ctypes.c_size_t
uv.uv_handle_size.restype = ctypes.c_size_t
UV_TIMER = 13  # uv_handle_type's UV_TIMER
fired = []
TIMER_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
on_timer = TIMER_CB(lambda handle: fired.append(handle))


def one_loop():
    """A fresh loop with one 1 ms timer, run to its end: the callback counts."""
    loop = ctypes.create_string_buffer(uv.uv_loop_size())
    timer = ctypes.create_string_buffer(uv.uv_handle_size(UV_TIMER))
    assert uv.uv_loop_init(loop) == 0
    assert uv.uv_timer_init(loop, timer) == 0
    assert uv.uv_timer_start(timer, on_timer, ctypes.c_uint64(1), ctypes.c_uint64(0)) == 0
    uv.uv_run(loop, 0)
    uv.uv_close(timer, None)
    uv.uv_run(loop, 0)
    assert uv.uv_loop_close(loop) == 0


def main():
    print("ready " + json.dumps({"pid": os.getpid(), "uv_version": uv.uv_version()}), flush=True)
    n = 0
    while True:
        before = len(fired)
        one_loop()
        if len(fired) == before + 1:
            print("tick %d value=%d" % (n, uv.uv_version()), flush=True)
        n += 1
        time.sleep(0.05)


if __name__ == "__main__":
    main()
