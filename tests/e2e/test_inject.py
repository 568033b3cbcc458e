# SPDX-License-Identifier: MIT
"""Injection leaves the target as it was and copes with clients racing to inject.

- Six first-time commands at once on a fresh target: one injects (holding a lock on that pid
  in the CLI's private directory), the others wait for it and use the probe it loaded.
- The hijacked thread's errno: samples/errno_loop.py's main thread (the one the injector takes
  over) sets errno in a C loop and checks it continuously; an injection must not change it.
"""
import os
import re

import pytest

from conftest import OLDEST_HOST, PYTHONS, probing


@pytest.mark.parametrize("python", PYTHONS)
def test_injection_keeps_the_hijacked_threads_errno(python, spawn):
    t = spawn(python, "errno_loop.py", args=("4",))
    r = probing("-p", t.pid, "inject", check=True)
    assert t.maps_count() == 1, r.stdout
    m = t.wait_line(r"^ok errno changes (\d+) first (-?\d+)$", timeout=30)
    assert t.proc.wait(timeout=10) == 0
    assert (int(m.group(1)), int(m.group(2))) == (0, 0), (
        "the injection changed the hijacked thread's errno %s time(s), first to %s"
        % (m.group(1), m.group(2)))
    t.check_output_clean()


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in (OLDEST_HOST, "3.12", "debian")])
def test_first_commands_at_once_all_succeed(python, spawn):
    """Six first-time commands at once on each of four fresh targets (VS Code and a script at
    the same time): one injects, the others wait for it and use the probe it loaded."""
    import subprocess
    from conftest import CLI
    failures = []
    for round_ in range(4):
        t = spawn(python, "threads.py")
        procs = [subprocess.Popen([CLI, "-p", str(t.pid), "debug", "--dump", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        for p in procs:
            out, err = p.communicate(timeout=90)
            if p.returncode != 0 or '"threads"' not in out:
                failures.append("round %d: exit %d: %s" % (round_, p.returncode, err.strip()))
        assert t.maps_count() == 1
        lock = "/tmp/probing-%d/%d.inject.lock" % (os.geteuid(), t.pid)
        assert not os.path.exists(lock), "lock file left behind"
        t.assert_responsive()
        t.check_output_clean()
        t.kill()
    assert not failures, "%d of 24 commands failed: %s" % (len(failures), failures[:3])
