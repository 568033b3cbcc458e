# SPDX-License-Identifier: MIT
"""What the bench scripts share: paths, their arguments (BUILD_DIR [PYTHON]), BENCH_RUNS, and
which interpreter the targets run on (the given one, else pyenv's 3.11, else the first found)."""
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

BUILD = os.path.abspath(sys.argv[1])
CLI = os.path.join(BUILD, "bin", "probing")
PY = sys.argv[2] if len(sys.argv) > 2 else None


def runs(default):
    return int(os.environ.get("BENCH_RUNS", str(default)))


def python():
    if PY:
        return PY
    found = [line.split()[2] for line in subprocess.run(
        [os.path.join(ROOT, "tools", "pythons.sh")], capture_output=True,
        text=True).stdout.splitlines() if line.strip()]
    for exe in found:
        if "python3.11" in exe:
            return exe
    return found[0] if found else "/usr/bin/python3"


def start(sample, *args):
    """samples/SAMPLE on python() in its own session, once it printed its "ready" line."""
    p = subprocess.Popen([python(), os.path.join(ROOT, "samples", sample), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith("ready "):
            return p
    p.kill()
    raise SystemExit("bench: %s did not start" % sample)


def stop(p):
    p.kill()
    p.wait()


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit("bench: %s failed: %s" % (" ".join(cmd), r.stderr + r.stdout))
    return dt, r


def sock_path(pid):
    """The probe's socket of process pid, as the CLI reaches it: <pid>-<pid ns inode>.sock in
    /tmp/probing-<euid> under the process's root (probe/core/rundir.c); the pid as the process
    sees it (NSpid's last)."""
    inner = pid
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                inner = int(line.split()[-1])
    ns = os.stat("/proc/%d/ns/pid" % pid).st_ino
    return "/proc/%d/root/tmp/probing-%d/%d-%d.sock" % (pid, os.geteuid(), inner, ns)


class LineReader:
    """Whole lines from a child's stdout descriptor, waiting at most timeout seconds per call;
    exits the bench with `gone` when the child closed it."""

    def __init__(self, fd, gone):
        self.fd, self.gone, self.buf = fd, gone, b""

    def lines(self, timeout):
        import select
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return []
        data = os.read(self.fd, 65536)
        if not data:
            raise SystemExit(self.gone)
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode(errors="replace") for d in done]


# ---- the machine, printed at the head and the end of every bench (issue 40) ----
def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return "?", "?"
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                  if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines()
                  if ln.startswith("flags")), [])
    want = ("pcid", "invpcid", "pti", "la57", "shstk", "ibrs_enhanced", "hypervisor")
    # A VM may name only the vendor ("AMD EPYC"): the family and model say which generation.
    ids = {k: next((ln.split(":", 1)[1].strip() for ln in info.splitlines()
                    if ln.split(":", 1)[0].strip() == k), "?")
           for k in ("cpu family", "model", "stepping")}
    gen = "family %s model %s stepping %s" % (ids["cpu family"], ids["model"], ids["stepping"])
    return "%s, %s" % (model, gen), ",".join(f for f in want if f in flags) or "-"


def _mitigations():
    """The kernel's mitigations that add to every entry into it and return from it (a system
    call, an interrupt, a signal: the sampler's unit of work), as the kernel names them in
    /sys/devices/system/cpu/vulnerabilities; "none" when no such file says it mitigates or is
    vulnerable. One machine of this kind ran with spec_rstack_overflow's Safe RET, another may
    not: a cause of the same code costing more on one."""
    out = []
    for name, short in (("spec_rstack_overflow", "srso"), ("retbleed", "retbleed"),
                        ("spectre_v2", "spectre_v2"), ("meltdown", "meltdown"),
                        ("mds", "mds")):
        try:
            with open("/sys/devices/system/cpu/vulnerabilities/" + name) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.startswith("Not affected"):
            continue
        text = text.split(": ", 1)[1] if ": " in text else text
        out.append("%s %s" % (short, text.split(";")[0].split(",")[0].strip()))
    return ", ".join(out) or "none"


def _kernel_costs():
    """A system call that does nothing (getppid, through ctypes, less the same call of a libc
    function that does not enter the kernel) and a signal to this process, delivered to a
    Python handler and returned from (less a kill with signal 0: the same call, nothing
    delivered): what the mitigations above and the hypervisor charge for entering the kernel."""
    import ctypes
    import signal
    import time
    libc = ctypes.CDLL(None)
    sysc = libc.syscall
    sysc.argtypes = [ctypes.c_long]
    nr_getppid = {"x86_64": 110, "aarch64": 173}.get(os.uname().machine)

    def per(f, k):
        t0 = time.perf_counter()
        for _ in range(k):
            f()
        return (time.perf_counter() - t0) / k * 1e6
    k = 50000
    sys_us = (max(per(lambda: sysc(nr_getppid), k) - per(lambda: libc.abs(1), k), 0.0)
              if nr_getppid else float("nan"))
    pid = os.getpid()
    old = signal.signal(signal.SIGUSR2, lambda s, f: None)
    try:
        sig_us = max(per(lambda: os.kill(pid, signal.SIGUSR2), k // 5)
                     - per(lambda: os.kill(pid, 0), k // 5), 0.0)
    finally:
        signal.signal(signal.SIGUSR2, old)
    return sys_us, sig_us


def _loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _costs():
    """Two costs the sampler pays per sample, measured here: a minor page fault (touching fresh
    anonymous pages) and one process_vm_readv of 64 bytes (the reads of a thread's frames)."""
    import ctypes
    import mmap
    import time
    n = 4096
    m = mmap.mmap(-1, n * 4096)
    t0 = time.perf_counter()
    for i in range(n):
        m[i * 4096] = 1
    fault_us = (time.perf_counter() - t0) / n * 1e6
    m.close()

    class Iov(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    libc = ctypes.CDLL(None, use_errno=True)
    src, dst = ctypes.create_string_buffer(64), ctypes.create_string_buffer(64)
    li, ri = Iov(ctypes.addressof(dst), 64), Iov(ctypes.addressof(src), 64)
    f = libc.process_vm_readv
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                  ctypes.c_ulong, ctypes.c_ulong]
    f.restype = ctypes.c_ssize_t
    pid, k = os.getpid(), 20000
    t0 = time.perf_counter()
    for _ in range(k):
        f(pid, ctypes.byref(li), 1, ctypes.byref(ri), 1, 0)
    readv_us = (time.perf_counter() - t0) / k * 1e6
    # the Python call itself, to subtract
    g = libc.getpid
    t0 = time.perf_counter()
    for _ in range(k):
        g()
    call_us = (time.perf_counter() - t0) / k * 1e6
    return fault_us, max(readv_us - call_us, 0.0)


def _procmap_query():
    """Whether the kernel answers PROCMAP_QUERY (6.11+), which the sampler's module lookup uses
    when it can (else it reads /proc/PID/maps): asked of /proc/self/maps for an address of
    this process."""
    import ctypes
    import fcntl
    import struct
    size = 104  # struct procmap_query (linux/fs.h)
    req = (3 << 30) | (size << 16) | (ord("f") << 8) | 17  # _IOWR('f', 17, ...)
    addr = ctypes.cast(ctypes.pythonapi.Py_IsInitialized, ctypes.c_void_p).value
    buf = bytearray(struct.pack("=QQQ", size, 0, addr) + bytes(size - 24))
    try:
        with open("/proc/self/maps", "rb") as f:
            fcntl.ioctl(f.fileno(), req, buf)
    except OSError as e:
        return "no (%s)" % os.strerror(e.errno)
    start, end = struct.unpack_from("=QQ", buf, 24)
    return "yes" if start <= addr < end else "no (a wrong answer)"


def _cpu_timer_hz():
    """How often a CPU-time timer can fire on a busy thread here: the kernel checks CPU timers
    at its tick (CONFIG_HZ), so 10 kHz asked of ITIMER_PROF for 0.2 s of CPU comes out at the
    tick's rate. perf --cc's timers clock is bounded by it; its events clock is not."""
    import signal
    import time
    n = [0]
    old = signal.signal(signal.SIGPROF, lambda s, f: n.__setitem__(0, n[0] + 1))
    try:
        signal.setitimer(signal.ITIMER_PROF, 0.0001, 0.0001)
        t0 = time.process_time()
        while time.process_time() - t0 < 0.2:
            pass
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        return n[0] / (time.process_time() - t0)
    finally:
        signal.signal(signal.SIGPROF, old)


def _paranoid():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return f.read().strip()
    except OSError:
        return "?"


def machine_header():
    model, flags = _cpu_model()
    fault_us, readv_us = _costs()
    sys_us, sig_us = _kernel_costs()
    clk = os.popen("cat /sys/devices/system/clocksource/clocksource0/current_clocksource "
                   "2>/dev/null").read().strip() or "?"
    return ("machine: %s (%d cores; %s), kernel %s (mitigations: %s), clocksource %s, "
            "PROCMAP_QUERY %s, CPU timers at most %.0f Hz per thread (the tick), "
            "perf_event_paranoid %s; system call %.2f us, signal to itself %.2f us, minor "
            "page fault %.2f us, process_vm_readv(64 B) %.2f us; load average %s"
            % (model, os.cpu_count() or 0, flags, os.uname().release, _mitigations(), clk,
               _procmap_query(), _cpu_timer_hz(), _paranoid(), sys_us, sig_us, fault_us,
               readv_us, _loadavg()))


def _at_end():
    print("machine: load average at the end %s" % _loadavg(), flush=True)


if os.environ.get("BENCH_NO_HEADER") != "1":
    import atexit
    print(machine_header(), flush=True)
    atexit.register(_at_end)
