# SPDX-License-Identifier: MIT
"""probing dump --core on every CPython 3.8-3.15 (pyenv's, Debian's python3, the sid root's in a
container), read with the probe's own frame walker: every thread with its native id and its
frames at the # BP: lines, the same as the live process read from outside (before the core was
written); --exe; --sysroot for a container's core (its files are where the container's root is);
--native; errors (not a core, a core of a process that is not Python, no --core).

Two writers:
- the kernel's, on every interpreter: the target is killed with SIGABRT under RLIMIT_CORE
  unlimited, in a working directory of the test's, where this machine's core_pattern ("core",
  relative) has the kernel write it (inside a container too: that directory is bound there);
- gdb's gcore of the running target, on the host's interpreters. gcore (gdb 13) run from the host
  on a process in the sid root writes zeros for the top pages of each thread's stack (where
  glibc keeps the thread's descriptor and its first C frames); CPython 3.14's threads run
  Thread.run through contextvars' Context.run, so their frame chain crosses a C-stack frame
  there and ends early in such a core. A kernel core of the same process reads whole."""
import glob
import json
import os
import resource
import re
import signal
import struct
import subprocess
import time

import pytest

import sidroot
from conftest import HOST_PYTHONS, PYTHONS, SAMPLES, asan_interceptor, bp, probing


def rooted(python):
    """What a container's core needs: the files it maps are under the container's root."""
    return ["--sysroot", sidroot.root()] if sidroot.is_sid(python) else []


def evalloop(frame):
    return (frame.get("name") or "").startswith("_PyEval_EvalFrameDefault")


def gcore(pid, out):
    with open("/proc/%d/maps" % pid) as f:
        if "/libasan.so" in f.read():
            # make asan's targets: gdb writes every page the ASan runtime reserved (a 64 GB
            # core filled this machine's disk); the kernel's cores of the same targets, which
            # leave them out, are read by the test_kernel_core_* tests.
            pytest.skip("gcore of a target running ASan writes its reserved memory (64 GB seen)")
    subprocess.run(["gcore", "-o", str(out), str(pid)], check=True, capture_output=True,
                   timeout=120)
    return "%s.%d" % (out, pid)


def frames_of(t):
    return [(f["name"], f["file"], f["line"]) for f in t["frames"]]


def live_dump(t):
    return json.loads(probing("-p", t.pid, "debug", "--dump", "--no-inject", "--json",
                              check=True).stdout)


def interp_file(python, pid):
    """The interpreter as the host sees it (for --exe): libpython3.X when the target maps one."""
    with open("/proc/%d/maps" % pid) as f:
        lib = [l.split()[-1] for l in f if "libpython3" in l]
    if lib:
        return lib[0]
    if sidroot.is_sid(python):
        return os.path.realpath(os.path.join(sidroot.root(), python[len(sidroot.PREFIX) + 1:]))
    return os.path.realpath(python)


def crashed(python, spawn, tmp_path, sample="threads.py", args=(), before_kill=None):
    """A target started in a directory of the test's with RLIMIT_CORE unlimited, read live from
    outside, then killed with SIGABRT: (target, the kernel's core, live dump, --exe file).
    before_kill(t), when given, runs after the live dump, before the kill."""
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip("kernel cores go where this machine's core_pattern says (%r), not to the "
                    "target's working directory" % pattern)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    old = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        # TMPDIR: what the sample builds (native_mix's library) outlives a container's /tmp
        t = spawn(python, sample, args=args, cwd=cwd, env={"TMPDIR": str(cwd)})
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, old)
    t.wait_line(r"^tick 1$")  # the main thread in its loop
    live = live_dump(t)
    if before_kill:
        before_kill(t)
    exe = interp_file(python, t.pid)
    os.kill(t.pid, signal.SIGABRT)
    assert t.proc.wait(timeout=120) == -signal.SIGABRT
    cores = glob.glob(str(cwd / "core*"))
    assert len(cores) == 1, (cores, pattern)
    return t, cores[0], live, exe


def build_id(path):
    """The GNU build id of an ELF file, as readelf -n prints it (None without one)."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def check_meta(python, t, d, text, signame):
    """What the core says of the process (issue 36, item 9): its executable and libpython with
    their build ids, the signal that ended it, in the JSON and the text header."""
    exe = d["executable"]["path"]
    if not sidroot.is_sid(python):
        assert os.path.realpath(exe) == os.path.realpath(python), d["executable"]
        assert d["executable"]["buildId"] == build_id(os.path.realpath(python)), d["executable"]
    shown = lambda bid: bid or "unknown"  # noqa: E731  (a build without a build-id note)
    assert "Executable: %s (build id %s)" % (exe, shown(d["executable"]["buildId"])) in text, \
        text[:600]
    lib = d.get("libpython")
    if lib:
        host = lib["path"]
        if sidroot.is_sid(python):
            host = os.path.join(sidroot.root(), host.lstrip("/"))
        assert lib["buildId"] == build_id(host), lib
        assert "libpython: %s (build id %s)" % (lib["path"], shown(lib["buildId"])) in text
    if signame:
        assert d["signal"]["name"] == signame and d["signal"]["number"] == \
            getattr(signal, signame), d["signal"]
        assert "Signal: %d (%s)" % (getattr(signal, signame), signame) in text


def check_dump(python, t, core, live, exe, signame=None):
    r = probing("dump", "--core", core, "--json", *rooted(python), check=True)
    d = json.loads(r.stdout)
    assert d["pid"] == t.pid and d["core"] == core
    by_id = {x["nativeId"]: x for x in d["threads"]}
    assert set(by_id) == {t.pid, *t.ready["threads"].values()}, d
    main = by_id[t.pid]
    assert main["main"] is True
    # threading's names, read from the core's memory (issue 36 item 7: "?" before), the same
    # as the live process's
    names = {t.pid: "MainThread", **{tid: n for n, tid in t.ready["threads"].items()}}
    for tid, name in names.items():
        assert (by_id[tid]["name"], by_id[tid]["nameSource"]) == (name, "threading"), by_id[tid]
    for x in live["threads"]:
        assert by_id[x["nativeId"]]["name"] == x["name"]
    assert (frames_of(main)[0][0], frames_of(main)[0][2]) == \
        ("tick_forever", bp("threads.py", "main_sleep"))
    sl = by_id[t.ready["threads"]["sleeper-1"]]
    assert (frames_of(sl)[0][0], frames_of(sl)[0][2]) == \
        ("sleeper", bp("threads.py", "sleeper_sleep"))
    # The same stacks as the live process read before: the workers sleep or block where they
    # are; the main thread ticks, so below its innermost frame.
    for x in live["threads"]:
        skip = 1 if x["nativeId"] == t.pid else 0
        assert frames_of(by_id[x["nativeId"]])[skip:] == frames_of(x)[skip:]
    text = probing("dump", "--core", core, *rooted(python), check=True).stdout
    assert text.startswith("Process %d, CPython " % t.pid) and "    sleeper (" in text
    check_meta(python, t, d, text, signame)
    if not sidroot.is_sid(python):
        # --exe the python executable, as the docs say, even when it is a shared-libpython
        # build (pyenv's, uv's: NEEDED libpython3.X.so, no _PyRuntime of its own): issue 36
        # item 6, "has no symbol _PyRuntime" before.
        r = probing("dump", "--core", core, "--exe", os.path.realpath(python), "--json")
        assert r.returncode == 0, r.stderr
        assert {x["nativeId"] for x in json.loads(r.stdout)["threads"]} == set(by_id)
    # --exe names the interpreter (here the one the core maps anyway).
    r = probing("dump", "--core", core, "--exe", exe, "--json", *rooted(python), check=True)
    assert {x["nativeId"] for x in json.loads(r.stdout)["threads"]} == set(by_id)
    if rooted(python):  # without the container's root its interpreter is not found
        r = probing("dump", "--core", core)
        assert r.returncode == 1 and "--sysroot DIR" in r.stderr, r.stderr


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_core_dump(python, spawn, tmp_path):
    t = spawn(python)
    core = gcore(t.pid, tmp_path / "core")
    try:
        check_dump(python, t, core, live_dump(t), interp_file(python, t.pid))
    finally:
        os.unlink(core)
    t.assert_responsive()
    t.check_output_clean()


def ranges(d):
    """Each thread's frames by native id: (name, line, column, endLine, endColumn), None for a
    part the dump does not give."""
    return {x["nativeId"]: [(f["name"], f["line"], f.get("column"), f.get("endLine"),
                             f.get("endColumn")) for f in x["frames"]] for x in d["threads"]}


@pytest.mark.parametrize("python", PYTHONS)
def test_columns_agree_live_noinject_core(python, spawn, tmp_path):
    """3.11+ source ranges (issue 36 item 9: co_positions, column/endLine/endColumn, 1-based,
    the end exclusive) are the same whoever reads the frames: the probe in the target, the CLI
    from outside (--no-inject) and dump --core from the kernel's core; the text of both readers
    shows file:line:column. Before 3.11 none of them has a column. (Before: --no-inject and the
    core gave the line only.)"""
    got = {}

    def inproc(t):
        got["probe"] = json.loads(probing("-p", t.pid, "debug", "--dump", "--json",
                                          check=True).stdout)
        got["text"] = probing("-p", t.pid, "debug", "--dump", "--no-inject", check=True).stdout

    t, core, live, _ = crashed(python, spawn, tmp_path, before_kill=inproc)
    d = json.loads(probing("dump", "--core", core, "--json", *rooted(python), check=True).stdout)
    ctext = probing("dump", "--core", core, *rooted(python), check=True).stdout
    probe, outside, fromcore = ranges(got["probe"]), ranges(live), ranges(d)
    assert set(outside) == set(fromcore) and set(outside) <= set(probe), (outside, probe)
    for tid in outside:
        skip = 1 if tid == t.pid else 0  # the main thread ticks: its innermost frame moves
        assert outside[tid][skip:] == probe[tid][skip:], (tid, outside[tid], probe[tid])
        assert fromcore[tid][skip:] == outside[tid][skip:], (tid, fromcore[tid], outside[tid])
    sl = outside[t.ready["threads"]["sleeper-1"]][0]
    line = bp("threads.py", "sleeper_sleep")
    src = open(os.path.join(SAMPLES, "threads.py")).read().splitlines()[line - 1]
    col = src.index("time.sleep(seconds)") + 1
    loc = "    sleeper (%s:%d" % (os.path.join(SAMPLES, "threads.py"), line)
    if tuple(int(v) for v in live["python"].split(".")[:2]) >= (3, 11):
        assert sl == ("sleeper", line, col, line, col + len("time.sleep(seconds)")), sl
        for frames in list(outside.values()) + list(fromcore.values()):
            for f in frames:
                assert f[2] >= 1 and f[3] >= f[1], f
        for text in (got["text"], ctext):
            assert "%s:%d)\n" % (loc, col) in text, text
    else:
        assert sl == ("sleeper", line, None, None, None), sl
        for frames in list(outside.values()) + list(fromcore.values()):
            assert all(f[2:] == (None, None, None) for f in frames), frames
        for text in (got["text"], ctext):
            assert "%s)\n" % loc in text, text


@pytest.mark.parametrize("python", PYTHONS)
def test_kernel_core_dump(python, spawn, tmp_path):
    t, core, live, exe = crashed(python, spawn, tmp_path)
    check_dump(python, t, core, live, exe, "SIGABRT")
    r = probing("dump", "--core", core, "--sysroot", str(tmp_path / "none"))
    assert r.returncode == 1 and "is not a directory" in r.stderr, r.stderr


def _numpy_pythons():
    """The interpreters of PYTHONS that import numpy (Debian's python3, the sid root's 3.14 and
    3.15)."""
    return [p for p in PYTHONS if subprocess.run(
        sidroot.command(p.values[0], ["-c", "import numpy"]), capture_output=True,
        timeout=120).returncode == 0]


NUMPY_PYTHONS = _numpy_pythons()


@pytest.mark.skipif(not NUMPY_PYTHONS, reason="no interpreter here imports numpy")
@pytest.mark.parametrize("python", NUMPY_PYTHONS)
def test_core_locals_numpy(python, spawn, tmp_path):
    """dump --core --locals shows NumPy values read from the core (issue 36 item 8), as the
    live dump does: complex, datetime64 and timedelta64 scalars as numpy's repr, arrays by shape
    and dtype with the datetime unit (samples/numpy_values.py). Before: every NumPy value was
    <numpy.X object at 0x...> there."""
    t, core, _, _ = crashed(python, spawn, tmp_path, sample="numpy_values.py")
    d = json.loads(probing("dump", "--core", core, "--locals", "--json", *rooted(python),
                           check=True).stdout)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["name"] == "hold", main["frames"][0]
    loc = {l["name"]: l["value"] for l in main["frames"][0]["locals"]}
    want = {"i8": "2", "f32": "0.1", "u64": "18446744073709551615", "c128": "(1+2j)",
            "imag": "2j", "day": "numpy.datetime64('2024-01-01')",
            "stamp": "numpy.datetime64('2024-01-01T10:30:05.123456789')",
            "hour": "numpy.datetime64('1900-02-28T05','h')", "nat": "numpy.datetime64('NaT')",
            "span": "numpy.timedelta64(5,'D')", "two_hours": "numpy.timedelta64(4,'2h')",
            "grid": "ndarray(shape=[2, 3], dtype=float64)",
            "stamps": "ndarray(shape=[2, 2], dtype=datetime64[ns])",
            "tagged": "Tagged(shape=[7, 1, 2], dtype=float64)"}
    assert {k: loc[k] for k in want} == want


def test_core_errors(tmp_path):
    r = probing("dump")
    assert r.returncode == 2 and "give a core file: probing dump --core FILE" in r.stderr
    notcore = tmp_path / "x"
    notcore.write_bytes(b"\x7fELF not really")
    r = probing("dump", "--core", str(notcore))
    assert r.returncode == 1 and "is not a 64-bit ELF core file" in r.stderr
    # One clear line for what is not a core at all (issue 36 item 9: "cannot map ...: Success").
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    for path, says in (("/dev/null", "/dev/null is not a regular file: give a core file"),
                       (str(empty), "%s is empty: not a core file" % empty),
                       (str(tmp_path), "%s is a directory: give a core file" % tmp_path)):
        r = probing("dump", "--core", path)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    p = subprocess.Popen(["sleep", "60"])
    try:
        core = gcore(p.pid, tmp_path / "core")
    finally:
        p.kill()
        p.wait()
    r = probing("dump", "--core", core)
    assert r.returncode == 1 and "maps no libpython3.X" in r.stderr and "--exe" in r.stderr
    os.unlink(core)


def cbp(name):
    with open(os.path.join(SAMPLES, "native_mix.c")) as f:
        for i, line in enumerate(f, 1):
            if "BP: " + name in line:
                return i
    raise AssertionError(name)


def idx(frames, start=0, **want):
    for i in range(start, len(frames)):
        if all(frames[i].get(k) == v for k, v in want.items()):
            return i
    raise AssertionError("no %r after %d in %s" % (want, start, [
        (f["kind"], f.get("name"), f.get("line")) for f in frames]))


def check_native(python, t, core):
    d = json.loads(probing("dump", "--core", core, "--native", "--json", *rooted(python),
                           check=True).stdout)
    by_id = {x["nativeId"]: x for x in d["threads"]}
    f = by_id[t.ready["tids"]["caller"]]["native"]
    assert f["answered"] and f["merged"], f
    f = f["frames"]
    i = idx(f, kind="python", name="py_callback", line=bp("native_mix.py", "callback_sleep"))
    assert all(x["kind"] == "native" for x in f[:i]) and i > 0
    j = idx(f, i, kind="native", name="mix_call", line=cbp("mix_call_cb"))
    idx(f, j, kind="python", name="run_call", line=bp("native_mix.py", "mix_call"))
    f = by_id[t.ready["tids"]["blocker"]]["native"]["frames"]
    k = idx(f, kind="native", name="mix_block")
    assert f[k]["line"] == cbp("mix_block_read") and all(  # read(2) and glibc's own
        x["kind"] == "native" and (x["module"].endswith("libc.so.6") or asan_interceptor(x))
        for x in f[:k]), f[:3]
    # A thread blocking SIGPROF has its registers in the core like any other.
    m = by_id[t.ready["tids"]["masked"]]["native"]
    assert m["answered"] and m["merged"]
    assert not any(evalloop(x) for x in by_id[t.pid]["native"]["frames"])
    d = json.loads(probing("dump", "--core", core, "--native=all", "--json",
                           *rooted(python), check=True).stdout)
    assert any(evalloop(x) for x in d["threads"][0]["native"]["frames"])
    text = probing("dump", "--core", core, "--native", *rooted(python), check=True).stdout
    assert "(Python) py_callback (" in text and "(native) mix_call+0x" in text


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_core_native(python, spawn, tmp_path):
    """dump --core --native: native stacks from each thread's registers in the core, unwound by
    the probe's own unwinder over the core's memory, merged like debug --dump --native."""
    t = spawn(python, "native_mix.py")
    core = gcore(t.pid, tmp_path / "core")
    try:
        check_native(python, t, core)
    finally:
        os.unlink(core)


@pytest.mark.parametrize("python", PYTHONS)
def test_kernel_core_native(python, spawn, tmp_path):
    if sidroot.is_sid(python) and os.environ.get("PROBING_TARGET_PRELOAD"):
        pytest.skip("make asan: the runtimes a sid-root target preloads are the container's "
                    "copies (/.probing-lib), gone with it: the core's frames in them cannot be "
                    "named or unwound through (every thread starts in ASan's thread start)")
    t, core, _, _ = crashed(python, spawn, tmp_path, "native_mix.py")
    check_native(python, t, core)


def test_truncated_core_says_so(tmp_path):
    """A core cut short (a full disk, ulimit -c, a copy in progress) is named truncated, with
    its size and the size its headers describe, not "maps no libpython" (issue 37, item 10)."""
    p = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        core = gcore(p.pid, tmp_path / "core")
    finally:
        p.kill()
        p.wait()
    data = open(core, "rb").read()
    # Where the notes end: every PT_NOTE's offset + size (64-bit little-endian program headers).
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    notes = []
    for i in range(phnum):
        ptype, _flags, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", data, phoff + 56 * i)
        if ptype == 4:
            notes.append((off, filesz))
    assert notes
    off, size = notes[0]
    # gdb writes the notes last: a cut anywhere loses them (a kernel core has them first).
    for cut in (off + size // 3, len(data) // 2):
        short = tmp_path / ("short-%d" % cut)
        short.write_bytes(data[:cut])
        r = probing("dump", "--core", str(short))
        assert r.returncode == 1, (r.stdout[-500:], r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
        m = re.search(r"is truncated \((\d+) of the (\d+) bytes", r.stderr)
        assert m and int(m.group(1)) == cut and int(m.group(2)) > cut, r.stderr
        assert "maps no libpython" not in r.stderr
