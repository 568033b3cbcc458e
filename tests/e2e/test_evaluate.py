# SPDX-License-Identifier: MIT
"""DAP evaluate against a running target through the raw test client: repl/watch/hover/
clipboard contexts, output events before the response, exceptions as errors with the
traceback, frameId refused while the thread runs, and the % console commands (%sql, %help, unknown). Evaluating in a stopped frame
is in test_debug_variables.py."""
import os

import pytest

from conftest import PYTHONS, probing
from dapclient import DAP


def connect(t):
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(t.sock)
    r = c.request("initialize", {"adapterID": "test"})
    assert r["success"]
    assert r["body"].get("supportsEvaluateForHovers") is True
    assert c.request("attach", {"probingClient": "cli"})["success"]
    return c


def evaluate(c, expression, context="repl", **kw):
    before = len(c.events)
    r = c.request("evaluate", dict(expression=expression, context=context, **kw))
    return r, [e for e in c.events[before:] if e["event"] == "output"]


@pytest.mark.parametrize("python", PYTHONS)
def test_evaluate(python, spawn):
    t = spawn(python, "globals.py")
    c = connect(t)
    r, out = evaluate(c, "print('to-client'); message")
    assert r["success"] and r["body"]["result"] == "'hello'" and r["body"]["type"] == "str"
    assert r["body"]["variablesReference"] == 0
    assert [(e["body"]["category"], e["body"]["output"]) for e in out] == [
        ("stdout", "to-client\n")]
    for ctx in ("watch", "hover", "clipboard"):
        r, _ = evaluate(c, "len(particles) + 1", ctx)
        assert r["success"] and r["body"]["result"] == "5001", (ctx, r)
    r, _ = evaluate(c, "x = 1", "watch")
    assert not r["success"] and "SyntaxError" in r["message"]
    r, out = evaluate(c, "import sys as _s; print('oops', file=_s.stderr); del _s; {}['k']")
    assert not r["success"] and out[0]["body"] == {"category": "stderr", "output": "oops\n"}
    assert r["message"].startswith("Traceback (most recent call last):")
    assert r["message"].endswith("KeyError: 'k'")
    # Only the debugging client gets references (test_debug_variables.py); this is a CLI one.
    r, _ = evaluate(c, "particles[:3]", "watch")
    assert r["success"] and r["body"]["variablesReference"] == 0, r
    r, _ = evaluate(c, "1", frameId=(123456789 << 12) | 3)
    assert not r["success"] and "no such frame" in r["message"], r
    frames = c.request("stackTrace", {"threadId": t.pid})["body"]["stackFrames"]
    r, _ = evaluate(c, "1", frameId=frames[0]["id"])
    assert not r["success"] and "thread %d is not stopped" % t.pid in r["message"], r
    r, _ = evaluate(c, "1", "bogus")
    assert not r["success"] and "arguments.context" in r["message"]
    c.request("disconnect")
    t.assert_responsive()
    assert "to-client" not in t.output() and "oops" not in t.errors()
    t.check_output_clean()


def test_evaluate_console_commands(spawn):
    t = spawn("/usr/bin/python3", "globals.py")
    c = connect(t)
    r, _ = evaluate(c, "%sql SELECT 1 AS one, 'x' AS two")
    assert r["success"], r
    lines = r["body"]["result"].splitlines()
    assert lines[0].split() == ["one", "two"] and lines[2].split() == ["1", "x"]
    assert lines[-1] == "(1 row)"
    r, _ = evaluate(c, "%sql SELEC nonsense")
    assert not r["success"] and "syntax error" in r["message"]
    r, _ = evaluate(c, "%help")
    assert r["success"] and "%sql" in r["body"]["result"] and "%help" in r["body"]["result"]
    r, _ = evaluate(c, "%frobnicate now")
    assert not r["success"] and r["message"] == "unknown console command '%frobnicate': try %help"
    c.request("disconnect")
    t.assert_responsive()
    t.check_output_clean()
