# SPDX-License-Identifier: MIT
"""Subinterpreters (issue 36 item 4) on every CPython 3.12+ (pyenv's 3.12/3.13, the sid root's
3.13-sid, 3.14, 3.15): samples/subinterp.py runs a thread whose call blocks while `sub_worker`
sleeps in a subinterpreter. Every reader shows that thread's state in the subinterpreter with
the interpreter's id (`interpreter` in JSON, `interp N` in text, python.threads.interp_id), its
frames read GIL-free, next to the same OS thread's state in the main interpreter (blocked in
run_in_subinterpreter): debug --dump injected and --no-inject, --native (the two states' frames
merged with the one native stack), dump --core (a kernel core, also --native), the
debugger's threads, perf --cc (cpu and wall) and the crash report; the target ticks on."""
import json
import os
import re
import signal

import pytest

from conftest import PYTHONS, dump_json, probe_sock, probing
from dapclient import DAP
from test_core import crashed, rooted


def _minor(p):
    m = re.match(r"^3\.(\d+)", p.id)
    return int(m.group(1)) if m else 0


# Subinterpreters with their own frames are 3.12+ (Debian's python3 is 3.11): the others are
# left out of the list, never skipped.
SUB_PYTHONS = [p for p in PYTHONS if _minor(p) >= 12]
# sub_worker's sleep, line 6 of samples/subinterp.py's SUB_CODE (3.14+ names it <script>)
SUB_LINE = re.compile(r"^    sub_worker \(<(string|script)>:6(:\d+)?\)$", re.M)  # :column on 3.11+


def names(t):
    return [f["name"] for f in t["frames"]]


def check_threads(t, d, where):
    """d: a probing/dump body. The subinterpreter's thread state of the runner thread, with
    sub_worker innermost, and its main-interpreter state blocked in the call."""
    sub_tid, iid = t.ready["threads"]["subrunner"], t.ready["interp"]
    assert iid and iid > 0, t.ready
    subs = [x for x in d["threads"] if x.get("interpreter") != 0]
    assert len(subs) == 1, (where, [(x["nativeId"], x.get("interpreter"), names(x))
                                    for x in d["threads"]])
    s = subs[0]
    assert s["interpreter"] == iid and s["nativeId"] == sub_tid, (where, s)
    # the sleep on line 6 of SUB_CODE (3.14+ names its file <script>)
    top = s["frames"][0]
    assert (top["name"], top["file"], top["line"]) in (("sub_worker", "<string>", 6),
                                                       ("sub_worker", "<script>", 6)), (where, s)
    assert s["main"] is False and s["id"] != sub_tid, (where, s)  # an id of its own
    outer = [x for x in d["threads"] if x["nativeId"] == sub_tid and x["interpreter"] == 0]
    assert len(outer) == 1 and "run_in_subinterpreter" in names(outer[0]), (where, outer)
    main = [x for x in d["threads"] if x["main"]]
    assert len(main) == 1 and main[0]["nativeId"] == t.pid and main[0]["interpreter"] == 0
    assert len({x["id"] for x in d["threads"]}) == len(d["threads"]), where  # unique ids
    return s


def check_native(t, d, where):
    """--native: the runner's native stack runs both states' frames: merged, sub_worker above
    run_in_subinterpreter."""
    sub_tid = t.ready["threads"]["subrunner"]
    for x in d["threads"]:
        if x["nativeId"] != sub_tid:
            continue
        n = x["native"]
        assert n["answered"] and n["merged"], (where, x["interpreter"], n)
        py = [f["name"] for f in n["frames"] if f["kind"] == "python"]
        assert py.index("sub_worker") < py.index("run_in_subinterpreter"), (where, py)


@pytest.mark.parametrize("python", SUB_PYTHONS)
def test_subinterp_live(python, spawn):
    t = spawn(python, "subinterp.py")
    iid = t.ready["interp"]
    # From outside, nothing loaded.
    r = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--json", check=True)
    check_threads(t, json.loads(r.stdout), "--no-inject")
    text = probing("-p", t.pid, "debug", "--dump", "--no-inject", check=True).stdout
    assert ", interp %d" % iid in text and SUB_LINE.search(text), text
    # The probe's GIL-free reader (the probe takes the main interpreter's GIL for names and
    # locals: a subinterpreter's frames get no locals, never a CPython call).
    s = check_threads(t, dump_json(t.pid), "dump")
    s = check_threads(t, dump_json(t.pid, "--locals"), "dump --locals")
    assert all("locals" not in f or f["locals"] == [] for f in s["frames"]), s
    text = probing("-p", t.pid, "debug", "--dump", check=True).stdout
    assert ", interp %d" % iid in text and SUB_LINE.search(text), text
    check_native(t, dump_json(t.pid, "--native"), "dump --native")
    # SQL
    r = probing("-p", t.pid, "query", "select thread_id, native_id, interp_id, is_main from "
                "python.threads", "--format", "json", check=True)
    rows = json.loads(r.stdout)
    sub = [x for x in rows if x["interp_id"] != 0]
    assert [(x["native_id"], x["interp_id"], x["is_main"]) for x in sub] == \
        [(t.ready["threads"]["subrunner"], iid, 0)], rows
    assert sub[0]["thread_id"] == s["id"], (rows, s["id"])
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", SUB_PYTHONS)
def test_subinterp_core(python, spawn, tmp_path):
    t, core, live, _ = crashed(python, spawn, tmp_path, "subinterp.py")
    check_threads(t, live, "--no-inject before the crash")
    d = json.loads(probing("dump", "--core", core, "--json", *rooted(python), check=True).stdout)
    check_threads(t, d, "dump --core")
    text = probing("dump", "--core", core, *rooted(python), check=True).stdout
    assert ", interp %d" % t.ready["interp"] in text and SUB_LINE.search(text), text
    d = json.loads(probing("dump", "--core", core, "--native", "--json", *rooted(python),
                           check=True).stdout)
    check_native(t, d, "dump --core --native")


@pytest.mark.parametrize("python", SUB_PYTHONS)
def test_subinterp_dap(python, spawn):
    """The debugger's threads: the subinterpreter's thread state is a thread of its own (its id
    unique, its name "subrunner (interp N)": threading's name of the OS thread), and its
    stackTrace is sub_worker's."""
    t = spawn(python, "subinterp.py")
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(probe_sock(t.pid))
    assert c.request("initialize", {"adapterID": "test"})["success"]
    assert c.request("attach", {})["success"]
    threads = c.request("threads")["body"]["threads"]
    assert len({x["id"] for x in threads}) == len(threads), threads
    sub = [x for x in threads if x["name"].endswith(" (interp %d)" % t.ready["interp"])]
    assert len(sub) == 1 and sub[0]["name"] == "subrunner (interp %d)" % t.ready["interp"], \
        threads
    assert [x["name"] for x in threads].count("subrunner") == 1, threads  # the main one's
    m = c.request("stackTrace", {"threadId": sub[0]["id"]})
    assert m["success"], m
    assert m["body"]["stackFrames"][0]["name"] == "sub_worker", m
    c.close()
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", SUB_PYTHONS)
def test_subinterp_perf(python, spawn):
    """perf --cc: a thread computing in a subinterpreter is sampled with its whole stack: the
    main interpreter's frames of the call that runs it (run_in_subinterpreter) below the
    subinterpreter's (sub_worker), in CPU and in wall mode. The main thread starts and ends
    threads meanwhile: a state freed while the handler walks the lists (it runs beside the main
    interpreter's GIL) made the walk stop before the runner's main state in 1 sample of ~100
    in CI, and in nearly every run with this churn; the walk now starts again."""
    t = spawn(python, "subinterp.py", args=("busy", "churn"))
    for mode in ("cpu", "wall"):
        probing("-p", t.pid, "perf", "--cc", "--mode", mode, "--duration", "1.5", check=True,
                timeout=60)
        folded = probing("-p", t.pid, "flamegraph", "-f", "folded", "--mode", mode,
                         check=True).stdout
        sub = [l for l in folded.splitlines() if "sub_worker (" in l]
        assert sub, (mode, folded[-2000:])
        bad = [l for l in sub if "run_in_subinterpreter (" not in l]
        assert not bad, (mode, bad[:3], len(bad), len(sub))
        assert all(l.index("run_in_subinterpreter (") < l.index("sub_worker (") for l in sub), \
            (mode, [l for l in sub if "run_in_subinterpreter (" not in l][:3])
        probing("-p", t.pid, "perf", "--stop", check=True)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", SUB_PYTHONS)
def test_subinterp_crash_report(spawn, python, tmp_path):
    """inject --crash: the report's "every thread" section has the subinterpreter's thread
    state, marked "interp N", with sub_worker's frame (read in the signal handler)."""
    t = spawn(python, "subinterp.py")
    path = tmp_path / "crash.txt"
    probing("-p", t.pid, "config", "crash.path=%s" % path, check=True)
    probing("-p", t.pid, "inject", "--crash", check=True)
    os.kill(t.pid, signal.SIGABRT)
    assert t.proc.wait(timeout=60) == -signal.SIGABRT
    report = open(path).read()  # the test's directory is at its own path in the sid root
    every = report[report.index("Python stacks of every thread"):]
    m = re.search(r"^Thread %d\b[^\n]* interp %d:\n  #0 +sub_worker \(<(string|script)>:6\)$" % (
        t.ready["threads"]["subrunner"], t.ready["interp"]), every, re.M)
    assert m, every
