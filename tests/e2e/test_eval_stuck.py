# SPDX-License-Identifier: MIT
"""An evaluation that blocks in native code for good (threading.Event().wait(): it cannot be
interrupted) must not take every GIL feature with it: the probe retires the stuck worker and a
fresh one serves what comes next. At most PROBE_MAX_WORKERS (4) worker threads exist; once
three are stuck and the fourth is too, requests say truthfully what the evaluator is busy with.
A worker that was only slow (time.sleep) ends when its call returns, its answer delivered."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import CLI, PYTHONS, probing

STUCK = "import threading; threading.Event().wait()"
MAX_WORKERS = 4


def threads(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def stuck_eval(pid, seconds=1.5):
    """`timeout 1.5 probing -p PID eval STUCK`: the client gives up, the code stays stuck."""
    p = subprocess.Popen([CLI, "-p", str(pid), "eval", STUCK], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=10)
    else:
        raise AssertionError("the stuck evaluation answered: %s" % p.stderr)


def main_locals(pid):
    d = json.loads(probing("-p", pid, "debug", "--dump", "--locals", "--json",
                           check=True).stdout)
    assert "localsError" not in d, d.get("localsError")
    main = [th for th in d["threads"] if th["name"] == "MainThread"][0]
    return {l["name"] for f in main["frames"] for l in f.get("locals", [])}


@pytest.mark.parametrize("python", PYTHONS)
def test_stuck_evaluation_leaves_gil_features_working(python, spawn):
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    base = threads(t.pid)
    for round_ in range(MAX_WORKERS - 1):
        stuck_eval(t.pid)
        r = probing("-p", t.pid, "eval", "1+1")
        assert (r.returncode, r.stdout, r.stderr) == (0, "2\n", ""), (round_, r.stderr)
        assert main_locals(t.pid), "no locals in the main thread's frames"
        m = json.loads(probing("-p", t.pid, "memory", "--json", check=True).stdout)
        assert "pythonError" not in m and m["objects"], m.get("pythonError")
        assert threads(t.pid) == base + round_ + 1, "one fresh worker per stuck one"
    # The last worker stuck as well: no fifth thread, and the answers say why.
    stuck_eval(t.pid)
    r = probing("-p", t.pid, "eval", "1+1")
    assert r.returncode == 1
    assert re.match(r"probing: error: eval: the probe's evaluator is busy with evaluating "
                    r"`import threading; threading.Event\(\).wait\(\)` \(for \d+\.\d s; 3 "
                    r"earlier ones never returned\): nothing was run; interrupt it with 'probing "
                    r"-p PID eval --interrupt', or end what it waits for\n$",
                    r.stderr), r.stderr
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--locals", "--json",
                           check=True).stdout)
    assert d["localsError"].startswith("the probe's evaluator is busy with evaluating `import "
                                       "threading"), d["localsError"]
    assert len(d["threads"]) == 3, d["threads"]  # the GIL-free dump, without our workers
    m = json.loads(probing("-p", t.pid, "memory", "--json", check=True).stdout)
    assert m["pythonError"].startswith("the probe's evaluator is busy with"), m["pythonError"]
    r = probing("-p", t.pid, "query", "SELECT count(*) FROM python.objects")
    assert r.returncode == 1 and r.stderr.startswith(
        "probing: error: python.objects needs the GIL: the probe's evaluator is busy with "
        "evaluating `import threading;"), r.stderr
    assert r.stderr.endswith(": interrupt it with 'probing -p PID eval --interrupt'\n"), r.stderr
    assert threads(t.pid) == base + MAX_WORKERS - 1
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_slow_evaluation_beside_a_fresh_worker(python, spawn):
    """A slow evaluation (its client waits) and quick ones beside it: each gets its own answer
    and only its own output; the retired worker's thread ends once the slow call returns."""
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    base = threads(t.pid)
    slow = subprocess.Popen([CLI, "-p", str(t.pid), "eval",
                             "import time\nprint('slow-1')\ntime.sleep(3)\nprint('slow-2')\n'done'"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    for i in range(3):
        r = probing("-p", t.pid, "eval", "print('quick-%d')\n%d * 7" % (i, i))
        assert (r.returncode, r.stdout, r.stderr) == (0, "quick-%d\n%d\n" % (i, i * 7), ""), \
            r.stderr
    assert threads(t.pid) == base + 1, "a fresh worker beside the slow one"
    out, err = slow.communicate(timeout=30)
    assert (slow.returncode, out, err) == (0, "slow-1\nslow-2\n'done'\n", "")
    deadline = time.time() + 10
    while threads(t.pid) != base and time.time() < deadline:
        time.sleep(0.1)
    assert threads(t.pid) == base, "the retired worker ended"
    # The target's own streams are back (seen from a thread of its own after the evaluation).
    probing("-p", t.pid, "eval", "import sys, threading, time\n_probing_chk = []\n"
            "threading.Thread(target=lambda: (time.sleep(0.5), _probing_chk.append((sys.stdout is "
            "sys.__stdout__, sys.stderr is sys.__stderr__)))).start()", check=True)
    time.sleep(1.5)
    r = probing("-p", t.pid, "eval", "_probing_chk.pop()", check=True)
    assert r.stdout == "(True, True)\n"
    probing("-p", t.pid, "eval", "del _probing_chk", check=True)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_interrupt_from_another_client(python, spawn):
    """`eval --interrupt` (what the busy message offers) stops a runaway evaluation that
    another client started."""
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    r = probing("-p", t.pid, "eval", "--interrupt", check=True)
    assert r.stdout == "no evaluation was running\n"
    runaway = subprocess.Popen([CLI, "-p", str(t.pid), "eval", "while True: pass"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    assert runaway.poll() is None
    r = probing("-p", t.pid, "eval", "--interrupt", check=True)
    assert r.stdout == ("interrupted the running evaluation (KeyboardInterrupt when it next "
                        "runs Python code)\n")
    out, err = runaway.communicate(timeout=20)
    assert runaway.returncode == 1 and err.rstrip().endswith("KeyboardInterrupt"), err
    r = probing("-p", t.pid, "eval", "1+1", check=True)
    assert r.stdout == "2\n"
    r = probing("-p", t.pid, "eval", "--interrupt", "1")
    assert r.returncode == 2 and r.stderr == ("probing: error: eval: --interrupt takes no code: "
                                              "see 'probing eval --help'\n")
    assert "       probing -p PID eval --interrupt\n" in probing("eval", "--help", check=True).stdout
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_interrupt_of_a_native_wait_says_so(python, spawn):
    """An evaluation waiting in a C call (here libc's sleep) cannot be interrupted until the call
    returns: `eval --interrupt` says so instead of "interrupted" (issue 37, item 10); the
    KeyboardInterrupt then comes when the call returns."""
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    waiting = subprocess.Popen([CLI, "-p", str(t.pid), "eval",
                                "import ctypes; ctypes.CDLL(None).sleep(3)"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    assert waiting.poll() is None
    r = probing("-p", t.pid, "eval", "--interrupt", check=True)
    assert r.stdout.startswith("not interrupted yet: the evaluation waits in native code "
                               "(system call "), r.stdout
    out, err = waiting.communicate(timeout=20)
    assert waiting.returncode == 1 and err.rstrip().endswith("KeyboardInterrupt"), err
    t.assert_responsive()
    t.check_output_clean()
