# SPDX-License-Identifier: MIT
# tests/pyrt: drives the pyrt objects, built for this interpreter's minor version, through
# ctypes inside a stock interpreter (Debian's /usr/bin/python3 has no libpython to embed, so
# this is how the 3.11 build is proven on 3.11.2's layout). Threads park at "# BP:" markers of
# pyrt_target.py; snapshots come from a new native thread while this thread waits in a CDLL
# call (GIL released), names/locals through PyDLL (GIL held), and one snapshot while a thread
# holds the GIL inside pause().
# Usage: python test_ctypes.py pyrt-test-3.X.so DIR. Last line "pyrt-ctypes ...: N passed, M failed".
import ctypes
import os
import platform
import signal
import sys
import threading
import time

so, here = sys.argv[1], sys.argv[2]
sys.path.insert(0, here)
import pyrt_target as T  # noqa: E402

npass = nfail = 0


def check(cond, msg):
    global npass, nfail
    if cond:
        npass += 1
    else:
        nfail += 1
        print("FAIL:", msg, flush=True)


def markers(path):
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if "# BP: " in line:
                out[line.split("# BP: ")[1].strip()] = i
    return out


BP = markers(os.path.join(here, "pyrt_target.py"))
BPM = markers(os.path.join(here, "pyrt_modblock.py"))
ARGS = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
        ctypes.c_char_p, ctypes.c_long, ctypes.POINTER(ctypes.c_int)]
lib_nogil = ctypes.CDLL(so)   # the GIL is released during the call
lib_gil = ctypes.PyDLL(so)    # the GIL stays held
for lib in (lib_nogil, lib_gil):
    lib.pyrt_test_dump.argtypes = ARGS
    lib.pyrt_test_dump.restype = ctypes.c_int


def dump(flags=0, max_frames=64, wait=None, wake=0, go=None):
    buf = ctypes.create_string_buffer(1 << 20)
    lib = lib_gil if flags else lib_nogil
    rc = lib.pyrt_test_dump(buf, len(buf), flags, max_frames, 0 if flags else 1,
                            wait.encode() if wait else None, wake,
                            ctypes.byref(go) if go is not None else None)
    snap = {"rc": rc, "threads": []}
    for line in buf.value.decode("utf-8", "replace").splitlines():
        p = line.split("\t")
        if p[0] == "V":
            snap["version"] = p[1]
        elif p[0] == "G":
            snap["gil"] = int(p[1])
        elif p[0] == "T":
            snap["threads"].append(dict(ident=int(p[1]), native=int(p[2]), is_main=int(p[3]),
                                        holds=int(p[4]), daemon=int(p[5]), from_thr=int(p[6]),
                                        trunc=int(p[7]), nframes=int(p[8]), name=p[9],
                                        frames=[]))
        elif p[0] == "F":
            snap["threads"][-1]["frames"].append(dict(func=p[1], file=p[2], line=int(p[3]),
                                                      locals={}))
        elif p[0] == "L":
            snap["threads"][-1]["frames"][-1]["locals"][p[1]] = (p[2], p[3])
    return snap


def by_ident(snap, ident):
    return next((t for t in snap["threads"] if t["ident"] == ident), None)


def qual(cls, fn):
    return cls + "." + fn if sys.version_info >= (3, 11) else fn


def main():
    parked_lines = {BP["leaf"], BP["park"], BPM["modlevel"]}
    expect = T.start()
    deadline = time.time() + 20
    while time.time() < deadline:
        s = dump()
        parked = [t for t in s["threads"] if t["frames"] and t["frames"][0]["line"] in parked_lines]
        if len(parked) >= expect and len(T.INFO) >= expect:
            break
        time.sleep(0.05)
    check(len(parked) == expect, "parked threads %d, want %d" % (len(parked), expect))

    s = dump()
    me = threading.get_native_id()
    check(s["rc"] == 0, "rc %d" % s["rc"])
    check(s.get("version") == platform.python_version(),
          "version %s, want %s" % (s.get("version"), platform.python_version()))
    check(len(s["threads"]) == expect + 1, "%d threads" % len(s["threads"]))
    check(s.get("gil") == -1, "GIL holder %s while everyone waits" % s.get("gil"))
    main_t = by_ident(s, threading.get_ident())
    check(main_t is not None and main_t["is_main"] and main_t["native"] == me, "main thread")
    if main_t:
        check(main_t["frames"] and main_t["frames"][0]["func"] == "dump" and
              main_t["frames"][0]["file"].endswith("test_ctypes.py"), "main frames")
    for name, (ident, native, daemon) in T.INFO.items():
        t = by_ident(s, ident)
        check(t is not None, "thread %s missing" % name)
        if t:
            check(t["native"] == native, "%s native %d want %d" % (name, t["native"], native))
            check(not t["holds"] and not t["is_main"], "%s holds/main" % name)
    t = by_ident(s, T.INFO["pyrt-locals"][0])
    want = [("leaf", BP["leaf"]), ("middle", BP["middle"]),
            (qual("Holder", "method"), BP["method"]), ("run_locals", BP["run_locals"])]
    got = [(f["func"], f["line"]) for f in t["frames"][:4]] if t else []
    check(got == want, "pyrt-locals frames %s, want %s" % (got, want))
    check(t and t["frames"][4]["func"] == qual("Thread", "run") and
          t["frames"][4]["file"].endswith("threading.py"), "Thread.run frame")
    t = by_ident(s, T.INFO["pyrt-w0"][0])
    got = [(f["func"], f["line"]) for f in t["frames"][:3]] if t else []
    check(got == [("park", BP["park"]), ("recurse", BP["recurse_leaf"]),
                  ("recurse", BP["recurse"])], "pyrt-w0 frames %s" % got)
    s20 = dump(max_frames=20)
    t = by_ident(s20, T.INFO["pyrt-deep"][0])
    check(t and t["nframes"] == 20 and t["trunc"] == 1, "deep thread truncated at 20")

    s = dump(flags=3)
    check(s["rc"] == 0, "flags rc %d" % s["rc"])
    main_t = by_ident(s, threading.get_ident())
    check(main_t and main_t["name"] == "MainThread" and main_t["holds"] and
          s.get("gil") == me, "main holds the GIL, named MainThread")
    for name, (ident, native, daemon) in T.INFO.items():
        t = by_ident(s, ident)
        check(t and t["name"] == name and t["from_thr"] == 1 and t["daemon"] == int(daemon),
              "name/daemon of %s: %s" % (name, t and (t["name"], t["daemon"])))
    t = by_ident(s, T.INFO["pyrt-locals"][0])
    loc = t["frames"][0]["locals"] if t else {}
    check(loc.get("n") == ("int", "42"), "n %s" % (loc.get("n"),))
    check(loc.get("s") == ("str", "'hello'"), "s %s" % (loc.get("s"),))
    check(loc.get("d") == ("dict", "{'k': 1}"), "d %s" % (loc.get("d"),))
    check(loc.get("big") == ("int", "<int of 5001 bits>"), "big %s" % (loc.get("big"),))
    o = loc.get("obj", ("", ""))
    check(o[0] == "pyrt_target.Point" and o[1].startswith("<pyrt_target.Point object at 0x"),
          "obj %s" % (o,))
    check(len(loc.get("longs", ("", "x" * 999))[1]) <= 256, "longs bounded")
    mid = t["frames"][1]["locals"] if t else {}
    check(mid.get("captured") == ("str", "'cell-value'"), "cell %s" % (mid.get("captured"),))

    woke = ctypes.c_long(0)
    signal.signal(signal.SIGUSR1, lambda *a: None)
    go = ctypes.c_int(0)
    T.start_hog(ctypes.addressof(woke), ctypes.addressof(go))
    # Inside dump() (GIL released) go becomes 1, the hog takes the GIL and pause()s with it;
    # dump() waits for that, snapshots, then wakes it with a signal.
    s = dump(wait="hog", wake=-1, go=go)
    hog = [t for t in s["threads"] if t["frames"] and t["frames"][0]["func"] == "hog"]
    check(len(hog) == 1, "hog thread seen")
    if hog:
        check(hog[0]["holds"] == 1 and s.get("gil") == hog[0]["native"] == woke.value,
              "hog holds the GIL: %s gil=%s tid=%s" % (hog[0]["holds"], s.get("gil"), woke.value))
        check(hog[0]["frames"][0]["line"] == BP["hog"], "hog line")
    check(T.finish(), "threads finished")
    print("pyrt-ctypes %s (%s): %d passed, %d failed" % (platform.python_version(),
                                                        sys.executable, npass, nfail), flush=True)


main()
