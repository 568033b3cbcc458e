# SPDX-License-Identifier: MIT
"""Injection leaves the target as it was and copes with clients racing to inject.

- The hijacked thread's errno: samples/errno_loop.py's main thread (the one the injector takes
  over) sets errno in a C loop and checks it continuously; an injection must not change it.
"""
import re

import pytest

from conftest import PYTHONS, probing


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
