# SPDX-License-Identifier: MIT
"""probing memory: /proc figures against /proc/PID/status, objects by type with the sample's
own class, tracemalloc started, listing the sample's allocation site, then stopped; CUDA."""
import json
import re

import pytest

from conftest import PYTHONS, bp, probing


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1))


@pytest.mark.parametrize("python", PYTHONS)
def test_memory(python, spawn):
    t = spawn(python, "globals.py")
    r = probing("-p", t.pid, "memory", "--top", "40", check=True)
    out = r.stdout
    rss = int(re.search(r"^  rss +(\d+) kB", out, re.M).group(1))
    vms = int(re.search(r"^  vms +(\d+) kB", out, re.M).group(1))
    assert abs(rss - status_kb(t.pid, "VmRSS")) < 0.2 * rss
    assert abs(vms - status_kb(t.pid, "VmSize")) < 0.2 * vms
    m = re.search(r"^  __main__\.Particle +(\d+) +(\d+)$", out, re.M)
    assert m and int(m.group(1)) == 5000 and int(m.group(2)) >= 5000 * 16, out
    assert "sys.getsizeof" in out and "gc: enabled; counts " in out
    assert "tracemalloc: not tracing" in out
    assert "CUDA: none: torch is not imported" in out
    r = probing("-p", t.pid, "memory", "--trace", "start", check=True)
    assert "tracemalloc: started, tracing" in r.stdout
    t.wait_line(r"^tick 20$")
    d = json.loads(probing("-p", t.pid, "memory", "--json", check=True).stdout)
    assert d["tracemalloc"]["tracing"] is True
    site = [s for s in d["tracemalloc"]["top"] if s["file"].endswith("globals.py")]
    assert site and site[0]["line"] == bp("globals.py", "grow_alloc") and site[0]["size"] > 1000
    assert abs(d["process"]["rss"] / 1024 - status_kb(t.pid, "VmRSS")) < 0.2 * d["process"]["rss"] / 1024
    r = probing("-p", t.pid, "memory", "--trace", "stop", check=True)
    assert "tracemalloc: stopped" in r.stdout
    d = json.loads(probing("-p", t.pid, "memory", "--json", check=True).stdout)
    assert d["tracemalloc"]["tracing"] is False
    assert probing("-p", t.pid, "memory", "--trace", "bogus").returncode == 2
    t.assert_responsive()
    t.check_output_clean()
