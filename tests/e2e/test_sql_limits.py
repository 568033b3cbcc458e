# SPDX-License-Identifier: MIT
"""A read-only query is bounded in memory and time (docs/tables.md "Limits"), and the probe's
SQLite limits never reach the target's own use of SQLite.

- Values longer than query.max_bytes (SQLITE_LIMIT_LENGTH) fail at once: the randomblob
  queries that took a target to 7.8 GB and 38 s of CPU before get one clear error.
- A sort holding more than store.max_memory_bytes fails with "out of memory" naming the setting
  (the heap limit of the probe's own, statically linked, SQLite; sorts stay in memory).
- A CPU-bound query with big values is interrupted by query.timeout_ms.
- Meanwhile the target's peak RSS (VmHWM) grows by less than PEAK_BOUND (not compared under
  ASan) and it spends less than CPU_BOUND seconds of CPU on all of it; the probe answers a
  normal query after.
- A target using Python's sqlite3 (the system libsqlite3) with 40 MB blobs keeps working with
  store.max_memory_bytes at its 16 MiB minimum while a probe query hits that limit.
"""
import os
import re
import subprocess
import time

import pytest

from conftest import PYTHONS, probing

MiB = 1 << 20
PEAK_BOUND = 400 * MiB  # store.max_memory_bytes (256 MiB) + the result and its JSON, with room
CPU_BOUND = 12.0        # one query.timeout_ms (5 s) interrupted, the rest fail at once
# make asan: the target preloads ASan, whose quarantine holds freed memory (256 MB) and whose
# allocator rounds up: the peak is not compared there (as in test_soak.py).
SANITIZED = bool(os.environ.get("PROBING_TARGET_PRELOAD"))

FOUR_BLOBS = ("SELECT length(a)+length(b)+length(c)+length(d) FROM (SELECT "
              "randomblob(999999999) a, randomblob(999999999) b, randomblob(999999999) c, "
              "randomblob(999999999) d)")
ONE_BLOB = "SELECT length(randomblob(999999999))"
BIG_SORT = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
            "SELECT count(*) FROM (SELECT randomblob(1000000) b FROM c ORDER BY b)")
ENDLESS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
           "SELECT count(*) FROM c WHERE length(randomblob(1000000)) > 0")


def status_bytes(pid, key):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M)
    return int(m.group(1)) * 1024


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_query(pid, sql):
    t0 = time.monotonic()
    r = probing("-p", pid, "query", sql, timeout=120)
    return r, time.monotonic() - t0


@pytest.mark.parametrize("python", PYTHONS)
def test_query_bounded_in_memory_and_time(python, spawn):
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "query", "SELECT 1", check=True)  # injected, store open
    base_hwm, cpu0 = status_bytes(t.pid, "VmHWM"), cpu_seconds(t.pid)
    for sql in (FOUR_BLOBS, ONE_BLOB):
        r, took = timed_query(t.pid, sql)
        assert r.returncode == 1 and r.stderr == (
            "probing: error: SQL error: a string or blob over 16777216 bytes "
            "(query.max_bytes, at least 1048576)\n"), r.stderr
        assert took < 5, took
    r, took = timed_query(t.pid, BIG_SORT)
    assert r.returncode == 1 and r.stderr == (
        "probing: error: SQL error: the query needs more memory than the probe's SQLite "
        "may hold (store.max_memory_bytes = 268435456 bytes): narrow it\n"), r.stderr
    assert took < 5, took
    r, took = timed_query(t.pid, ENDLESS)
    assert r.returncode == 1 and "query interrupted after 5000 ms (query.timeout_ms)" in r.stderr
    assert took < 5 + 2, took
    peak, cpu = status_bytes(t.pid, "VmHWM") - base_hwm, cpu_seconds(t.pid) - cpu0
    print("peak RSS growth %.0f MiB, CPU %.1f s" % (peak / MiB, cpu))
    assert SANITIZED or peak < PEAK_BOUND, "peak RSS grew by %d MiB" % (peak // MiB)
    assert cpu < CPU_BOUND, "the target spent %.1f s of CPU" % cpu
    r = probing("-p", t.pid, "query", "SELECT count(*) AS n FROM python.threads", "-f", "csv",
                check=True)
    assert int(r.stdout.split()[1]) >= 3
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_target_sqlite_unaffected_by_probe_limits(python, spawn):
    t = spawn(python, "sqlite_user.py")
    probing("-p", t.pid, "config", "store.max_memory_bytes=%d" % (16 * MiB), check=True)
    with open("/proc/%d/maps" % t.pid) as f:
        maps = f.read()
    # The target's own SQLite: the system libsqlite3 loaded by _sqlite3, or (python-build-
    # standalone) a private copy built into libpython with _sqlite3 a built-in module.
    builtin = probing("-p", t.pid, "eval", "'_sqlite3' in __import__('sys').builtin_module_names",
                      check=True).stdout.strip()
    assert "libsqlite3.so" in maps or builtin == "True", maps
    lib = re.search(r"(/\S*libprobing-[\d.]+\.so)$", maps, re.M).group(1)
    needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True,
                            check=True).stdout
    assert "libsqlite3" not in needed, "the probe must not share the target's libsqlite3"
    r = probing("-p", t.pid, "query", BIG_SORT)
    assert r.returncode == 1 and "store.max_memory_bytes = 16777216 bytes" in r.stderr, r.stderr
    before = t.ticks()
    t.wait_line(r"^tick %d value=40000000$" % (before + 3), timeout=30)
    t.assert_responsive()
    t.check_output_clean()
