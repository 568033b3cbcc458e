# SPDX-License-Identifier: MIT
"""The debugger's native frames (attach "nativeFrames") and the `modules` request, through the
real DAP client against samples/native_mix.py: a thread stopped at a breakpoint inside a Python
comparator that libc's qsort (ctypes) calls reads Python -> native (qsort, libffi) -> Python,
innermost first, with the Python frames' ids, scopes and evaluate as without native frames;
paused threads blocked in C (time.sleep, a lock, read(2)) show the C functions they wait in
above their Python frames; the probe's own frames never show; "off" is the stack as it always
was; `modules` lists libc and the interpreter with paging; a bad value is refused at attach.

On every interpreter, as test_native.py: on the sid root's stripped builds libpython's static
functions and glibc's internal ones have no names (they show as module+offset, or in the label
of CPython's internals)."""
import re
import signal
import subprocess
import time

import pytest

import sidroot
from conftest import PYTHONS, asan_interceptor, bp
from dapclient import DAP
from dbgutil import Debugger

SAMPLE = "native_mix.py"


def is_native(f):
    return f.get("presentationHint") == "subtle" and "instructionPointerReference" in f


def is_python(f):
    return "source" in f and "instructionPointerReference" not in f


def builtin_ctypes(python):
    """Whether the interpreter has _ctypes (and so libffi) built into libpython."""
    if sidroot.is_sid(python):
        return False
    r = subprocess.run([python, "-c", "import sys; print('_ctypes' in sys.builtin_module_names)"],
                       capture_output=True, text=True, timeout=30)
    return r.stdout.strip() == "True"


def summary(frames):
    return ["%s%s" % (f["name"], ":%d" % f["line"] if is_python(f) else
                      " [%s]" % f.get("presentationHint")) for f in frames]


def index(frames, start=0, pred=None):
    for i in range(start, len(frames)):
        if pred(frames[i]):
            return i
    raise AssertionError("no such frame after %d in %s" % (start, summary(frames)))


def py(name, line=None):
    return lambda f: is_python(f) and f["name"] == name and (line is None or f["line"] == line)


def native(sub):
    return lambda f: is_native(f) and sub in f["name"]


def client(t, native_frames=None):
    """A CLI client beside the debugger (it does not take the seat), with its own nativeFrames."""
    c = DAP.unix(t.sock)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    args = {"probingClient": "cli"}
    if native_frames is not None:
        args["nativeFrames"] = native_frames
    assert c.request("attach", args)["success"]
    return c


def stack(c, tid):
    r = c.request("stackTrace", {"threadId": tid})
    assert r["success"], r
    return r["body"]["stackFrames"]


def modules(c, **args):
    r = c.request("modules", args)
    assert r["success"], r
    return r["body"]


def check_native_frames(frames, mods):
    """Every native frame: a hex pc, a module of `modules`, never the probe's own."""
    by_id = {m["id"]: m for m in mods}
    for f in frames:
        if not is_native(f):
            continue
        assert re.match(r"^0x[0-9a-f]+$", f["instructionPointerReference"]), f
        assert f["moduleId"] in by_id, f
        assert "libprobing" not in by_id[f["moduleId"]]["name"], summary(frames)
        assert "source" not in f and f["line"] == 0, f


def sigprof_caught(pid):
    with open("/proc/%d/status" % pid) as f:
        mask = int(re.search(r"^SigCgt:\s*([0-9a-f]+)", f.read(), re.M).group(1), 16)
    return bool(mask >> (signal.SIGPROF - 1) & 1)


def leave(d, t, tid):
    """Continue, check the target runs, disconnect, check its output."""
    d.req("continue", {"threadId": tid})
    t.assert_responsive()
    d.req("disconnect")
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_stopped_in_python_called_by_qsort(python, spawn):
    t = spawn(python, SAMPLE, args=("--sort-loop",))
    d = Debugger(t, sample=SAMPLE, attach={"nativeFrames": "merged"})
    sorter = t.ready["tids"]["sorter"]
    d.set_bps("sort_cmp")
    st = d.stopped(timeout=20)
    assert st["reason"] == "breakpoint" and st["threadId"] == sorter, st
    d.set_bps()
    f = d.frames(sorter)
    # Innermost first: the comparator (no frame of the probe's above it), then the C that
    # called it (libffi's closure, libc's qsort), then the Python that called qsort.
    assert py("sort_cmp", d.line("sort_cmp"))(f[0]), summary(f)
    i = index(f, 1, native("qsort"))
    # libffi's frames by name, unless this interpreter has _ctypes and libffi built into a
    # stripped libpython (python-build-standalone): unnamed frames of the interpreter, collapsed.
    builtin = builtin_ctypes(python)
    labelled = lambda x: x.get("presentationHint") == "label"  # noqa: E731
    assert any((labelled if builtin else native("ffi"))(x) for x in f[1:i]), summary(f)
    assert not any(is_python(x) for x in f[1:i]), summary(f)
    j = index(f, i, py("run_sort_loop", d.line("sort_call")))
    assert any((labelled if builtin else native("ffi_call"))(x) for x in f[i:j]), summary(f)
    # CPython's internals collapsed into labels; no eval-loop frame shown.
    labels = [x for x in f if x.get("presentationHint") == "label"]
    assert labels and all(re.match(r"^\[\d+ CPython internal frames?\]$", x["name"])
                          for x in labels), summary(f)
    assert not any("_PyEval_EvalFrameDefault" in x["name"] for x in f), summary(f)
    check_native_frames(f, modules(d.c)["modules"])
    # "off" (and no nativeFrames at all) is the stack as it always was: exactly the Python
    # frames of the merged one, with the same ids, so scopes and evaluate keep working.
    off = stack(client(t, "off"), sorter)
    assert off == stack(client(t), sorter)
    assert off == [x for x in f if is_python(x)], (summary(off), summary(f))
    assert all(is_python(x) for x in off)
    sc = d.req("scopes", {"frameId": f[0]["id"]})["body"]["scopes"]
    assert [s["name"] for s in sc] == ["Locals", "Globals"]
    r = d.req("evaluate", {"expression": "a[0] + b[0] > 0", "frameId": f[0]["id"],
                           "context": "watch"})
    assert r["body"]["result"] == "True", r
    # A native frame has no scopes (an empty list, not an error), and nothing to evaluate in.
    assert d.req("scopes", {"frameId": f[i]["id"]})["body"]["scopes"] == []
    r = d.req("evaluate", {"expression": "1", "frameId": f[i]["id"], "context": "watch"}, ok=False)
    assert r["success"] is False and "is a native frame" in r["message"], r
    leave(d, t, sorter)


@pytest.mark.parametrize("python", PYTHONS)
def test_paused_threads_blocked_in_c(python, spawn):
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE, attach={"nativeFrames": "merged"})
    tids = t.ready["tids"]
    d.req("pause", {"threadId": t.pid})
    d.stopped()
    mods = modules(d.c)["modules"]
    # In time.sleep (inside a Python callback that C called): the C sleep first (select()
    # before 3.11), then the sleeping Python frame.
    f = d.frames(tids["caller"])
    k = index(f, 0, is_python)
    assert k > 0 and all(not is_python(x) for x in f[:k]), summary(f)
    assert any(is_native(x) and ("sleep" in x["name"] or "select" in x["name"]) for x in f[:k]), \
        summary(f)
    assert py("py_callback", bp(SAMPLE, "callback_sleep"))(f[k]), summary(f)
    index(f, k, native("mix_call"))
    check_native_frames(f, mods)
    # Waiting on a lock (threading.Event.wait): the lock's C frames, then Condition.wait.
    f = d.frames(tids["qsorter"])
    k = index(f, 0, is_python)
    # A stripped interpreter (the sid root's) has no name for acquire_timed, a static function:
    # then glibc's futex wait (unnamed in a stripped glibc 2.43 too) and CPython's label.
    assert k > 0 and (any(native("acquire")(x) for x in f[:k]) or sidroot.is_sid(python) and all(
        x["name"].startswith("libc.so.6+") or x.get("presentationHint") == "label"
        for x in f[:k])), summary(f)
    assert f[k]["name"].endswith("wait"), summary(f)
    index(f, k, py("py_cmp", bp(SAMPLE, "cmp_wait")))
    check_native_frames(f, mods)
    # Blocked in read(2) inside C called through ctypes.
    f = d.frames(tids["blocker"])
    # (glibc 2.41+ enters the system call through hidden functions: unnamed when stripped)
    r = index(f, 0, native("read"))
    assert all(x["name"].startswith("libc.so.6+") for x in f[:r]), summary(f)
    if asan_interceptor(f[r + 1]):
        r += 1
    assert native("mix_block")(f[r + 1]), summary(f)
    index(f, r + 2, py("run_block", bp(SAMPLE, "block_call")))
    # The main thread, parked by the pause in Python once its time.sleep(0.2) returns: no
    # frame of the probe's, none of the interpreter calling the probe's hook: its Python frame
    # comes first.
    deadline = time.time() + 10
    while True:
        f = d.frames(t.pid)
        if is_python(f[0]) or time.time() > deadline:
            break
        time.sleep(0.05)
    assert py("main")(f[0]), summary(f)
    check_native_frames(f, mods)
    # A thread that blocks SIGPROF: its Python frames under a note, at once.
    f = d.frames(tids["masked"])
    assert f[0]["presentationHint"] == "label" and "SIGPROF" in f[0]["name"], summary(f)
    assert py("run_masked", bp(SAMPLE, "masked_wait"))(f[index(f, 1, py("run_masked"))])
    assert all(is_python(x) for x in f[1:]), summary(f)
    # "all" keeps the internals, eval loop included, with no label.
    f = stack(client(t, "all"), tids["caller"])
    assert any(x["name"].startswith("_PyEval_EvalFrameDefault") for x in f if is_native(x)), \
        summary(f)
    assert not any(x.get("presentationHint") == "label" for x in f), summary(f)
    # Paging applies to the merged stack.
    whole = d.frames(tids["caller"])
    r = d.req("stackTrace", {"threadId": tids["caller"], "startFrame": 2, "levels": 3})["body"]
    assert r["totalFrames"] == len(whole) and r["stackFrames"] == whole[2:5]
    leave(d, t, t.pid)
    # The SIGPROF handler was there only while each stack was read.
    assert not sigprof_caught(t.pid)


@pytest.mark.parametrize("python", PYTHONS)
def test_modules_and_bad_native_frames(python, spawn):
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE, configure=False, attach={"probingClient": "cli"})
    assert d.caps["supportsModulesRequest"] is True
    whole = modules(d.c)
    mods = whole["modules"]
    assert whole["totalModules"] == len(mods) > 3
    names = [m["name"] for m in mods]
    assert "libc.so.6" in names, names
    assert any(re.match(r"^(libpython3\.\d+\.so.*|python3(\.\d+)?)$", n) for n in names), names
    assert len({m["id"] for m in mods}) == len(mods)
    for m in mods:
        assert re.match(r"^0x[0-9a-f]+-0x[0-9a-f]+$", m["addressRange"]), m
        assert m["symbolStatus"] in ("Symbols loaded", "No symbols"), m
    assert all(m["path"].startswith("/") for m in mods if m["name"] == "libc.so.6")
    page = modules(d.c, startModule=1, moduleCount=2)
    assert page["modules"] == mods[1:3] and page["totalModules"] == len(mods)
    assert modules(d.c, startModule=len(mods))["modules"] == []
    # A bad nativeFrames: an error response naming the argument; nothing taken, the target
    # runs on, and a good attach then succeeds.
    c = DAP.unix(t.sock)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    r = c.request("attach", {"nativeFrames": "yes"})
    assert r["success"] is False and "arguments.nativeFrames" in r["message"] and \
        '"merged"' in r["message"], r
    t.assert_responsive()
    r = c.request("attach", {"nativeFrames": 1})
    assert r["success"] is False and "arguments.nativeFrames" in r["message"], r
    assert c.request("attach", {"nativeFrames": "all"})["success"]
    c.request("disconnect")
    t.check_output_clean()
