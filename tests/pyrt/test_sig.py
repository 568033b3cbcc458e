# SPDX-License-Identifier: MIT
# tests/pyrt: the async-signal-safe reader (probe/sig/pyrt_sig.c) through ctypes in a stock
# interpreter: frames read inside a real signal handler (innermost first, names, files, lines),
# the entry flags that let native and Python stacks be merged (3.8-3.10: every frame; 3.11+:
# one per eval-loop call, checked with a ctypes callback that starts a second call), and the
# thread list with native ids and each thread's innermost frame.
# Usage: python test_sig.py pyrt-test-3.X.so. Last line "pyrt-sig ...: N passed, M failed".
import ctypes
import sys
import threading
import time

so = sys.argv[1]
npass = nfail = 0


def check(cond, msg):
    global npass, nfail
    if cond:
        npass += 1
    else:
        nfail += 1
        print("FAIL:", msg, flush=True)


lib = ctypes.CDLL(so)
lib.pyrt_sig_test_self.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
lib.pyrt_sig_test_threads.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
CB = ctypes.CFUNCTYPE(None)
lib.pyrt_sig_test_call.argtypes = [CB]


def frames():
    buf = ctypes.create_string_buffer(1 << 16)
    n = lib.pyrt_sig_test_self(buf, len(buf))
    out = []
    for line in buf.value.decode().splitlines():
        p = line.split("\t")
        out.append((p[1], p[2], int(p[3]), int(p[4])))
    return n, out


seen = {}


def sig_inner():
    seen["inner"] = frames()  # BP-LINE


def sig_outer():
    lib.pyrt_sig_test_call(CB(sig_inner))


def sig_plain():
    return frames()


n, fr = sig_plain()
names = [f[0] for f in fr]
check(n == len(fr) and n >= 2, "frames read in the handler: %r" % (fr,))
check(names[:3] == ["frames", "sig_plain", "<module>"], "innermost first: %r" % names)
check(all(f[1] == __file__ for f in fr), "files: %r" % (fr,))
lines = open(__file__).read().splitlines()
check(len(fr) > 1 and "return frames()" in lines[fr[1][2] - 1], "line of sig_plain: %r" % (fr[:2],))

sig_outer()
n, fr = seen["inner"]
names = [f[0] for f in fr]
check(names == ["frames", "sig_inner", "sig_outer", "<module>"], "through a callback: %r" % names)
check(len(fr) > 1 and "# BP-LINE" in lines[fr[1][2] - 1], "line of sig_inner: %r" % (fr[:2],))
entries = [f[3] for f in fr]
if sys.version_info >= (3, 11):
    # Two eval-loop calls on the C stack: <module> (sig_outer inlined) and the callback's
    # sig_inner (frames inlined).
    check(entries == [0, 1, 0, 1], "entry flags 3.11+: %r" % entries)
else:
    check(entries == [1, 1, 1, 1], "entry flags before 3.11: %r" % entries)

# Threads: every thread state with its native id and its innermost frame.
stop = threading.Event()


def parked_worker():
    stop.wait()


ths = [threading.Thread(target=parked_worker, name="w%d" % i) for i in range(3)]
for t in ths:
    t.start()
time.sleep(0.2)
buf = ctypes.create_string_buffer(1 << 16)
cnt = lib.pyrt_sig_test_threads(buf, len(buf))
rows = [l.split("\t") for l in buf.value.decode().splitlines()]
check(cnt == 4 and len(rows) == 4, "4 thread states: %r" % rows)
ids = {int(r[1]) for r in rows}
want = {threading.get_native_id()} | {t.native_id for t in ths}
check(ids == want, "native ids %r vs %r" % (ids, want))
check(sum(1 for r in rows if r[3] in ("wait", "Condition.wait")) == 3, "workers parked in wait: %r" % rows)
stop.set()
for t in ths:
    t.join()

print("pyrt-sig %d.%d: %d passed, %d failed" % (sys.version_info[:2] + (npass, nfail)))
sys.exit(1 if nfail else 0)
