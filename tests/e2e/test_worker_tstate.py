# SPDX-License-Identifier: MIT
"""While the debugger holds the target stopped, the probe's GIL worker keeps its own thread
state between jobs (taking the GIL is then cheap), and polls for the next job and the loop for
its completion. What the target could see of it, one more thread state in its interpreter, is
gone once the target runs again (continued or detached). samples/tstates.py counts its
interpreter's thread states (C API through ctypes) and prints the count with each tick."""
import re
import time

import pytest

from conftest import PYTHONS
from dbgutil import Debugger, assert_clean


def counts_after(t, n_ticks=4, timeout=10):
    """The thread-state counts of the next n_ticks ticks."""
    start = len(re.findall(r"^tick \d+ value=(\d+)", t.output(), re.M))
    deadline = time.time() + timeout
    while True:
        got = [int(v) for v in re.findall(r"^tick \d+ value=(\d+)", t.output(), re.M)][start:]
        if len(got) >= n_ticks:
            return got
        assert time.time() < deadline, "the target stopped ticking: %r" % t.errors()[-2000:]
        time.sleep(0.05)


def settles_at(t, n, timeout=10):
    """n thread states in 4 ticks in a row, within timeout (a job that began as the target
    resumed may hold the worker's a moment longer)."""
    deadline = time.time() + timeout
    while True:
        got = counts_after(t)
        if set(got) == {n}:
            return
        assert time.time() < deadline, "thread states: %r, not %d" % (got, n)


def pause_and_evaluate(d, main):
    d.req("pause", {"threadId": main})
    d.stopped()
    fid = d.frames(main)[0]["id"]
    for _ in range(20):  # jobs in a row while stopped: one thread state serves them all
        r = d.req("evaluate", {"expression": "1 + 1", "frameId": fid, "context": "watch"})
        assert r["body"]["result"] == "2"
    assert d.req("threads")["body"]["threads"]


@pytest.mark.parametrize("python", PYTHONS)
def test_worker_thread_state_kept_only_while_stopped(python, spawn):
    t = spawn(python, "tstates.py")
    main = t.ready["main"]
    d = Debugger(t, sample="tstates.py")
    assert set(counts_after(t)) == {1}  # the main thread only: the probe holds none while idle
    # The count sees a thread state more: a thread of the target's own, for half a second.
    d.req("evaluate", {"expression": "threading.Thread(target=time.sleep, args=(0.5,)).start()",
                       "context": "repl"})
    assert 2 in counts_after(t, 3)
    time.sleep(0.6)
    assert set(counts_after(t)) == {1}
    # Stopped, many jobs; continued: the worker's thread state is gone with the stop (the
    # debugger's own job at the resume drops it).
    pause_and_evaluate(d, main)
    d.req("continue", {"threadId": main})
    settles_at(t, 1)
    r = d.req("evaluate", {"expression": "3 * 3", "context": "repl"})
    assert r["body"]["result"] == "9"
    assert set(counts_after(t)) == {1}
    # A detach while stopped: the debugger's clean-up resumes the target and drops it.
    pause_and_evaluate(d, main)
    d.req("disconnect")
    assert_clean(t)
    settles_at(t, 1)
    t.check_output_clean()
