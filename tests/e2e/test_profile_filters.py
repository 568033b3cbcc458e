# SPDX-License-Identifier: MIT
"""Profile filters (issue 38), on every CPython, against samples/perf_hot.py: its main thread
spends most of its time in hot_c_spin, a C function called through ctypes (which releases the
GIL around the call), a thread busy-0 runs pure Python (holding the GIL whenever it runs), and
a thread sleeper sleeps.
- perf.samples.gil: hot_c_spin's samples without the GIL, busy_py_loop's with it;
- flamegraph/record/top --gil: only what holds the GIL: busy_py_loop, not hot_c_spin;
- wall mode: the sleeper's off-CPU samples are left out by default (as py-spy does) and kept
  with --idle; a graph left empty by that says so and names --idle."""
import json
import re
import signal
import subprocess
import time

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS, probing
from test_flamegraph import parse_folded

SAMPLE = "perf_hot.py"


def query(pid, sql):
    return json.loads(probing("-p", pid, "query", "-f", "json", sql, check=True).stdout)


def leaf_share(stacks, name):
    total = sum(n for _, n in stacks)
    return sum(n for f, n in stacks if f[-1].startswith(name)) / total if total else 0


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_filter(spawn, python, tmp_path):
    t = spawn(python, SAMPLE, args=("--threads", "1"))
    probing("-p", t.pid, "perf", "--cc", "--duration", "3", check=True, timeout=120)
    probing("-p", t.pid, "perf", "--stop", check=True)
    # Per leaf function: how many samples held the GIL.
    rows = query(t.pid, "SELECT f.name AS leaf, SUM(s.gil = 1) AS held, SUM(s.gil = 0) AS free, "
                        "SUM(s.gil IS NULL) AS unknown FROM perf.samples s JOIN perf.frames f "
                        "ON f.stack_id = s.stack_id AND f.depth = 0 GROUP BY leaf")
    by = {r["leaf"]: r for r in rows}
    c = by.get("hot_c_spin")
    assert c and c["free"] >= 5 and c["held"] <= 0.1 * (c["held"] + c["free"]), rows
    assert sum(r["unknown"] for r in rows) == 0, rows
    busy = query(t.pid, "SELECT SUM(s.gil = 1) AS held, COUNT(*) AS n FROM perf.samples s "
                        "WHERE s.thread_name = 'busy-0'")[0]
    assert busy["n"] >= 5 and busy["held"] >= 0.7 * busy["n"], busy
    every = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", check=True).stdout)
    gil = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", "--gil",
                               check=True).stdout)
    assert leaf_share(every, "hot_c_spin") > 0.2, every[:5]
    assert leaf_share(gil, "hot_c_spin") < 0.05, gil[:5]
    assert any("busy_py_loop (" in x for f, _ in gil for x in f), gil[:5]
    assert sum(n for _, n in gil) < sum(n for _, n in every)
    # record --gil: the same filter on the samples it takes
    out = tmp_path / "gil.folded"
    probing("-p", t.pid, "record", "-o", out, "-d", "2", "--gil", check=True, timeout=60)
    rec = parse_folded(out.read_text())
    assert rec and leaf_share(rec, "hot_c_spin") < 0.05, rec[:5]
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:] + PYTHONS[:1])
def test_idle_and_top_filters(spawn, python):
    t = spawn(python, SAMPLE, args=("--sleeper",))
    probing("-p", t.pid, "perf", "--cc", "--mode", "wall", "--duration", "2", check=True,
            timeout=120)
    probing("-p", t.pid, "perf", "--stop", check=True)
    off = query(t.pid, "SELECT COUNT(*) AS n FROM perf.samples WHERE thread_name = 'sleeper' "
                       "AND on_cpu = 0")[0]["n"]
    assert off >= 5
    default = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", check=True).stdout)
    idle = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", "--idle",
                                check=True).stdout)
    sleeper = t.ready["tids"]["sleeper"]
    # (it wakes 20 times a second for microseconds: now and then caught running)
    on = query(t.pid, "SELECT COUNT(*) AS n FROM perf.samples WHERE thread_id = %d AND "
                      "on_cpu = 1" % sleeper)[0]["n"]
    assert sum(n for f, n in default if any("sleepy_wait (" in x for x in f)) == on, default
    assert sum(n for f, n in idle if any("sleepy_wait (" in x for x in f)) >= off + on, idle
    assert sum(n for _, n in idle) - sum(n for _, n in default) >= off
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", "--thread", sleeper)
    if on == 0:
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert "for thread %d on CPU (--idle adds the off-CPU ones)" % sleeper in r.stderr
    else:
        assert r.returncode == 0 and sum(n for _, n in parse_folded(r.stdout)) == on
    # top --gil in a pipe: the GIL's work only (the main thread's C call runs without it)
    p = subprocess.Popen([CLI, "-p", str(t.pid), "top", "--interval", "0.5", "--gil"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == "", err
    assert "all threads holding the GIL" in out, out[:500]
    own = [l for l in out.splitlines() if re.match(r"^\s*\d+\.\d%\s+\d+\.\d%.*hot_c_spin$", l)]
    assert all(l.split()[0] == "0.0%" for l in own), own
    t.check_output_clean()
