# SPDX-License-Identifier: MIT
"""probing -p PID debug --dump on every CPython 3.8-3.15 (3.14, 3.15 and a late 3.13 in the sid root) and Debian's python3: inject into a
running sample, dump, and check names, ids and line numbers against the sample's BP markers."""
import json
import os
import re
import subprocess

import pytest

import sidroot
from conftest import HOST_PYTHONS, PYTHONS, SAMPLES, bp, dump_json, probing


def frames_of(thread):
    return [(f["name"], f["line"]) for f in thread["frames"]]


def by_name(dump):
    return {t["name"]: t for t in dump["threads"]}


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_every_thread(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "inject", check=True)
    assert "probe loaded in %d" % t.pid in r.stdout
    d = dump_json(t.pid)
    threads = by_name(d)
    assert set(threads) == {"MainThread", "sleeper-1", "reader-1"}, threads.keys()
    main = threads["MainThread"]
    assert main["main"] is True and main["nameSource"] == "threading"
    assert main["nativeId"] == t.ready["main"] == t.pid
    for name in ("sleeper-1", "reader-1"):
        assert threads[name]["nativeId"] == t.ready["threads"][name]
        assert threads[name]["daemon"] is True
        assert threads[name]["id"] == threads[name]["nativeId"]
    # Innermost first, with the exact lines of the markers.
    assert frames_of(threads["sleeper-1"])[0] == ("sleeper", bp("threads.py", "sleeper_sleep"))
    assert frames_of(threads["reader-1"])[0] == ("reader", bp("threads.py", "reader_read"))
    assert frames_of(threads["sleeper-1"])[-1][0].endswith("_bootstrap")
    mf = frames_of(main)
    assert mf[0] == ("tick_forever", bp("threads.py", "main_sleep"))
    assert [n for n, _ in mf[1:]] == ["main", "<module>"]
    assert all(f["file"].endswith("threads.py") for f in main["frames"])
    # No thread holds the GIL while all of them sleep or block.
    assert d["gil"]["available"] is True
    assert d["python"].startswith(python.rsplit("python", 1)[-1][:4]) or python.endswith("python3")
    t.assert_responsive()
    t.check_output_clean()


# Before 3.11 a thread state keeps only the pthread_t: the probe finds where glibc keeps the
# kernel tid in it by scanning two threads of its own. The loading thread scans itself at load,
# so the agent thread needs no helper thread, whose start waited for a CPU (4 ms of an injection
# on a busy machine: issue 40's 3.8 inject); the helper is still the way when there is no seed.
PRE_311 = [p for p in HOST_PYTHONS if p.id in ("3.8", "3.9", "3.10")]


@pytest.mark.skipif(not PRE_311, reason="no CPython 3.8-3.10 on this machine")
@pytest.mark.parametrize("seed", ["loader", "helper"])
@pytest.mark.parametrize("python", PRE_311)
def test_tid_calibration(python, seed, spawn):
    t = spawn(python, env={"PROBING_TEST_NO_TID_SEED": "1"} if seed == "helper" else None)
    probing("-p", t.pid, "inject", check=True)
    d = dump_json(t.pid)
    threads = by_name(d)
    assert threads["MainThread"]["nativeId"] == t.pid
    for name in ("sleeper-1", "reader-1"):
        assert threads[name]["nativeId"] == t.ready["threads"][name]
    way = {"loader": "the loading thread's scan", "helper": "a helper thread's scan"}[seed]
    log = t.probe_log()
    assert "pthread tid at offset" in log and way in log, log[-2000:]


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_text_and_locals(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "debug", "--dump", check=True)
    out = r.stdout
    assert 'Thread %d "MainThread"' % t.pid in out
    assert "sleeper (%s:%d)" % (t_file := "/samples/threads.py", 0) not in out  # sanity of format
    # file:line, and :column on 3.11+ (test_dump_columns checks which)
    assert re.search(r"\n    sleeper \(.*/threads\.py:%d(:\d+)?\)\n" % bp("threads.py", "sleeper_sleep"), out), out
    d = dump_json(t.pid, "--locals")
    threads = by_name(d)
    sl = {l["name"]: l for l in threads["sleeper-1"]["frames"][0]["locals"]}
    assert sl["seconds"]["value"] == "3600" and sl["seconds"]["type"] == "int"
    assert sl["label"]["value"] == "'sleeping'"
    rd = {l["name"]: l for l in threads["reader-1"]["frames"][0]["locals"]}
    assert rd["items"]["value"] == "[1, 2, 3]"
    assert json.loads(rd["payload"]["value"].replace("'", '"')) == {"kind": "pipe", "fd": rd["fd"]["value"] and int(rd["fd"]["value"])}
    mn = {l["name"]: l for l in threads["MainThread"]["frames"][0]["locals"]}
    assert len(mn["text"]["value"]) <= 300 and mn["text"]["value"].endswith("...")
    assert "bits" in mn["big"]["value"]
    th = {l["name"]: l for l in threads["reader-1"]["frames"][1]["locals"]}
    assert th["self"]["value"].startswith("<threading.Thread object at 0x")
    # Module-level frame: modules, functions and classes named as Python names them.
    mod = {l["name"]: l for l in threads["MainThread"]["frames"][-1]["locals"]}
    assert mod["json"]["value"] == "<module 'json'>" and mod["json"]["type"] == "module"
    assert mod["sleeper"]["value"] == "<function sleeper>"
    assert mod["started"]["value"].startswith("<threading.Barrier object at 0x")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_when_gil_held_forever(python, spawn):
    t = spawn(python, "stuck_gil.py")
    d = dump_json(t.pid)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["holdsGil"] is True
    assert d["gil"]["holder"] == main["id"] == t.pid
    assert d["gil"]["available"] is False
    assert main["frames"][0]["name"] == "hold_gil_forever"
    assert main["frames"][0]["line"] == bp("stuck_gil.py", "stuck_call")
    assert [f["name"] for f in main["frames"][1:]] == ["main", "<module>"]
    waiter = [x for x in d["threads"] if not x["main"]]
    assert len(waiter) == 1 and waiter[0]["frames"][0]["name"] == "worker"
    assert waiter[0]["frames"][0]["line"] == bp("stuck_gil.py", "worker_sleep")
    # --locals: says why they are read from memory (test_memlocals.py checks the values).
    assert "locals" not in main["frames"][0]  # the dump without --locals has none
    d = dump_json(t.pid, "--locals")
    assert "GIL is held by thread %d" % t.pid in d["localsError"]
    assert d["localsVia"] == "memory"
    main = [x for x in d["threads"] if x["main"]][0]
    assert [(l["name"], l["value"]) for l in main["frames"][0]["locals"]][0] == ("ready", "True")
    text = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "note: the GIL is held by thread %d" % t.pid in text
    assert t.proc.poll() is None
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_inject_twice(python, spawn):
    t = spawn(python)
    r1 = probing("-p", t.pid, "inject", check=True)
    r2 = probing("-p", t.pid, "inject", check=True)
    assert "probe loaded in" in r1.stdout
    assert "probe already loaded in %d" % t.pid in r2.stdout
    assert t.maps_count() == 1
    assert dump_json(t.pid)["pid"] == t.pid
    # The target as a bare first argument, and as -t PID.
    for args in ([t.pid], ["-t", t.pid]):
        r = probing(*args, "debug", "--dump", "--json", check=True)
        assert json.loads(r.stdout)["pid"] == t.pid
    t.assert_responsive()
    t.check_output_clean()


def test_dump_locals_show_tensors_by_shape(spawn, tmp_path):
    """Debian's python3 with torch: `debug --dump --locals` (and python.backtrace's locals) show a tensor
    by shape, dtype and device, as the debugger's variables do, never its data; inside a list
    too. A Tensor subclass with its own __torch_function__ is shown as any object: reading its
    shape would have run that Python code, which writes a file (it must not exist after)."""
    mark = tmp_path / "torch_function_called"
    t = spawn("/usr/bin/python3", "tensors.py", args=[str(mark)])
    d = dump_json(t.pid, "--locals")
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["name"] == "hold"
    loc = {l["name"]: l for l in main["frames"][0]["locals"]}
    assert loc["image"]["value"] == "tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu)"
    assert loc["image"]["type"] == "torch.Tensor"
    assert loc["labels"]["value"] == "tensor(shape=[5], dtype=torch.int64, device=cpu)"
    assert loc["weight"]["value"] == "tensor(shape=[7], dtype=torch.float32, device=cpu)"
    assert loc["weight"]["type"] == "torch.nn.parameter.Parameter"
    assert loc["scalar"]["value"] == "tensor(shape=[], dtype=torch.float64, device=cpu)"
    assert loc["batch"]["value"] == ("[tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu), "
                                     "tensor(shape=[5], dtype=torch.int64, device=cpu)]")
    assert loc["spy"]["value"].startswith("<__main__.Spy object at 0x"), loc["spy"]
    rows = probing("-p", t.pid, "query", "-f", "json", "SELECT locals FROM python.backtrace "
                   "WHERE func = 'hold'", check=True).stdout
    vals = json.loads(json.loads(rows)[0]["locals"])
    assert vals["image"] == loc["image"]["value"] and vals["spy"] == loc["spy"]["value"], vals
    out = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "image = tensor(shape=[2, 3, 4], dtype=torch.float32, device=cpu)  (torch.Tensor)" in out
    assert not mark.exists(), mark.read_text()
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_gil_holder_with_probe_loaded(python, spawn):
    """A thread computing in Python holds the GIL: with the probe loaded, debug --dump (text,
    JSON, with and without --locals) and python.threads name that thread, as --no-inject does,
    never 'not held' (the probe's own request for the GIL is not the answer)."""
    t = spawn(python, "gil_spin.py")
    spinner = t.ready["spinner"]

    def until_spinner(read):
        """The main thread ticks and may hold the GIL at the very moment asked, and on a loaded
        machine nobody may (the spinner between two switches): a few tries, none naming another
        thread; the spinner in one of them (before the fix: 'not held' every time)."""
        seen = []
        for _ in range(10):
            seen.append(read())
            assert seen[-1] in (spinner, t.pid, None), seen
            if seen[-1] == spinner:
                return
        raise AssertionError("the spinner %d never named: %r" % (spinner, seen))

    for extra in ((), ("--locals",)):
        def read():
            d = dump_json(t.pid, *extra)
            th = {x["nativeId"]: x for x in d["threads"]}
            assert th[spinner]["frames"][0]["name"] == "spin"
            assert d["gil"]["available"] is True and "localsError" not in d
            held = [k for k, x in th.items() if x["holdsGil"]]
            assert held == ([d["gil"]["holder"]] if d["gil"]["holder"] else []), d["gil"]
            return d["gil"]["holder"]
        until_spinner(read)

    def text():
        out = probing("-p", t.pid, "debug", "--dump", check=True).stdout
        m = re.search(r"^GIL: held by thread (\d+)$", out, re.M)
        assert m or re.search(r"^GIL: not held$", out, re.M), out
        return int(m.group(1)) if m else None
    until_spinner(text)

    def sql():
        rows = probing("-p", t.pid, "query", "-f", "json",
                       "SELECT thread_id, holds_gil FROM python.threads", check=True).stdout
        held = [r["thread_id"] for r in json.loads(rows) if r["holds_gil"]]
        assert len(held) <= 1, rows
        return held[0] if held else None
    until_spinner(sql)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_locals_corrupted_objects(python, spawn):
    """Locals whose type pointer or element pointer memory corruption overwrote: debug --dump
    --locals (JSON and text) shows each as <invalid object at 0x...> and the target lives on."""
    t = spawn(python, "corrupt_locals.py")
    d = dump_json(t.pid, "--locals")
    th = [x for x in d["threads"] if x["nativeId"] == t.ready["native"]][0]
    assert th["frames"][0]["line"] == bp("corrupt_locals.py", "corrupt_sleep")
    loc = {l["name"]: l for l in th["frames"][0]["locals"]}
    assert loc["fine"]["value"] == "[1, 2, 3]" and loc["fine"]["type"] == "list"
    for name in ("bad_type", "bad_fake_type"):
        assert loc[name]["value"] == "<invalid object at 0x%x>" % t.ready[name], loc[name]
        assert loc[name]["type"] == "?", loc[name]
    assert loc["bad_item"]["value"] == "[10, <invalid object at 0x8>, 30]", loc["bad_item"]
    assert loc["bad_tuple"]["value"] == "(40, <invalid object at 0x8>, 60)", loc["bad_tuple"]
    assert loc["garbage"]["value"].startswith("b'AAAA")
    t.assert_responsive()
    out = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "bad_type = <invalid object at 0x%x>  (?)" % t.ready["bad_type"] in out, out
    assert "bad_item = [10, <invalid object at 0x8>, 30]  (list)" in out, out
    t.assert_responsive()
    t.check_output_clean()


def _version(dump):
    return tuple(int(x) for x in dump["python"].split(".")[:2])


def _span(sample, marker, text):
    """(line, 1-based column, exclusive 1-based end column) of text on the marker's line."""
    line = bp(sample, marker)
    with open(os.path.join(SAMPLES, sample)) as f:
        src = f.read().splitlines()[line - 1]
    col = src.index(text) + 1
    return line, col, col + len(text)


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_columns(python, spawn):
    """3.11+: each frame's source range (co_positions of the instruction running: the call it
    waits in) in --json as column/endLine/endColumn (1-based, end exclusive) and in the text as
    file:line:column; before 3.11 the location table has no columns: the keys are absent and the
    text is file:line."""
    t = spawn(python)
    d = dump_json(t.pid)
    threads = by_name(d)
    top = threads["sleeper-1"]["frames"][0]
    reader = threads["reader-1"]["frames"][0]
    main = threads["MainThread"]["frames"][0]
    line, col, end = _span("threads.py", "sleeper_sleep", "time.sleep(seconds)")
    rline, rcol, rend = _span("threads.py", "reader_read", "os.read(fd, 1)")
    mline, mcol, mend = _span("threads.py", "main_sleep", "time.sleep(0.2)")
    out = probing("-p", t.pid, "debug", "--dump", check=True).stdout
    if _version(d) >= (3, 11):
        assert (top["line"], top["column"], top["endLine"], top["endColumn"]) == (line, col, line, end), top
        assert (reader["line"], reader["column"], reader["endLine"], reader["endColumn"]) == \
            (rline, rcol, rline, rend), reader
        assert (main["column"], main["endLine"], main["endColumn"]) == (mcol, mline, mend), main
        # Every frame that has a line has a range on it.
        for th in d["threads"]:
            for f in th["frames"]:
                assert f["column"] >= 1 and f["endLine"] >= f["line"], f
                assert f["endLine"] > f["line"] or f["endColumn"] >= f["column"], f
        assert "    sleeper (%s:%d:%d)\n" % (os.path.join(SAMPLES, "threads.py"), line, col) in out, out
    else:
        for th in d["threads"]:
            for f in th["frames"]:
                assert not {"column", "endLine", "endColumn"} & set(f), f
        assert "    sleeper (%s:%d)\n" % (os.path.join(SAMPLES, "threads.py"), line) in out, out
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_dump_gc_collecting(python, spawn):
    """A garbage collection that does not end (a finalizer the gc runs sleeps forever,
    samples/gc_finalizer.py): the dump says the gc is collecting ("gcCollecting": true, the
    text's "GC: collecting" line), the finalizer on the main thread's stack; with the probe loaded
    and with --no-inject alike. A target that is not collecting says false and no GC line."""
    t = spawn(python, "gc_finalizer.py")
    t.wait_line(r"^ok finalizing$")
    r = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--json", check=True)
    d = json.loads(r.stdout)
    assert d["gcCollecting"] is True, d
    d = dump_json(t.pid)
    assert d["gcCollecting"] is True, d
    main = [x for x in d["threads"] if x["main"]][0]
    assert [(f["name"], f["line"]) for f in main["frames"][:1]] == \
        [("Blocker.__del__" if _version(d) >= (3, 11) else "__del__", bp("gc_finalizer.py", "finalizer_sleep"))]
    assert ("main", bp("gc_finalizer.py", "collect")) in [(f["name"], f["line"]) for f in main["frames"]]
    out = probing("-p", t.pid, "debug", "--dump", check=True).stdout
    assert "\nGC: collecting" in out, out
    t.check_output_clean()
    quiet = spawn(python)
    assert dump_json(quiet.pid)["gcCollecting"] is False
    assert "GC:" not in probing("-p", quiet.pid, "debug", "--dump", check=True).stdout


def _numpy_pythons():
    """The interpreters of PYTHONS that import numpy (Debian's python3: numpy 1.x; the sid root's
    3.14 and 3.15: numpy 2.x; pyenv's have none)."""
    found = []
    for p in PYTHONS:
        exe = p.values[0]
        if subprocess.run(sidroot.command(exe, ["-c", "import numpy"]), capture_output=True,
                          timeout=120).returncode == 0:
            found.append(p)
    return found


NUMPY_PYTHONS = _numpy_pythons()


@pytest.mark.skipif(not NUMPY_PYTHONS, reason="no interpreter here imports numpy")
@pytest.mark.parametrize("python", NUMPY_PYTHONS)
def test_dump_locals_show_numpy(python, spawn):
    """NumPy values without running numpy's code (samples/numpy_values.py): scalars by value as
    py-spy shows them (read from the object by their type; complex, datetime64 and timedelta64
    as numpy's repr), arrays by shape and dtype (datetime units too), in --locals JSON and text
    and in python.backtrace's locals, and the same read GIL-free from outside (--no-inject)."""
    t = spawn(python, "numpy_values.py")
    d = dump_json(t.pid, "--locals")
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["name"] == "hold"
    loc = {l["name"]: l for l in main["frames"][0]["locals"]}
    want = {"i8": "2", "i16": "-300", "i32": "-70000", "i64": "-5000000000", "u8": "255",
            "u64": "18446744073709551615", "f16": "0.1", "f32": "0.1", "f64": "0.1",
            "whole": "3.0", "tiny": "1.5e-07", "huge": "1e+20", "yes": "True", "no": "False",
            "grid": "ndarray(shape=[2, 3], dtype=float64)",
            "ints": "ndarray(shape=[5], dtype=int32)",
            "names": "ndarray(shape=[2], dtype=<U3)",
            "zero_d": "ndarray(shape=[], dtype=float64)",
            "big_endian": "ndarray(shape=[4], dtype=>int32)",
            "tagged": "__main__.Tagged(shape=[7, 1, 2], dtype=float64)",
            # complex, datetime64 and timedelta64 as numpy's repr (1.x) writes them
            "c128": "(1+2j)", "c64": "(0.1-0.2j)", "imag": "2j",
            "day": "numpy.datetime64('2024-01-01')",
            "stamp": "numpy.datetime64('2024-01-01T10:30:05.123456789')",
            "before": "numpy.datetime64('1969-12-31T23:59:59')",
            "hour": "numpy.datetime64('1900-02-28T05','h')",
            "month": "numpy.datetime64('2024-03')", "nat": "numpy.datetime64('NaT')",
            "span": "numpy.timedelta64(5,'D')", "neg_ns": "numpy.timedelta64(-3,'ns')",
            "generic": "numpy.timedelta64(7)", "two_hours": "numpy.timedelta64(4,'2h')",
            "days": "ndarray(shape=[2], dtype=datetime64[D])",
            "stamps": "ndarray(shape=[2, 2], dtype=datetime64[ns])",
            "spans": "ndarray(shape=[3], dtype=timedelta64[2h])",
            "cplx": "ndarray(shape=[3], dtype=complex64)"}
    assert {k: loc[k]["value"] for k in want} == want
    assert loc["i8"]["type"] == "numpy.int8" and loc["grid"]["type"] == "numpy.ndarray"
    out = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "        i8 = 2  (numpy.int8)\n" in out, out
    assert "        grid = ndarray(shape=[2, 3], dtype=float64)  (numpy.ndarray)\n" in out, out
    rows = probing("-p", t.pid, "query", "-f", "json", "SELECT locals FROM python.backtrace "
                   "WHERE func = 'hold'", check=True).stdout
    vals = json.loads(json.loads(rows)[0]["locals"])
    assert vals["f32"] == "0.1" and vals["grid"] == want["grid"], vals
    # Without the GIL, read from memory (--no-inject; the same reader serves a GIL held forever
    # and dump --core --locals): the same values; a Python subclass by its tp_name.
    r = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--locals", "--json", check=True)
    main = [x for x in json.loads(r.stdout)["threads"] if x["main"]][0]
    loc = {l["name"]: l for l in main["frames"][0]["locals"]}
    want["tagged"] = "Tagged(shape=[7, 1, 2], dtype=float64)"
    assert {k: loc[k]["value"] for k in want} == want
    assert loc["c128"]["type"] == "numpy.complex128" and loc["days"]["type"] == "numpy.ndarray"
    out = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--locals", check=True).stdout
    assert "        day = numpy.datetime64('2024-01-01')  (numpy.datetime64)\n" in out, out
    t.assert_responsive()
    t.check_output_clean()
