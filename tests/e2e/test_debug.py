# SPDX-License-Identifier: MIT
"""The debugger end to end, on every CPython: pause/continue, conditional and hit-count
breakpoints, logpoints, stepping checked against '# BP:' markers, function and exception
breakpoints, one debugging client at a time, and nothing left behind after a disconnect, a
disconnect while stopped, or a client that vanishes."""
import os
import re
import signal
import socket
import subprocess
import time

import pytest

import sidroot
from conftest import PYTHONS, probe_sock, probing
from dapclient import DAP
from dbgutil import Debugger, assert_clean, last_tick


def wait_tick(t, n, timeout=20):
    t.wait_line(r"^tick %d " % n, timeout=timeout)


@pytest.mark.parametrize("python", PYTHONS)
def test_pause_continue_100(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    caps = d.caps
    assert caps["supportsConditionalBreakpoints"] and caps["supportsLogPoints"]
    assert [f["filter"] for f in caps["exceptionBreakpointFilters"]] == ["raised", "uncaught"]
    main, worker = t.ready["main"], t.ready["worker"]
    for i in range(100):
        assert d.req("pause", {"threadId": main})["success"]
        # DAP: the response first, then the `stopped` it causes.
        assert not [e for e in d.c.events if e["event"] == "stopped"], "stopped before response"
        st = d.stopped()
        assert st["reason"] == "pause" and st["allThreadsStopped"] is True, st
        if i % 25 == 0:
            ticks = last_tick(t)
            time.sleep(0.1)
            assert last_tick(t) == ticks, "the target kept running while stopped"
            names = [f["name"] for f in d.frames(main)]
            assert "main" in names, names
            assert any("worker_loop" in f["name"] for f in d.frames(worker))
        r = d.req("continue", {"threadId": main})
        assert r["body"]["allThreadsContinued"] is True
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_condition_and_hit_count(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    wait_tick(t, 2)
    target_n = last_tick(t) + 8
    # Stops on the 3rd time the condition holds: n == target_n + 2.
    bps = d.set_bps({"marker": "compute_first", "condition": "n >= %d" % target_n,
                     "hitCondition": "3"})
    assert bps[0]["verified"], bps
    st = d.stopped(timeout=20)
    assert st["reason"] == "breakpoint" and st["hitBreakpointIds"] == [bps[0]["id"]]
    assert d.top(st["threadId"]) == ("compute", d.line("compute_first"))
    assert last_tick(t) == target_n + 1, "stopped at the wrong call: %d" % last_tick(t)
    d.set_bps()
    d.req("continue", {"threadId": st["threadId"]})
    t.assert_responsive()
    # Bad input gets a reason, and nothing is set.
    bad = d.set_bps({"marker": "add_body", "hitCondition": "often"},
                    {"marker": "add_body", "condition": "a ==="})
    assert [b["verified"] for b in bad] == [False, False]
    assert "hit condition" in bad[0]["message"] and "condition" in bad[1]["message"]
    # A condition that raises stops there and says why on the console.
    d.set_bps({"marker": "add_body", "condition": "1 / 0"})
    out = d.wait_event("output", timeout=15)["body"]["output"]
    assert "raised ZeroDivisionError: division by zero: stopping" in out, out
    st = d.stopped()
    assert d.top(st["threadId"]) == ("add", d.line("add_body"))
    d.set_bps()
    d.req("continue", {"threadId": st["threadId"]})
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_logpoint(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.set_bps({"marker": "add_body", "logMessage": "add {a}+{b} {{literal}}",
               "condition": "a % 5 == 0"})
    outs = [d.wait_event("output", timeout=15)["body"] for _ in range(2)]
    for o in outs:
        m = re.match(r"^add (\d+)\+(\d+) \{literal\}\n$", o["output"])
        assert m and int(m.group(1)) % 5 == 0 and int(m.group(2)) == 1, o
        assert o["line"] == d.line("add_body") and o["source"]["path"].endswith("debuggee.py")
    t.assert_responsive()  # a logpoint never stops
    d.req("disconnect")
    assert_clean(t)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_stepping(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    wait_tick(t, 1)
    d.set_bps({"marker": "compute_first", "condition": "n >= %d" % (last_tick(t) + 3)})
    tid = d.stopped(timeout=20)["threadId"]
    d.set_bps()
    assert d.top(tid) == ("compute", d.line("compute_first"))
    L = d.line
    for command, where in [("next", ("compute", L("compute_first") + 1)),
                           ("next", ("compute", L("compute_call"))),
                           ("stepIn", ("add", L("add_body"))),
                           ("next", ("add", L("add_return"))),
                           ("stepOut", ("compute", L("compute_point"))),
                           ("next", ("compute", L("compute_after"))),
                           ("stepOut", ("main", L("main_call") + 1))]:
        d.req(command, {"threadId": tid})
        st = d.stopped()
        assert st["reason"] == "step" and st["threadId"] == tid, st
        assert d.top(tid) == where, (command, d.top(tid), where)
    r = d.req("next", {"threadId": t.ready["worker"] + 999999}, ok=False)
    assert not r["success"] and "not stopped" in r["message"]
    d.req("continue", {"threadId": tid})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_function_breakpoint_and_unverified_line(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    blank = open(d.path).read().splitlines().index("") + 1
    r = d.req("setBreakpoints", {"source": {"path": d.path}, "breakpoints": [{"line": blank}]})
    b = r["body"]["breakpoints"][0]
    assert b["verified"] is False and "no code on line %d" % blank in b["message"]
    r = d.req("setBreakpoints", {"source": {"path": "/nonexistent/x.py"},
                                 "breakpoints": [{"line": 3}]})
    assert r["body"]["breakpoints"][0]["verified"] is False
    assert "cannot read" in r["body"]["breakpoints"][0]["message"]
    r = d.req("setFunctionBreakpoints", {"breakpoints": [{"name": "add"}]})
    fid = r["body"]["breakpoints"][0]["id"]
    st = d.stopped()
    assert st["reason"] == "function breakpoint" and st["hitBreakpointIds"] == [fid]
    assert d.top(st["threadId"]) == ("add", d.line("add_body"))
    d.req("setFunctionBreakpoints", {"breakpoints": []})
    d.req("continue", {"threadId": st["threadId"]})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_exception_breakpoints(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.req("setExceptionBreakpoints", {"filters": ["raised"]})
    st = d.stopped()
    assert st["reason"] == "exception" and "ValueError" in st.get("description", ""), st
    tid = st["threadId"]
    assert d.top(tid) == ("raise_and_catch", d.line("raise_caught"))
    info = d.req("exceptionInfo", {"threadId": tid})["body"]
    assert info["exceptionId"] == "ValueError" and info["breakMode"] == "always"
    assert re.match(r"caught \d+$", info["description"]), info
    assert "raise ValueError" in info["details"]["stackTrace"]
    d.req("setExceptionBreakpoints", {"filters": ["uncaught"]})
    d.req("continue", {"threadId": tid})
    # An uncaught exception in the worker thread: stop where it was raised.
    r = d.req("evaluate", {"expression": "crash_next = True", "context": "repl"})
    st = d.stopped(timeout=15)
    assert st["reason"] == "exception" and st["threadId"] == t.ready["worker"], st
    frames = d.frames(st["threadId"])
    assert (frames[0]["name"], frames[0]["line"]) == ("explode", d.line("raise_uncaught"))
    assert frames[1]["name"] == "worker_loop"
    info = d.req("exceptionInfo", {"threadId": st["threadId"]})["body"]
    assert info["exceptionId"] == "RuntimeError" and info["breakMode"] == "unhandled"
    r = d.req("setExceptionBreakpoints", {"filters": ["sometimes"]}, ok=False)
    assert "unknown filter" in r["message"]
    d.req("continue", {"threadId": st["threadId"]})
    # The original threading.excepthook ran after we let go: the traceback is on stderr.
    t.wait_line(r"^tick \d+", timeout=5)
    deadline = time.time() + 10
    while "RuntimeError: uncaught in worker" not in t.errors() and time.time() < deadline:
        time.sleep(0.05)
    assert "RuntimeError: uncaught in worker" in t.errors()
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_one_debugger_at_a_time_and_cli_beside(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.req("pause", {"threadId": t.ready["main"]})
    d.stopped()
    other = DAP.unix(t.sock)
    assert other.request("initialize", {"adapterID": "x"})["success"]
    r = other.request("attach", {})
    assert not r["success"] and "another debugging client" in r["message"]
    r = other.request("pause", {"threadId": t.ready["main"]})
    assert not r["success"]
    # The CLI keeps working while the target is stopped.
    r = probing("-p", t.pid, "debug", "--dump", "--json", check=True)
    assert "main" in r.stdout
    r = probing("-p", t.pid, "query", "SELECT count(*) FROM python.threads", check=True)
    # Disconnect while stopped: the target runs again, nothing is left.
    d.req("disconnect")
    t.assert_responsive()
    assert_clean(t)
    # The seat is free again.
    d2 = Debugger(t, inject=False)
    d2.req("disconnect")


@pytest.mark.parametrize("python", PYTHONS)
def test_vanished_client(python, spawn):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.set_bps("add_body")
    d.req("setExceptionBreakpoints", {"filters": ["raised", "uncaught"]})
    st = d.stopped()
    assert st["reason"] in ("breakpoint", "exception")
    d.req("next", {"threadId": st["threadId"]})
    d.c.sock.shutdown(socket.SHUT_RDWR)
    d.c.sock.close()
    t.assert_responsive()
    assert_clean(t)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_vanished_client_mid_step_under_gil_contention(python, spawn):
    """A client that sends `next` and vanishes at once, 25 times, while a busy thread keeps the
    GIL contended: the stepping thread may wake only after the detach's cleanup ran. Nothing of
    the debugger's may stay behind each time (a step started after the detach used to count
    for ever, and kept every thread traced)."""
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.req("evaluate", {"expression": "import threading; threading.Thread(target=lambda: "
                       "[sum(range(3000)) for _ in iter(int, 1)], daemon=True).start()",
                       "context": "repl"})
    d.req("disconnect")
    assert_clean(t)
    for i in range(25):
        d = Debugger(t, inject=False)
        d.set_bps("add_body")
        st = d.stopped()
        d.req("next", {"threadId": st["threadId"]})
        d.c.sock.shutdown(socket.SHUT_RDWR)
        d.c.sock.close()
        assert_clean(t)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_pause_with_threads_in_native_code(python, spawn):
    # threads.py: two threads blocked in C (a long sleep, a pipe read), the main one ticking.
    t = spawn(python, "threads.py")
    d = Debugger(t, sample="threads.py")
    d.req("pause", {"threadId": t.pid})
    st = d.stopped()
    assert st["allThreadsStopped"] is True
    threads = {th["id"]: th["name"] for th in d.req("threads")["body"]["threads"]}
    native = [n for n in threads.values() if n.endswith(" (in native code)")]
    assert len(native) >= 2, threads
    # Their stacks are still there (read without the GIL).
    blocked = [i for i, n in threads.items() if n.startswith("sleeper")]
    assert blocked and any(f["line"] == d.line("sleeper_sleep") for f in d.frames(blocked[0]))
    d.req("continue", {"threadId": t.pid})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_fork_child_is_never_stopped(python, spawn):
    # A breakpoint that only a fork child would hit: the child has no agent, so its debugger
    # is off; it runs to its end, and the parent sees it exit normally.
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.set_bps({"marker": "add_body", "condition": "__import__('os').getpid() != %d" % t.pid})
    d.req("evaluate", {"expression": "fork_next = True", "context": "repl"})
    deadline = time.time() + 20
    while True:
        r = d.req("evaluate", {"expression": "fork_status", "context": "watch"})
        if r["body"]["result"] != "None":
            break
        assert time.time() < deadline, "the fork child did not finish"
        time.sleep(0.1)
    assert r["body"]["result"] == str(7 << 8)
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_breakpoints_cost_only_where_they_are(python, spawn, request):
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    d.set_bps("never_called")
    st = d.state()
    # No thread runs code holding the breakpoint, so none is traced: 3.8-3.10 gate each code
    # object through a frame-evaluation function, 3.11 hooks the entry of never_called alone
    # (hooks_entry.c), 3.12+ use sys.monitoring's local events.
    assert st["tracedThreads"] == 0, st
    if request.node.callspec.id in ("3.11", "debian"):
        assert st["entryHooks"] == 1 and not st["evalFrameHook"], st
    else:
        assert st["evalFrameHook"] or st["monitoringTool"] is not None, st
    # A breakpoint in a frame that is already running (main's loop) still stops there.
    d.set_bps("main_print")
    s = d.stopped(timeout=15)
    assert d.top(s["threadId"]) == ("main", d.line("main_print"))
    d.set_bps()
    d.req("continue", {"threadId": s["threadId"]})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


def _next_line(t, pattern, timeout=10):
    """Waits for a line matching pattern that the target prints from now on."""
    seen = len(re.findall(pattern, t.output(), re.M))
    deadline = time.time() + timeout
    while len(re.findall(pattern, t.output(), re.M)) <= seen:
        assert time.time() < deadline, "no new %r line: %s" % (pattern, t.output()[-300:])
        time.sleep(0.01)


@pytest.mark.parametrize("python", PYTHONS)
def test_breakpoint_in_running_frame_set_during_a_gated_call(python, spawn):
    """A breakpoint in a running frame (the loop) set while a call of other code holding a
    breakpoint runs (nap, whose breakpoint never stops: condition False): the thread stays
    traced when that call returns. On 3.8-3.11 the frame-evaluation gate used to take the
    thread's trace function away there, and the loop's breakpoint never stopped."""
    t = spawn(python, "nap_loop.py")
    d = Debugger(t, sample="nap_loop.py")
    _next_line(t, r"^idle \d+$")
    # Set while idle() runs: no thread is traced until nap() is entered again.
    d.set_bps({"marker": "nap_after", "condition": "False"})
    assert d.state()["tracedThreads"] == 0
    _next_line(t, r"^napping \d+$")
    # Inside nap(), traced because its code holds a breakpoint: now one in the loop's frame.
    d.set_bps({"marker": "nap_after", "condition": "False"}, "loop_tick")
    s = d.stopped(timeout=10)
    assert d.top(s["threadId"]) == ("main", d.line("loop_tick"))
    d.set_bps()
    d.req("continue", {"threadId": s["threadId"]})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_stacktrace_of_a_busy_running_thread_is_never_empty(python, spawn):
    # The GIL-free reader races the running thread's frames; a read that finds none is
    # retried, so a thread inside Python code always shows its frames (it was about 1 in 100
    # requests on 3.12/3.13 before).
    t = spawn(python, "callheavy.py", args=("0.25",))
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(t.sock)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    empty = sum(c.request("stackTrace", {"threadId": t.pid})["body"]["totalFrames"] == 0
                for _ in range(1500))
    assert empty == 0, "%d of 1500 stack traces of a busy thread were empty" % empty


@pytest.mark.parametrize("python", PYTHONS)
def test_threads_named_while_the_gil_is_held_in_c(python, spawn):
    """`threads` names threads as threading does while the main thread holds the GIL in a C call
    that never returns (a hang that began after the probe came): the names read before are
    remembered, where it used to fall back to the OS's names ("python3.11") after
    gil_timeout_ms."""
    t = spawn(python, "stuck_gil.py", args=("--on-signal",))
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(probe_sock(t.pid))
    assert c.request("initialize", {"adapterID": "test"})["success"]
    assert c.request("attach", {})["success"]
    before = {th["name"]: th["id"] for th in c.request("threads")["body"]["threads"]}
    assert set(before) == {"MainThread", "gil-waiter"}, before
    os.kill(t.pid, signal.SIGUSR1)
    t.wait_line(r"^holding %d" % t.pid)
    deadline = time.time() + 20
    while time.time() < deadline:  # GIL-free: the main thread is in the C call
        r = probing("-p", t.pid, "query", "SELECT func FROM python.backtrace WHERE depth = 0",
                    check=True, timeout=30)
        if "hold_gil_forever" in r.stdout:
            break
        time.sleep(0.05)
    m = c.request("threads", timeout=30)
    assert m["success"], m
    after = {th["name"]: th["id"] for th in m["body"]["threads"]}
    assert after == before, (after, before)
    r = probing("-p", t.pid, "query", "SELECT name, name_source FROM python.threads "
                "ORDER BY name", "--format", "csv", check=True, timeout=30)
    assert r.stdout.splitlines()[1:] == ["MainThread,threading", "gil-waiter,threading"], r.stdout
    c.close()
    assert t.proc.poll() is None
    t.check_output_clean(extra_allowed=r"^holding \d+$")


def _has_columns(python):
    """3.11+: code objects have co_positions."""
    r = subprocess.run(sidroot.command(python, ["-c", "import sys; print(sys.version_info >= (3, 11))"]),
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() == "True"


@pytest.mark.parametrize("python", PYTHONS)
def test_stack_frame_columns(python, spawn):
    """3.11+: a parked thread's StackFrames carry the source range of the instruction each frame
    runs (column, endLine, endColumn; 1-based, end exclusive), so VS Code highlights the exact
    call: the caller's frame covers `add(n, 1)`. Before 3.11 column 1 and no range. The same
    ranges from a GIL-free snapshot (a running thread's stackTrace)."""
    t = spawn(python, "debuggee.py")
    d = Debugger(t)
    wait_tick(t, 1)
    d.set_bps("add_body")
    tid = d.stopped(timeout=20)["threadId"]
    d.set_bps()
    frames = d.frames(tid)
    assert [(f["name"], f["line"]) for f in frames[:2]] == [
        ("add", d.line("add_body")), ("compute", d.line("compute_call"))], frames[:2]
    with open(d.path) as f:
        src = f.read().splitlines()[d.line("compute_call") - 1]
    col = src.index("add(n, 1)") + 1
    caller = frames[1]
    if _has_columns(python):
        assert (caller["column"], caller["endLine"], caller["endColumn"]) == \
            (col, d.line("compute_call"), col + len("add(n, 1)")), caller
        top = frames[0]
        assert top["endLine"] == top["line"] and top["endColumn"] > top["column"] >= 1, top
    else:
        assert all(f["column"] == 1 and "endLine" not in f and "endColumn" not in f
                   for f in frames), frames[:2]
    d.req("continue", {"threadId": tid})
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)
