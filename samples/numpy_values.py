# SPDX-License-Identifier: MIT
"""Test target (needs numpy): a frame holding numpy scalars of every width and kind (complex,
datetime64 and timedelta64 of several units too) and arrays (2-d float, int32, strings, 0-d,
big-endian, a Python subclass, datetime64/timedelta64 with units, complex64), shown by the
probe's repr without running numpy's code. Prints 'ready {...}' then ticks; the tests find
lines through the "# BP: name" markers, never by number."""
import json
import os
import time

import numpy as np


class Tagged(np.ndarray):
    pass


def hold():
    i8 = np.int8(2)
    i16 = np.int16(-300)
    i32 = np.int32(-70000)
    i64 = np.int64(-5000000000)
    u8 = np.uint8(255)
    u64 = np.uint64(18446744073709551615)
    f16 = np.float16(0.1)
    f32 = np.float32(0.1)
    f64 = np.float64(0.1)
    whole = np.float32(3.0)
    tiny = np.float64(1.5e-7)
    huge = np.float64(1e20)
    yes = np.bool_(True)
    no = np.bool_(False)
    grid = np.zeros((2, 3))
    ints = np.arange(5, dtype=np.int32)
    names = np.array(["ab", "cde"])
    zero_d = np.array(3.5)
    big_endian = np.zeros(4, dtype=">i4")
    tagged = np.zeros((7, 1, 2)).view(Tagged)
    c128 = np.complex128(1 + 2j)
    c64 = np.complex64(0.1 - 0.2j)
    imag = np.complex128(2j)
    day = np.datetime64("2024-01-01")
    stamp = np.datetime64("2024-01-01T10:30:05.123456789")
    before = np.datetime64("1969-12-31T23:59:59", "s")
    hour = np.datetime64("1900-02-28T05", "h")
    month = np.datetime64("2024-03")
    nat = np.datetime64("NaT")
    span = np.timedelta64(5, "D")
    neg_ns = np.timedelta64(-3, "ns")
    generic = np.timedelta64(7)
    two_hours = np.timedelta64(4, "2h")
    days = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")
    stamps = np.zeros((2, 2), dtype="datetime64[ns]")
    spans = np.array([1, 2, 3], dtype="timedelta64[2h]")
    cplx = np.zeros(3, dtype=np.complex64)
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    n = 0
    while True:
        print("tick", n, flush=True)
        n += 1
        time.sleep(0.05)  # BP: hold_sleep


hold()
