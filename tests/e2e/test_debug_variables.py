# SPDX-License-Identifier: MIT
"""Inspecting a stopped thread through raw DAP: scopes, variables (locals, globals, paging, a
set, an object's __dict__ and __slots__), setVariable and evaluate in a frame changing what the
program prints, exceptions with tracebacks, stale references after continue, source of code
without a file (disassembly, then linecache), and a torch tensor shown by its metadata."""
import os
import re
import subprocess
import time

import pytest

from conftest import PYTHONS, SAMPLES, bp, probing
from dapclient import DAP

SAMPLE = os.path.join(SAMPLES, "debuggee.py")


def debugger(t):
    """Injects and attaches as the debugging client."""
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(t.sock)
    assert c.request("initialize", {"adapterID": "test"})["success"]
    assert c.request("attach", {})["success"]
    assert c.request("configurationDone")["success"]
    return c


def wait_event(c, name, timeout=10):
    deadline = time.time() + timeout
    while True:
        for i, e in enumerate(c.events):
            if e["event"] == name:
                return c.events.pop(i)
        if time.time() > deadline:
            raise AssertionError("no %r event within %ss; got %r" % (name, timeout, c.events))
        try:
            m = c.read(timeout=max(0.1, deadline - time.time()))
        except TimeoutError:
            continue
        if m["type"] == "event":
            c.events.append(m)


def ok(r):
    assert r["success"], r
    return r["body"]


def stop_at(c, marker):
    """Stops the main thread at the '# BP: marker' line (then clears the breakpoint); returns
    the top frame."""
    c.events.clear()
    b = ok(c.request("setBreakpoints", {"source": {"path": SAMPLE},
                                        "breakpoints": [{"line": bp("debuggee.py", marker)}]}))
    assert b["breakpoints"][0]["verified"], b
    ev = wait_event(c, "stopped")
    ok(c.request("setBreakpoints", {"source": {"path": SAMPLE}, "breakpoints": []}))
    frames = ok(c.request("stackTrace", {"threadId": ev["body"]["threadId"]}))["stackFrames"]
    return ev["body"]["threadId"], frames[0]


def scopes(c, frame_id):
    return {s["name"]: s for s in ok(c.request("scopes", {"frameId": frame_id}))["scopes"]}


def variables(c, ref, **kw):
    return ok(c.request("variables", dict(variablesReference=ref, **kw)))["variables"]


def by_name(vs):
    return {v["name"]: v for v in vs}


def evaluate(c, expression, frame_id, context="repl"):
    return c.request("evaluate", {"expression": expression, "frameId": frame_id,
                                  "context": context})


def next_value(t, n, timeout=10):
    """The value printed on the 'tick n' line."""
    return int(t.wait_line(r"^tick %d value=(-?\d+)$" % n, timeout=timeout).group(1))


@pytest.mark.parametrize("python", PYTHONS)
def test_scopes_variables_evaluate(python, spawn):
    t = spawn(python, "debuggee.py")
    c = debugger(t)
    tid, top = stop_at(c, "compute_after")
    assert top["name"] == "compute" and top["line"] == bp("debuggee.py", "compute_after")
    sc = scopes(c, top["id"])
    assert sc["Locals"]["presentationHint"] == "locals" and sc["Locals"]["expensive"] is False
    assert sc["Globals"]["presentationHint"] == "globals"
    assert sc["Locals"]["variablesReference"] > 0 and sc["Globals"]["variablesReference"] > 0
    assert sc["Locals"]["namedVariables"] == 5

    loc = by_name(variables(c, sc["Locals"]["variablesReference"]))
    assert sorted(loc) == ["mapping", "n", "point", "s", "values"]
    n = int(loc["n"]["value"])
    assert loc["n"]["type"] == "int" and loc["n"]["variablesReference"] == 0
    assert loc["n"]["evaluateName"] == "n"
    assert loc["values"]["value"] == "[%d, %d, %d]" % (n, 2 * n, 3 * n)
    assert loc["values"]["type"] == "list" and loc["values"]["indexedVariables"] == 3
    items = variables(c, loc["values"]["variablesReference"])
    assert [(v["name"], v["value"], v.get("evaluateName")) for v in items] == [
        ("0", str(n), "values[0]"), ("1", str(2 * n), "values[1]"), ("2", str(3 * n), "values[2]")]
    assert loc["mapping"]["namedVariables"] == 2
    m = by_name(variables(c, loc["mapping"]["variablesReference"]))
    assert m["'n'"]["value"] == str(n) and m["'n'"]["evaluateName"] == "mapping['n']"
    assert m["'values'"]["variablesReference"] > 0
    # An object with __dict__.
    assert loc["point"]["type"] == "__main__.Point"
    assert re.match(r"^<__main__\.Point object at 0x[0-9a-f]+>$", loc["point"]["value"])
    p = by_name(variables(c, loc["point"]["variablesReference"]))
    assert (p["x"]["value"], p["y"]["value"]) == (str(n), str(n + 1))
    assert p["x"]["evaluateName"] == "point.x"

    glo = by_name(variables(c, sc["Globals"]["variablesReference"]))
    for name in ("settings", "numbers", "unique", "pair", "slotted", "compute", "Point"):
        assert name in glo, name
    assert glo["numbers"]["indexedVariables"] == 250
    page = variables(c, glo["numbers"]["variablesReference"], filter="indexed", start=240,
                     count=20)
    assert [v["name"] for v in page] == [str(i) for i in range(240, 250)]
    assert [v["value"] for v in page] == [str(i) for i in range(240, 250)]
    assert variables(c, glo["numbers"]["variablesReference"], filter="named") == []
    assert len(variables(c, glo["numbers"]["variablesReference"])) == 250
    # A set: its elements, by position.
    assert glo["unique"]["value"] == "{1, 2, 3}" and glo["unique"]["indexedVariables"] == 3
    assert sorted(v["value"] for v in variables(c, glo["unique"]["variablesReference"])) == [
        "1", "2", "3"]
    # __slots__.
    s = by_name(variables(c, glo["slotted"]["variablesReference"]))
    assert (s["a"]["value"], s["b"]["value"]) == ("1", "'two'")
    assert glo["pair"]["value"] == "(1, 'one')" and glo["pair"]["indexedVariables"] == 2

    # evaluate sees the frame's locals; a result with children can be expanded.
    r = ok(evaluate(c, "n * 2", top["id"], "watch"))
    assert r["result"] == str(2 * n) and r["type"] == "int" and r["variablesReference"] == 0
    r = ok(evaluate(c, "mapping", top["id"], "hover"))
    assert r["variablesReference"] > 0 and r["namedVariables"] == 2
    kids = by_name(variables(c, r["variablesReference"]))
    assert kids["'values'"]["evaluateName"] == "mapping['values']"
    # The caller's frame has its own locals.
    frames = ok(c.request("stackTrace", {"threadId": tid}))["stackFrames"]
    assert frames[1]["name"] == "main"
    assert ok(evaluate(c, "n", frames[1]["id"], "watch"))["result"] == str(n)
    # Output is captured; an exception is an error with the traceback.
    c.events.clear()
    r = evaluate(c, "print('from-frame', n); values[7]", top["id"])
    assert not r["success"]
    assert r["message"].startswith("Traceback (most recent call last):"), r["message"]
    assert r["message"].endswith("IndexError: list index out of range")
    out = [e["body"] for e in c.events if e["event"] == "output"]
    assert out == [{"category": "stdout", "output": "from-frame %d\n" % n}]

    old_refs = [sc["Locals"]["variablesReference"], loc["values"]["variablesReference"]]
    ok(c.request("continue", {"threadId": tid}))
    t.assert_responsive()
    for ref in old_refs:
        r = c.request("variables", {"variablesReference": ref})
        assert not r["success"] and "is stale: the program ran since" in r["message"], r
    r = c.request("scopes", {"frameId": top["id"]})
    assert not r["success"] and "is not stopped" in r["message"], r
    r = c.request("variables", {"variablesReference": 123456789})
    assert not r["success"] and "no such reference" in r["message"], r
    c.request("disconnect")
    t.assert_responsive()
    assert "from-frame" not in t.output()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_evaluate_running_expands(python, spawn):
    """While the target runs, the debugging client's evaluate results (in __main__) can be
    expanded too, until it disconnects."""
    t = spawn(python, "debuggee.py")
    c = debugger(t)
    r = ok(c.request("evaluate", {"expression": "settings", "context": "watch"}))
    assert r["result"] == "{'mode': 'fast', 'level': 3, 'tags': ['a', 'b']}"
    assert r["namedVariables"] == 3 and r["variablesReference"] > 0
    kids = by_name(variables(c, r["variablesReference"]))
    assert kids["'tags'"]["indexedVariables"] == 2
    assert kids["'tags'"]["evaluateName"] == "settings['tags']"
    assert [v["value"] for v in variables(c, kids["'tags'"]["variablesReference"])] == [
        "'a'", "'b'"]
    r = ok(c.request("evaluate", {"expression": "slotted", "context": "repl"}))
    assert re.match(r"^<__main__\.Slotted object at 0x[0-9a-f]+>$", r["result"])
    assert sorted((v["name"], v["value"]) for v in variables(c, r["variablesReference"])) == [
        ("a", "1"), ("b", "'two'")]
    c.request("disconnect")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_set_variable_and_assign(python, spawn):
    """setVariable and an assignment evaluated in the frame both change what the program
    computes: result = s * 2 is printed on the next tick."""
    t = spawn(python, "debuggee.py")
    c = debugger(t)
    tid, top = stop_at(c, "compute_after")
    sc = scopes(c, top["id"])
    loc = by_name(variables(c, sc["Locals"]["variablesReference"]))
    n = int(loc["n"]["value"])
    r = ok(c.request("setVariable", {"variablesReference": sc["Locals"]["variablesReference"],
                                     "name": "s", "value": "100"}))
    assert (r["value"], r["type"], r["variablesReference"]) == ("100", "int", 0)
    assert ok(evaluate(c, "s", top["id"], "watch"))["result"] == "100"
    loc = by_name(variables(c, sc["Locals"]["variablesReference"]))
    assert loc["s"]["value"] == "100"
    r = c.request("setVariable", {"variablesReference": sc["Locals"]["variablesReference"],
                                  "name": "s", "value": "1 +"})
    assert not r["success"] and "SyntaxError" in r["message"], r
    r = c.request("setVariable", {"variablesReference": sc["Locals"]["variablesReference"],
                                  "name": "s", "value": "undefined_name"})
    assert not r["success"] and "NameError" in r["message"] and "Traceback" in r["message"]
    assert ok(evaluate(c, "s", top["id"], "watch"))["result"] == "100"
    # Containers and attributes.
    r = ok(c.request("setVariable", {"variablesReference": loc["values"]["variablesReference"],
                                     "name": "1", "value": "'x' * 3"}))
    assert r["value"] == "'xxx'"
    r = ok(c.request("setVariable", {"variablesReference": loc["mapping"]["variablesReference"],
                                     "name": "'n'", "value": "[n]"}))
    assert r["value"] == "[%d]" % n and r["variablesReference"] > 0
    r = ok(c.request("setVariable", {"variablesReference": loc["point"]["variablesReference"],
                                     "name": "x", "value": "-1"}))
    assert r["value"] == "-1"
    assert ok(evaluate(c, "(values[1], mapping['n'], point.x)", top["id"], "watch"))[
        "result"] == "('xxx', [%d], -1)" % n
    glo = by_name(variables(c, sc["Globals"]["variablesReference"]))
    r = c.request("setVariable", {"variablesReference": glo["pair"]["variablesReference"],
                                  "name": "0", "value": "2"})
    assert not r["success"] and "cannot be assigned" in r["message"], r
    # An assignment evaluated in the frame sticks too.
    assert ok(evaluate(c, "s = s + 7", top["id"]))["result"] == ""
    assert ok(evaluate(c, "s", top["id"], "watch"))["result"] == "107"
    since = len(t.output())
    ok(c.request("continue", {"threadId": tid}))
    assert next_value(t, n) == 214
    assert next_value(t, n + 1) == 2 * (n + 2), "later ticks are unaffected"
    assert "tick %d value=214" % n in t.output()[since:]
    c.request("disconnect")
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_source_without_file(python, spawn):
    """A frame whose code has no file: its source is the disassembly (said so in a header),
    or linecache's text once linecache has it; a file's source by path."""
    t = spawn(python, "debuggee.py")
    c = debugger(t)
    # compute() looks add up in the module's globals: replace it by one without a file.
    gen = "def add(a, b):\n    total = a + b\n    return total\n"
    r = ok(c.request("evaluate", {"expression": "exec(compile(%r, '<generated>', 'exec'), "
                                                "globals())" % gen, "context": "repl"}))
    c.events.clear()
    ok(c.request("setFunctionBreakpoints", {"breakpoints": [{"name": "add"}]}))
    ev = wait_event(c, "stopped")
    ok(c.request("setFunctionBreakpoints", {"breakpoints": []}))
    tid = ev["body"]["threadId"]
    top = ok(c.request("stackTrace", {"threadId": tid}))["stackFrames"][0]
    assert top["name"] == "add" and top["source"]["name"] == "<generated>", top
    ref = top["source"]["sourceReference"]
    assert ref > 0 and "path" not in top["source"]
    src = ok(c.request("source", {"source": top["source"], "sourceReference": ref}))
    assert src["content"].startswith("# The source of add (<generated>) is not available.")
    assert re.search(r"(LOAD_FAST\w*)\s+.*\ba\b", src["content"]), src["content"]
    assert src["mimeType"] == "text/plain"
    # Locals of a frame without a file are there all the same.
    loc = by_name(variables(c, scopes(c, top["id"])["Locals"]["variablesReference"]))
    assert {"a", "b"} <= set(loc)
    ok(evaluate(c, "import linecache; linecache.cache['<generated>'] = (%d, None, %r, "
                   "'<generated>')" % (len(gen), gen.splitlines(True)), top["id"]))
    src = ok(c.request("source", {"sourceReference": ref}))
    assert src["content"] == gen and src["mimeType"] == "text/x-python"
    # By path.
    src = ok(c.request("source", {"source": {"path": SAMPLE}, "sourceReference": 0}))
    assert "# BP: compute_after" in src["content"]
    ok(c.request("continue", {"threadId": tid}))
    t.assert_responsive()
    r = c.request("source", {"sourceReference": ref})
    assert not r["success"] and "is not stopped" in r["message"], r
    c.request("disconnect")
    t.check_output_clean()


def _torch_importable(python):
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


def test_tensor_metadata(spawn):
    python = "/usr/bin/python3"
    if not os.path.exists(python) or not _torch_importable(python):
        pytest.skip("torch is not importable in %s (Debian's python3-torch)" % python)
    t = spawn(python, "debuggee.py")
    c = debugger(t)
    tid, top = stop_at(c, "compute_after")
    ok(evaluate(c, "import torch; tt = [torch.arange(6.0).reshape(2, 3) + 12345, "
                   "torch.zeros(4, dtype=torch.int64), torch.nn.Parameter(torch.ones(1))]",
                top["id"]))
    r = ok(evaluate(c, "tt", top["id"], "watch"))
    assert r["indexedVariables"] == 3
    vs = variables(c, r["variablesReference"])
    assert [v["value"] for v in vs] == [
        "tensor(shape=[2, 3], dtype=torch.float32, device=cpu)",
        "tensor(shape=[4], dtype=torch.int64, device=cpu)",
        "tensor(shape=[1], dtype=torch.float32, device=cpu)"]
    assert [v["type"] for v in vs] == ["torch.Tensor", "torch.Tensor",
                                       "torch.nn.parameter.Parameter"]
    assert all(v["variablesReference"] == 0 for v in vs)
    # A hover shows the same, never the data (12345 would be in it).
    r = ok(evaluate(c, "tt[0]", top["id"], "hover"))
    assert r["result"] == "tensor(shape=[2, 3], dtype=torch.float32, device=cpu)"
    assert "12345" not in r["result"]
    ok(c.request("continue", {"threadId": tid}))
    c.request("disconnect")
    t.assert_responsive()
    t.check_output_clean()


PRINTER = '''import json, os, time
print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
n = 0
while True:
    print("tick", n)
    n += 1
    if n % 20 == 0:
        time.sleep(0.001)
'''


@pytest.mark.parametrize("python", PYTHONS)
def test_evaluate_while_another_thread_prints(python, spawn, tmp_path):
    """Evaluations swap sys.stdout while another thread prints: print() holds the stream it
    found as a borrowed reference between its writes, so the stand-in must outlive the
    evaluation (it used to be freed under a printing thread: RecursionError or SIGSEGV)."""
    script = tmp_path / "printer.py"
    script.write_text(PRINTER)
    t = spawn(python, str(script))
    probing("-p", t.pid, "inject", check=True)
    c = DAP.unix(t.sock)
    assert c.request("initialize", {"adapterID": "test"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    # Each evaluation outlasts a GIL switch interval, so the printer runs meanwhile.
    for _ in range(300):
        r = c.request("evaluate", {"expression": "sum(range(400000))", "context": "watch"})
        assert r["success"] and r["body"]["result"] == "79999800000", r
    c.request("disconnect")
    assert t.proc.poll() is None, t.errors()[-2000:]
    # The target is still writing (block-buffered): only whole lines are checked.
    lines = t.output().split("\n")[:-1]
    bad = [l for l in lines if not re.match(r"^(ready \{.*\}|tick \d+)$", l)]
    assert not bad, "unexpected lines on the target's stdout: %r" % bad[:5]
    assert t.errors() == ""
