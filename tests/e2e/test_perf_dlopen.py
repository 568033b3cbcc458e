# SPDX-License-Identifier: MIT
"""perf --cc never hangs a target that loads and unloads libraries (issue 15 item 1), on every
CPython: samples/dlopen_loop.py runs 2 threads looping dlopen/dlclose, one walking the loaded
objects with dl_iterate_phdr (its callback, outside the loader, runs with the loader's lock held)
and one running varied Python, while the sampler runs at 1000 Hz for WINDOW seconds. A signal handler that needs the dynamic loader's lock (which a thread
interrupted inside dlopen/dlclose or dl_iterate_phdr holds) would leave every thread in futex_wait for good; here,
throughout the window, the main thread ticks and the loaders progress, no thread of the target
sits in futex_wait at every look, and afterwards debug --dump and perf --stop answer, with
samples recorded, some of them in the loader threads."""
import os
import re
import time

import pytest

from conftest import PYTHONS, dump_json, probing
from test_perf_cc import query

pytestmark = pytest.mark.serial  # sample rates under a loader loop

SAMPLE = "dlopen_loop.py"
WINDOW = 8.0  # seconds at 1000 Hz; the unsafe handler hung 3.11 within 2-5 s


def wchan(pid, tid):
    try:
        with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
            return f.read().strip()
    except OSError:
        return "gone"


def loops(t):
    """(dlopen/dlclose loops, module walks) so far."""
    found = re.findall(r"^ok loops (\d+) walks (\d+)$", t.output(), re.M)
    return tuple(map(int, found[-1])) if found else (0, 0)


@pytest.mark.parametrize("python", PYTHONS)
def test_sampling_a_loader_loop_never_hangs(python, spawn):
    t = spawn(python, SAMPLE, args=("--walk",))
    own = sorted(os.listdir("/proc/%d/task" % t.pid))
    assert len(own) >= 5, own  # main, 2 loaders, walker, worker
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "1000", timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    ticks0, loops0 = t.ticks(), loops(t)
    always_futex = set(own)
    end = time.time() + WINDOW
    while time.time() < end:
        for tid in list(always_futex):
            if "futex" not in wchan(t.pid, tid):
                always_futex.discard(tid)
        assert t.proc.poll() is None, "target died: %s" % t.errors()[-2000:]
        time.sleep(0.05)
    states = {tid: wchan(t.pid, tid) for tid in os.listdir("/proc/%d/task" % t.pid)}
    assert not always_futex, "threads in futex_wait for the whole window: %r (all: %r)" % (
        sorted(always_futex), states)
    assert t.ticks() >= ticks0 + WINDOW * 10 * 0.3, (ticks0, t.ticks(), states)
    now = loops(t)
    assert now[0] > loops0[0] and now[1] > loops0[1], (loops0, now, states)
    dump = dump_json(t.pid)
    assert len(dump["threads"]) >= 5
    r = probing("-p", t.pid, "perf", "--stop", timeout=30)
    assert r.returncode == 0 and "perf --cc stopped" in r.stdout, r.stdout + r.stderr
    rows = query(t.pid, "SELECT thread_name, COUNT(*) FROM perf.samples GROUP BY thread_id")
    by = dict((name, n) for name, n in rows)
    assert by.get("loader-0", 0) + by.get("loader-1", 0) >= 50, rows
    t.assert_responsive()
    t.check_output_clean()
