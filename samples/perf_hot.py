# SPDX-License-Identifier: MIT
# A target for perf --cc (tests/e2e/test_perf_cc.py, docs/perf.md): the main thread spends
# most of its time in a known C function, hot_c_spin (samples/perf_hot.c, compiled here with
# cc into a temporary directory, called through ctypes), called from the Python function
# hot_python_caller; it prints "tick N" every 0.2 s.
# Options: --threads N  N more threads named busy-0.. running pure Python (busy_py_loop);
#          --sleeper    a thread "sleeper" sleeping in sleepy_wait;
#          --block      a thread "blocker" that blocks SIGPROF and spins in blocked_spin;
#          --syscalls   a thread "syscaller" spending most of its CPU time in the kernel
#                       (syscall_loop: reads of 256 KiB from /dev/zero, the kernel zeroing
#                       the buffer each time);
#          --churn      a thread "churn" whose stack goes 0 to 400 calls deep and back over
#                       and over (churn_call, a generator's frame churn_gen every 50 calls):
#                       on 3.11+ it crosses data stack chunks, allocated and freed each time;
#          --deep N     a thread "deep" N calls of deep_call down (a generator's frame
#                       deep_gen half way), spinning in busy_py_loop at the bottom;
#          --fork       the main loop fork()s a child every 0.3 s that runs hot_python_caller
#                       for 0.1 s and exits 0; "ok forks N bad M" lines report them;
#          --fork-linger  with --fork: each child then sleeps 3 s before it exits ("ok
#                       child PID" names it; reaped, and counted, once it has exited);
#          --nofile N   first of all, an open-file limit (soft) of N descriptors;
#          --no-perf-events  first of all, a seccomp filter as a container's default profile
#                       has: perf_event_open fails with EACCES (x86-64 and aarch64);
#          --short N    a thread "spawner" keeping N short-lived threads alive, each named
#                       short-K (K counts up) and calling hot_python_caller for 40 ms three
#                       times before it ends: threads come and go all the time;
#          --prof-handler  its own SIGPROF handler (counting into PROF_HITS[0]) fed by
#                       setitimer(ITIMER_PROF) every 20 ms of process CPU time.
# Prints "ready {...}" (pid, so path) once everything runs.
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings

# The probe's own threads make the process multi-threaded: 3.12+ would warn at each fork().
warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork")
HERE = os.path.dirname(os.path.abspath(__file__))


def build_lib():
    d = tempfile.mkdtemp(prefix="perf_hot-")
    so = os.path.join(d, "libperf_hot.so")
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-o", so,
                    os.path.join(HERE, "perf_hot.c")], check=True)
    return so


SO = build_lib()
lib = ctypes.CDLL(SO)
lib.hot_c_spin.argtypes = [ctypes.c_long]
lib.hot_c_spin.restype = ctypes.c_longlong


def hot_python_caller(usec):
    return lib.hot_c_spin(usec)


def busy_py_loop(stop):
    x = 0
    while not stop.is_set():
        for i in range(20000):
            x = (x * 31 + i) & 0xFFFF
    return x


def deep_call(n, stop):
    pad = [n, n + 1, n + 2, n + 3]  # locals: frames of some size
    if n <= 0:
        return busy_py_loop(stop) + pad[0]
    if n == DEEP[0] // 2:
        return next(deep_gen(n - 1, stop))
    return deep_call(n - 1, stop) + pad[1]


def deep_gen(n, stop):
    yield deep_call(n, stop)


DEEP = [0]


def churn_call(n, stop):
    if n <= 0:
        return 0
    if n % 50 == 0:
        return next(churn_gen(n - 1, stop)) + 1
    return churn_call(n - 1, stop) + 1


def churn_gen(n, stop):
    yield churn_call(n, stop)


def churn_loop(stop):
    x = 0
    while not stop.is_set():
        for depth in (400, 130, 270, 20, 390):
            x += churn_call(depth, stop)
    return x


def sleepy_wait(stop):
    while not stop.is_set():
        time.sleep(0.05)


def blocked_spin(stop):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
    x = 0
    while not stop.is_set():
        for i in range(20000):
            x = (x + i) & 0xFFFF
        time.sleep(0.001)
    return x


def syscall_loop(stop):
    buf = bytearray(256 * 1024)
    fd = os.open("/dev/zero", os.O_RDONLY)
    n = 0
    while not stop.is_set():
        n += os.readv(fd, [buf])
    return n


def short_life():
    for _ in range(3):
        hot_python_caller(40000)


def spawner(n, stop):
    alive, k = [], 0
    while not stop.is_set():
        alive = [t for t in alive if t.is_alive()]
        while len(alive) < n:
            t = threading.Thread(target=short_life, name="short-%d" % k, daemon=True)
            k += 1
            t.start()
            alive.append(t)
        time.sleep(0.005)


PROF_HITS = [0]


def on_prof(signum, frame):
    PROF_HITS[0] += 1


def refuse_perf_events():
    import platform
    nr = {"x86_64": 298, "aarch64": 241}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)

    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]

    # ld [nr]; jeq perf_event_open ? errno(EACCES) : allow
    insns = (Insn * 4)(Insn(0x20, 0, 0, 0), Insn(0x15, 0, 1, nr),
                       Insn(0x06, 0, 0, 0x00050000 | 13), Insn(0x06, 0, 0, 0x7FFF0000))
    prog = Prog(4, insns)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter")


def main():
    args = sys.argv[1:]
    if "--nofile" in args:
        import resource
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (int(args[args.index("--nofile") + 1]), hard))
    if "--no-perf-events" in args:
        refuse_perf_events()
    nthreads = int(args[args.index("--threads") + 1]) if "--threads" in args else 0
    stop = threading.Event()
    threads = [threading.Thread(target=busy_py_loop, args=(stop,), name="busy-%d" % i,
                                daemon=True) for i in range(nthreads)]
    if "--sleeper" in args:
        threads.append(threading.Thread(target=sleepy_wait, args=(stop,), name="sleeper",
                                        daemon=True))
    if "--deep" in args:
        DEEP[0] = int(args[args.index("--deep") + 1])
        threads.append(threading.Thread(target=deep_call, args=(DEEP[0], stop), name="deep",
                                        daemon=True))
    if "--churn" in args:
        threads.append(threading.Thread(target=churn_loop, args=(stop,), name="churn",
                                        daemon=True))
    if "--short" in args:
        threads.append(threading.Thread(target=spawner, name="spawner", daemon=True,
                                        args=(int(args[args.index("--short") + 1]), stop)))
    if "--block" in args:
        threads.append(threading.Thread(target=blocked_spin, args=(stop,), name="blocker",
                                        daemon=True))
    if "--syscalls" in args:
        threads.append(threading.Thread(target=syscall_loop, args=(stop,), name="syscaller",
                                        daemon=True))
    for t in threads:
        t.start()
    if "--prof-handler" in args:
        signal.signal(signal.SIGPROF, on_prof)
        signal.setitimer(signal.ITIMER_PROF, 0.02, 0.02)
    forks = "--fork" in args
    linger = "--fork-linger" in args
    nforks = bad = 0
    children = []
    tids = {t.name: t.native_id for t in threads if hasattr(t, "native_id")}
    print("ready " + json.dumps({"pid": os.getpid(), "so": SO, "tids": tids}), flush=True)
    tick = 0
    last_tick = last_fork = time.monotonic()
    while True:
        hot_python_caller(20000)
        now = time.monotonic()
        if forks and now - last_fork >= 0.3:
            last_fork = now
            pid = os.fork()
            if pid == 0:
                t0 = time.monotonic()
                while time.monotonic() - t0 < 0.1:
                    hot_python_caller(10000)
                if linger:
                    time.sleep(3)
                os._exit(0)
            if linger:
                print("ok child %d" % pid, flush=True)
                children.append(pid)
            else:
                _, status = os.waitpid(pid, 0)
                nforks += 1
                bad += status != 0
                print("ok forks %d bad %d" % (nforks, bad), flush=True)
        for pid in list(children):  # lingering children, reaped once they exit
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.remove(pid)
                nforks += 1
                bad += status != 0
                print("ok forks %d bad %d" % (nforks, bad), flush=True)
        if now - last_tick >= 0.2:
            last_tick = now
            tick += 1
            print("tick %d" % tick, flush=True)


if __name__ == "__main__":
    main()
