# SPDX-License-Identifier: MIT
"""Test and bench target: starts the probe with probing.init(), declares a history table
perf.train_steps(step, loss, ms) through the probe's C API for Python collectors, with an index
on (loss, ms, step) and a rollup by loss (perf.train_steps_by_loss), appends N rows
(argv[1], default 1000) with step = 0..N-1, loss = step % 7, ms = step % 100, then ticks.
Prints "ready {...}" once every row has been handed to the probe."""
import ctypes
import json
import os
import sys
import time

import probing


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    probing.init()
    lib = probing._load()
    lib.probing_history_define.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_size_t]
    lib.probing_history_append.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_double),
                                           ctypes.c_int]
    err = ctypes.create_string_buffer(256)
    if lib.probing_history_define(b"perf.train_steps", b"step,loss,ms", err, len(err)) != 0:
        raise SystemExit("define failed: " + err.value.decode())
    # Collectors index what users group by: GROUP BY loss then scans the index, no sort.
    lib.probing_history_index.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
    if lib.probing_history_index(b"perf.train_steps", b"loss,ms,step", err, len(err)) != 0:
        raise SystemExit("index failed: " + err.value.decode())
    # ... and keep the rollup of what they group by: perf.train_steps_by_loss.
    lib.probing_history_rollup.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, ctypes.c_size_t]
    if lib.probing_history_rollup(b"perf.train_steps", b"loss", b"ms,step", err, len(err)) != 0:
        raise SystemExit("rollup failed: " + err.value.decode())
    row = (ctypes.c_double * 3)()
    for i in range(n):
        row[0], row[1], row[2] = i, i % 7, i % 100
        if lib.probing_history_append(b"perf.train_steps", row, 3) != 0:
            raise SystemExit("append failed at %d" % i)
    print("ready " + json.dumps({"pid": os.getpid(), "rows": n}), flush=True)
    k = 0
    while True:
        print("tick %d" % k, flush=True)
        k += 1
        time.sleep(0.2)


if __name__ == "__main__":
    main()
