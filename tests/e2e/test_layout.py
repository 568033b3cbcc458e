# SPDX-License-Identifier: MIT
"""The probe's compiled-in structure offsets against the ones CPython 3.13+ publishes
(_Py_DebugOffsets, probe/pyrt/layout.c): a late 3.13 (Debian sid's 3.13.x) is read with the
probe built from pyenv's 3.13.0 headers because they agree, and an interpreter whose published
offsets disagree (samples/moved_layout.py) is refused with one line, never read wrongly, and
keeps running."""
import re

import pytest

from conftest import PYTHONS, dump_json, probing

MODERN = [p for p in PYTHONS if re.match(r"3\.(1[3-9])", p.id)]


@pytest.mark.parametrize("python", MODERN)
@pytest.mark.parametrize("what,needle", [
    ("version", "debug offsets are for CPython 3.99"),
    ("frame", "_PyInterpreterFrame.previous at offset"),
])
def test_moved_layout_refused(python, spawn, what, needle):
    t = spawn(python, "moved_layout.py", args=(what,))
    r = probing("-p", t.pid, "debug", "--dump")
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probing: error: "), r.stderr
    assert needle in lines[0] and "rebuild the probe" in lines[0], lines[0]
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", MODERN)
def test_matching_layout_read(python, spawn):
    t = spawn(python)
    d = dump_json(t.pid)
    assert any(f["name"] == "tick_forever" for th in d["threads"] for f in th["frames"]), d
