# SPDX-License-Identifier: MIT
# A target that loads and unloads a shared library in a loop, as importers, plugin systems and
# CUDA do (tests/e2e/test_perf_dlopen.py, issue 15 item 1): the sampler's signal handler must
# never wait on the dynamic loader's lock, which a thread interrupted in dlopen/dlclose holds.
# A tiny library (samples/dlopen_lib.c, built here with cc) is dlopen'd and dlclose'd by
# --threads N threads (default 2) (--lib PATH: that library instead; --native: through libc's
# dlopen/dlclose called by ctypes, without the GIL, so loaders overlap); --walk: one more thread
# walks the loaded objects with dl_iterate_phdr and a C callback (samples/dlopen_walk.c),
# holding the loader's lock while code outside the loader runs, and one runs varied Python. the main thread prints "tick N" every 0.1 s and
# "ok loops N" with the loaders' progress every second. Prints "ready {...}" once running.
import _ctypes
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def build_lib(name):
    """Builds samples/<name>.c; returns a /proc/self/fd path to it (nothing left in /tmp)."""
    d = tempfile.mkdtemp(prefix="dlopen_loop-")
    so = os.path.join(d, "lib%s.so" % name)
    try:
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", so,
                        os.path.join(HERE, name + ".c")], check=True)
        fd = os.open(so, os.O_RDONLY)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return "/proc/self/fd/%d" % fd


SO = sys.argv[sys.argv.index("--lib") + 1] if "--lib" in sys.argv else build_lib("dlopen_lib")
WALK = build_lib("dlopen_walk")
LOOPS = [0]
WALKS = [0]


def loader():
    while True:
        h = _ctypes.dlopen(SO, os.RTLD_NOW)
        _ctypes.dlclose(h)
        LOOPS[0] += 1


def native_loader():
    # libc's own dlopen/dlclose through ctypes: the GIL is released, so the loaders run
    # in the loader at the same time, as native threads of a plugin system do.
    libc = ctypes.CDLL(None)
    libc.dlopen.restype = ctypes.c_void_p
    libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    libc.dlclose.argtypes = [ctypes.c_void_p]
    path = SO.encode()
    while True:
        h = libc.dlopen(path, os.RTLD_NOW)
        libc.dlclose(h)
        LOOPS[0] += 1


def walker():
    lib = ctypes.CDLL(WALK)
    while True:
        lib.dlopen_walk()
        WALKS[0] += 1


def python_work():
    # Varied Python and C code (many distinct native frames), under the GIL.
    import json
    import re
    data = {"k%d" % i: [i, str(i), {"x": i * 1.5}] for i in range(200)}
    while True:
        s = json.dumps(data, sort_keys=True)
        json.loads(s)
        re.findall(r"k(\d+)", s)
        sorted(data.items(), key=lambda kv: kv[1][0], reverse=True)


def main():
    n = 2
    if "--threads" in sys.argv:
        n = int(sys.argv[sys.argv.index("--threads") + 1])
    for i in range(n):
        threading.Thread(target=native_loader if "--native" in sys.argv else loader, name="loader-%d" % i, daemon=True).start()
    if "--walk" in sys.argv:
        threading.Thread(target=walker, name="walker", daemon=True).start()
        threading.Thread(target=python_work, name="worker", daemon=True).start()
    print("ready " + json.dumps({"pid": os.getpid(), "so": SO}), flush=True)
    i = 0
    while True:
        time.sleep(0.1)
        i += 1
        print("tick %d" % i, flush=True)
        if i % 10 == 0:
            print("ok loops %d walks %d" % (LOOPS[0], WALKS[0]), flush=True)


main()
