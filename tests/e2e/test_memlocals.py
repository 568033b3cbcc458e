# SPDX-License-Identifier: MIT
"""Locals when the GIL cannot be had (issue 36 item 5): samples/stuck_gil_locals.py holds the GIL
forever in a C call with locals of every simple type in that frame and in a waiting thread's
frame. debug --dump --locals (the probe's GIL worker times out), debug --dump --no-inject
--locals and dump --core --locals (gdb's gcore) read them from memory, no GIL, and show them
exactly; "localsVia" says "memory"."""
import json
import os

import pytest

from conftest import HOST_PYTHONS, PYTHONS, bp, probing
from test_core import gcore

BIG = str(2 ** 100 + 7)
# name -> (type, value) as the frame holding the GIL must show them
WANT = {
    "i_small": ("int", "42"), "i_neg": ("int", "-7"), "i_zero": ("int", "0"),
    "i_big": ("int", BIG), "i_nbig": ("int", "-" + BIG),
    "f": ("float", "3.25"), "f_tiny": ("float", "1e-07"), "f_huge": ("float", "1e+22"),
    "f_third": ("float", repr(1 / 3)),
    "b_true": ("bool", "True"), "b_false": ("bool", "False"), "n": ("NoneType", "None"),
    "s_ascii": ("str", "'hello'"), "s_quote": ("str", "\"it's\""),
    "s_latin": ("str", "'caf\xe9'"), "s_ucs2": ("str", "'\u4e2d\u6587'"),
    "s_ucs4": ("str", "'\U0001f600'"), "s_esc": ("str", "'a\\nb\\t\\\\'"),
    "s_long": ("str", "'" + "x" * 80 + "'...(300 chars)"),
    "by": ("bytes", "b\"ab\\x00\\xff'\""),
    "t": ("tuple", "(1, 'two', 3.0, None)"), "t1": ("tuple", "(5,)"),
    "l": ("list", "[1, [...], 's', b'b']"),
    "l_long": ("list", "[0, 1, 2, 3, 4, 5, 6, 7, ...(20 items)]"),
    "d": ("dict", "{'k': 1, 2: 'v'}"),
    "captured": ("str", "'cell'"),
}
WORKER = {"i_small": "42", "s_ascii": "'hello'", "t": "(1, 'two', 3.0, None)",
          "d": "{'k': 1, 2: 'v'}", "w_local": "'waiting'"}


def check(d):
    assert d["localsVia"] == "memory", d.get("localsVia")
    main = [x for x in d["threads"] if x["main"]][0]
    top = main["frames"][0]
    assert top["name"] == "hold_gil_forever"
    assert top["line"] == bp("stuck_gil_locals.py", "stuck_call")
    got = {l["name"]: (l["type"], l["value"]) for l in top["locals"]}
    for k, v in WANT.items():
        assert got.get(k) == v, (k, got.get(k), v)
    assert got["obj"][0] == "Point" and got["obj"][1].startswith("<Point object at 0x")
    assert got["v"][1].startswith("{'i_small': 42, 'i_neg': -7, ") and \
        got["v"][1].endswith(", ...(26 items)}")
    waiter = [x for x in d["threads"] if x["frames"] and x["frames"][0]["name"] == "worker"]
    assert len(waiter) == 1
    wl = {l["name"]: l["value"] for l in waiter[0]["frames"][0]["locals"]}
    for k, v in WORKER.items():
        assert wl.get(k) == v, (k, wl.get(k), v)


def dump(*args):
    return json.loads(probing(*args, "--json", check=True).stdout)


@pytest.mark.parametrize("python", PYTHONS)
def test_locals_without_gil(python, spawn):
    t = spawn(python, "stuck_gil_locals.py")
    check(dump("-p", t.pid, "debug", "--dump", "--no-inject", "--locals"))
    d = dump("-p", t.pid, "debug", "--dump", "--locals")
    assert d["gil"]["available"] is False
    assert "locals read from memory without it" in d["localsError"]
    check(d)
    text = probing("-p", t.pid, "debug", "--dump", "--locals", check=True).stdout
    assert "locals read from memory without it (simple values only)" in text
    assert "        i_big = %s  (int)\n" % BIG in text
    text = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--locals", check=True).stdout
    assert "note: locals read from memory without the GIL (simple values only)" in text
    assert "        s_esc = 'a\\nb\\t\\\\'  (str)\n" in text
    assert t.proc.poll() is None


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_core_locals(python, spawn, tmp_path):
    t = spawn(python, "stuck_gil_locals.py")
    core = gcore(t.pid, tmp_path / "core")
    try:
        check(dump("dump", "--core", core, "--locals"))
        plain = dump("dump", "--core", core)
        assert "localsVia" not in plain
        assert all("locals" not in f for x in plain["threads"] for f in x["frames"])
    finally:
        os.unlink(core)
