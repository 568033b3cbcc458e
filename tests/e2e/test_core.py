# SPDX-License-Identifier: MIT
"""probing dump --core on every CPython 3.8-3.13 and Debian's python3: a core written by gdb's
gcore of a running sample, read with the probe's own frame walker: every thread with its native
id and its frames at the # BP: lines, the same as the live process read from outside; --exe;
errors (not a core, a core of a process that is not Python, no --core). Kernel-written cores are
not tested: that needs /proc/sys/kernel/core_pattern, which is the whole machine's."""
import json
import os
import subprocess

import pytest

from conftest import HOST_PYTHONS, SAMPLES, bp, probing


def gcore(pid, out):
    subprocess.run(["gcore", "-o", str(out), str(pid)], check=True, capture_output=True,
                   timeout=120)
    return "%s.%d" % (out, pid)


def frames_of(t):
    return [(f["name"], f["file"], f["line"]) for f in t["frames"]]


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_core_dump(python, spawn, tmp_path):
    t = spawn(python)
    core = gcore(t.pid, tmp_path / "core")
    try:
        r = probing("dump", "--core", core, "--json", check=True)
        d = json.loads(r.stdout)
        assert d["pid"] == t.pid and d["core"] == core
        by_id = {x["nativeId"]: x for x in d["threads"]}
        assert set(by_id) == {t.pid, *t.ready["threads"].values()}, d
        main = by_id[t.pid]
        assert main["main"] is True
        assert (frames_of(main)[0][0], frames_of(main)[0][2]) == \
            ("tick_forever", bp("threads.py", "main_sleep"))
        sl = by_id[t.ready["threads"]["sleeper-1"]]
        assert (frames_of(sl)[0][0], frames_of(sl)[0][2]) == \
            ("sleeper", bp("threads.py", "sleeper_sleep"))
        # The same stacks as the live process (it has not moved: every thread sleeps or blocks).
        live = json.loads(probing("-p", t.pid, "debug", "--dump", "--no-inject", "--json",
                                  check=True).stdout)
        for x in live["threads"]:
            assert frames_of(by_id[x["nativeId"]]) == frames_of(x)
        text = probing("dump", "--core", core, check=True).stdout
        assert text.startswith("Process %d, CPython " % t.pid) and "    sleeper (" in text
        # --exe names the interpreter (here the one the core maps anyway).
        exe = os.path.realpath(python)
        with open("/proc/%d/maps" % t.pid) as f:
            lib = [l.split()[-1] for l in f if "libpython3" in l]
        r = probing("dump", "--core", core, "--exe", lib[0] if lib else exe, "--json",
                    check=True)
        assert {x["nativeId"] for x in json.loads(r.stdout)["threads"]} == set(by_id)
    finally:
        os.unlink(core)
    t.assert_responsive()
    t.check_output_clean()


def test_core_errors(tmp_path):
    r = probing("dump")
    assert r.returncode == 2 and "give a core file: probing dump --core FILE" in r.stderr
    notcore = tmp_path / "x"
    notcore.write_bytes(b"\x7fELF not really")
    r = probing("dump", "--core", str(notcore))
    assert r.returncode == 1 and "is not a 64-bit ELF core file" in r.stderr
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


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_core_native(python, spawn, tmp_path):
    """dump --core --native: native stacks from each thread's registers in the core, unwound by
    the probe's own unwinder over the core's memory, merged like debug --dump --native."""
    t = spawn(python, "native_mix.py")
    core = gcore(t.pid, tmp_path / "core")
    try:
        d = json.loads(probing("dump", "--core", core, "--native", "--json", check=True).stdout)
        by_id = {x["nativeId"]: x for x in d["threads"]}
        f = by_id[t.ready["tids"]["caller"]]["native"]
        assert f["answered"] and f["merged"], f
        f = f["frames"]
        i = idx(f, kind="python", name="py_callback", line=bp("native_mix.py", "callback_sleep"))
        assert all(x["kind"] == "native" for x in f[:i]) and i > 0
        j = idx(f, i, kind="native", name="mix_call", line=cbp("mix_call_cb"))
        idx(f, j, kind="python", name="run_call", line=bp("native_mix.py", "mix_call"))
        f = by_id[t.ready["tids"]["blocker"]]["native"]["frames"]
        assert f[1]["name"] == "mix_block" and f[1]["line"] == cbp("mix_block_read"), f[:3]
        # A thread blocking SIGPROF has its registers in the core like any other.
        m = by_id[t.ready["tids"]["masked"]]["native"]
        assert m["answered"] and m["merged"]
        assert not any(x.get("name") == "_PyEval_EvalFrameDefault"
                       for x in by_id[t.pid]["native"]["frames"])
        d = json.loads(probing("dump", "--core", core, "--native=all", "--json",
                               check=True).stdout)
        assert any(x.get("name") == "_PyEval_EvalFrameDefault"
                   for x in d["threads"][0]["native"]["frames"])
        text = probing("dump", "--core", core, "--native", check=True).stdout
        assert "(Python) py_callback (" in text and "(native) mix_call+0x" in text
    finally:
        os.unlink(core)
