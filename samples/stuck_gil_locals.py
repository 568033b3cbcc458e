# SPDX-License-Identifier: MIT
"""Test target: stuck_gil.py's hang (the main thread holds the GIL forever in a C call, a worker
waits for it) with locals of every type a GIL-free dump shows by value, in the frame that holds
the GIL and in the waiting thread's frame: read from memory, they must show exactly."""
import ctypes
import os
import threading
import time


class Point:
    pass


def values():
    big = 2 ** 100 + 7
    return dict(
        i_small=42, i_neg=-7, i_zero=0, i_big=big, i_nbig=-big,
        f=3.25, f_tiny=1e-07, f_huge=1e+22, f_third=1 / 3,
        b_true=True, b_false=False, n=None,
        s_ascii="hello", s_quote="it's", s_latin="caf\xe9", s_ucs2="\u4e2d\u6587",
        s_ucs4="\U0001f600", s_esc="a\nb\t\\", s_long="x" * 300,
        by=b"ab\x00\xff'", t=(1, "two", 3.0, None), t1=(5,), l=[1, [2], "s", b"b"],
        l_long=list(range(20)), d={"k": 1, 2: "v"}, obj=Point(),
    )


def worker():
    v = values()
    i_small, s_ascii, t, d = v["i_small"], v["s_ascii"], v["t"], v["d"]  # noqa: F841
    w_local = "waiting"  # noqa: F841
    while True:
        time.sleep(0.01)  # BP: worker_sleep


def hold_gil_forever():
    v = values()
    (i_small, i_neg, i_zero, i_big, i_nbig, f, f_tiny, f_huge, f_third, b_true, b_false, n,
     s_ascii, s_quote, s_latin, s_ucs2, s_ucs4, s_esc, s_long, by, t, t1, l, l_long, d,
     obj) = (v[k] for k in (
        "i_small", "i_neg", "i_zero", "i_big", "i_nbig", "f", "f_tiny", "f_huge", "f_third",
        "b_true", "b_false", "n", "s_ascii", "s_quote", "s_latin", "s_ucs2", "s_ucs4", "s_esc",
        "s_long", "by", "t", "t1", "l", "l_long", "d", "obj"))
    captured = "cell"

    def inner():
        return captured

    libc = ctypes.PyDLL(None)
    print("ready {\"pid\": %d}" % os.getpid(), flush=True)
    libc.pause()  # BP: stuck_call


def main():
    threading.Thread(target=worker, name="gil-waiter", daemon=True).start()
    time.sleep(0.2)
    hold_gil_forever()


if __name__ == "__main__":
    main()
