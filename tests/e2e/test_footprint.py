# SPDX-License-Identifier: MIT
"""The probe leaves nothing in the program's object heap: injected, a debugger attached (with
`threads` and a running thread's `stackTrace`), a stack dump with locals, a query of the
python tables, and the client gone, `sys.getallocatedblocks()` in the program is what it was
before the injection, to the block.

Why a block matters: an object of ours kept alive (a string held by CPython's type attribute
cache, say) sits in one of the allocator's size classes for good, which changes how the
program's own objects reuse that class's blocks; on 3.13 that alone made a call-heavy loop
about 2% slower in every later call (docs/benchmarks.md, stop 32).

samples/heap_watch.py prints the count every 50 ms ("tick N value=B"), from a loop that
leaves nothing behind; these tests compare the count over a stretch of ticks before and after
each step. What `evaluate` runs is the user's code and may import (docs/protocol.md): not
checked here."""
import re
import time

import pytest

from conftest import PYTHONS, dump_json, probing
from dbgutil import Debugger

STEADY = 10  # ticks (0.5 s) that must all show the same count


def counts(t):
    return [int(v) for v in re.findall(r"^tick \d+ value=(\d+)$", t.output(), re.M)]


def steady(t, after=0, timeout=15):
    """The count once STEADY ticks in a row, all printed after the first `after`, agree."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        c = counts(t)[after:]
        if len(c) >= STEADY and len(set(c[-STEADY:])) == 1:
            return c[-1]
        time.sleep(0.05)
    raise AssertionError("the object count did not settle: %r" % counts(t)[after:][-40:])


def settle(t, baseline, step):
    """The count after `step` (ticks from now on) is the baseline again."""
    n = len(counts(t))
    got = steady(t, after=n)
    assert got == baseline, "%s left %+d object blocks in the program (%d -> %d)" % (
        step, got - baseline, baseline, got)


@pytest.mark.parametrize("python", PYTHONS)
def test_probe_leaves_no_objects(python, spawn):
    t = spawn(python, "heap_watch.py")
    baseline = steady(t)
    probing("-p", t.pid, "inject", check=True)
    # The probe reads threading's names under the GIL as it starts: give that time to happen.
    time.sleep(0.3)
    settle(t, baseline, "the injection")

    d = Debugger(t, sample="heap_watch.py", inject=False)
    threads = d.req("threads")["body"]["threads"]
    assert any(th["name"] == "heap-worker" for th in threads), threads
    main = [th for th in threads if th["name"] == "MainThread"][0]
    assert d.frames(main["id"])[0]["name"] == "main"
    settle(t, baseline, "a debugger attached (threads, stackTrace)")

    dump = dump_json(t.pid, "--locals")
    assert any(th["name"] == "heap-worker" for th in dump["threads"])
    settle(t, baseline, "a stack dump with locals")

    probing("-p", t.pid, "query", "SELECT count(*) FROM python.threads", check=True)
    settle(t, baseline, "a query of python.threads")

    d.req("disconnect")
    d.c.close()
    settle(t, baseline, "the debugger's disconnect")
    t.check_output_clean()
