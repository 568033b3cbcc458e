# SPDX-License-Identifier: MIT
"""Line breakpoints in every shape of function, on every CPython, and how CPython 3.11 serves
them (probe/debugger/hooks_entry.c): by hooking the entry of the functions that hold them,
with no frame-evaluation function (which costs every Python call of the program on 3.11),
where that catches every call; by the gate where it may not (a nested function, a generator,
a code object something else holds, a module not imported yet). Each breakpoint must stop at
its line either way, and every hooked function gets its own code back when the breakpoint
goes, and on detach."""
import os
import signal
import subprocess

import pytest

import sidroot
from conftest import PYTHONS, probing
from dbgutil import Debugger, assert_clean

SAMPLE = "entry_shapes.py"
HOOKED = ["plain", "decorated", "method", "static", "klass", "prop", "cached"]
GATED = ["nested", "generator", "aliased"]
FUNCS = {"plain": "plain", "decorated": "decorated", "method": "method", "static": "static",
         "klass": "klass", "prop": "prop", "cached": "cached", "nested": "inner",
         "generator": "gen", "aliased": "aliased", "late": "late"}
# The sample's functions, each as its own code says (the original: no constant of ours).
ORIGINAL = ("all(not any(type(c).__name__ == 'builtin_function_or_method' or c == "
            "'probing.entry' for c in f.__code__.co_consts) for f in (plain, "
            "decorated.__wrapped__, Shape.method, Shape.static, Shape.klass.__func__, "
            "Shape.prop.fget, cached.__wrapped__))")


def is_311(request):
    return request.node.callspec.id in ("3.11", "debian")


def stop_at(d, marker):
    s = d.stopped(timeout=15)
    frames = d.frames(s["threadId"])
    assert (frames[0]["name"].split(".")[-1], frames[0]["line"]) == (
        FUNCS[marker], d.line(marker) if marker != "late" else frames[0]["line"]), frames[:3]
    return s


def original_code(t):
    r = probing("-p", t.pid, "eval", ORIGINAL)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip() == "True"


@pytest.mark.parametrize("python", PYTHONS)
def test_breakpoint_in_each_shape_stops(python, spawn, request):
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE)
    for marker in HOOKED + GATED:
        d.set_bps(marker)
        st = d.state()
        if is_311(request):
            if marker in HOOKED:
                assert st["entryHooks"] >= 1 and not st["evalFrameHook"], (marker, st)
            else:
                assert st["entryHooks"] == 0 and st["evalFrameHook"], (marker, st)
        s = stop_at(d, marker)
        d.set_bps()
        d.req("continue", {"threadId": s["threadId"]})
        assert d.state()["entryHooks"] == 0
    # A hooked shape and a gated one together: the gate serves both, the hook is taken back.
    bps = d.req("setBreakpoints", {"source": {"path": d.path}, "breakpoints": [
        {"line": d.line("plain")}, {"line": d.line("nested")}]})["body"]["breakpoints"]
    assert all(b["verified"] for b in bps), bps
    if is_311(request):
        st = d.state()
        assert st["entryHooks"] == 0 and st["evalFrameHook"], st
    s = d.stopped(timeout=15)
    assert d.top(s["threadId"]) in (("plain", d.line("plain")), ("inner", d.line("nested")))
    d.set_bps()
    d.req("continue", {"threadId": s["threadId"]})
    assert original_code(t)
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_breakpoint_in_a_module_imported_later(python, spawn, request):
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE)
    d.sample = "entry_late.py"
    d.path = os.path.join(os.path.dirname(d.path), d.sample)
    d.set_bps("late")
    if is_311(request):
        st = d.state()
        assert st["entryHooks"] == 0 and st["evalFrameHook"], st
    os.kill(t.pid, signal.SIGUSR1)
    s = d.stopped(timeout=15)
    assert d.top(s["threadId"]) == ("late", d.line("late"))
    d.set_bps()
    d.req("continue", {"threadId": s["threadId"]})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_hooked_function_traced_only_while_it_runs(python, spawn, request):
    """A logpoint in plain() and a breakpoint in method(): every call logs (the hook fires at
    each entry), the thread is not traced between calls, and the code comes back on detach
    while hooked (no breakpoint cleared first)."""
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE)
    d.set_bps({"marker": "plain", "logMessage": "plain {n}"})
    outs = [d.wait_event("output", pred=lambda e: e["body"]["output"].startswith("plain "))
            for _ in range(5)]
    ns = [int(o["body"]["output"].split()[1]) for o in outs]
    assert ns == list(range(ns[0], ns[0] + 5)), ns
    if is_311(request):
        assert d.state()["entryHooks"] == 1
        assert not original_code(t)
    # Between calls no thread is traced: seen at least once in 200 looks.
    assert any(d.state()["tracedThreads"] == 0 for _ in range(200))
    d.set_bps({"marker": "plain", "logMessage": "plain {n}"}, "method")
    stop_at(d, "method")
    d.req("disconnect")  # while stopped, breakpoints still set
    assert_clean(t)
    assert original_code(t)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_entry_hooks_setting_off(python, spawn, request):
    """debugger.entry_hooks=off: the gate serves every breakpoint (a hooked function gets its
    code back when the breakpoints change next), and the breakpoint still stops."""
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE)
    d.set_bps({"marker": "plain", "condition": "False"})
    if is_311(request):
        assert d.state()["entryHooks"] == 1
    r = probing("-p", t.pid, "config", "debugger.entry_hooks=off", check=True)
    assert r.stdout == "debugger.entry_hooks = off\n"
    # Breakpoints changed, still never hit: a hit would stop the thread at once, and a stopped
    # thread has every thread traced instead of the gate (the state would race the stop).
    d.set_bps({"marker": "plain", "condition": "False and 1"})
    if is_311(request):
        st = d.state()
        assert st["entryHooks"] == 0 and st["evalFrameHook"], st
    assert original_code(t)
    d.set_bps("plain")
    s = stop_at(d, "plain")
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_hooked_code_marshals_and_no_copy_keeps_the_hook(python, spawn, request, tmp_path):
    """While a breakpoint is set, the function's code can be marshalled (cloudpickle, dill, Ray
    and numba read or ship code objects), and the marshalled code runs in a Python without
    probing; a copy the program makes of the hooked code (replace()) loses the hook on detach
    (issue 37, item 9)."""
    t = spawn(python, SAMPLE)
    d = Debugger(t, sample=SAMPLE)
    d.set_bps({"marker": "plain", "condition": "False"})
    if is_311(request):
        assert d.state()["entryHooks"] == 1
        assert not original_code(t)
    blob = tmp_path / "plain.marshal"
    r = probing("-p", t.pid, "eval",
                "import marshal; open(%r, 'wb').write(marshal.dumps(plain.__code__))" % str(blob))
    assert r.returncode == 0 and "Error" not in r.stdout, (r.stdout, r.stderr)
    if not sidroot.is_sid(python):  # (the sid root's interpreters run only inside it)
        run = subprocess.run([python, "-c", "import marshal, types; c = marshal.load(open(%r, "
                              "'rb')); print(types.FunctionType(c, {})(41))" % str(blob)],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode == 0 and run.stdout.strip() == "42", (run.stdout, run.stderr)
    # The program copies the hooked code object while the hook is in place.
    r = probing("-p", t.pid, "eval", "plain.__code__ = plain.__code__.replace(co_name='plain')")
    assert r.returncode == 0, r.stderr
    d.set_bps()
    d.req("disconnect")
    assert_clean(t)
    assert original_code(t)
    r = probing("-p", t.pid, "eval", "plain(1)")
    assert r.stdout.strip() == "2", r.stdout
    t.assert_responsive()
    t.check_output_clean()