# SPDX-License-Identifier: MIT
"""`probing -p PID debug --pause [--address]` keeps the target stopped, serving DAP on TCP with
a token, until a debugger attaches and continues it, or `debug --resume` releases it."""
import re
import time

import pytest

from conftest import PYTHONS, probing
from dapclient import DAP
from dbgutil import assert_clean, last_tick


def pause(t):
    r = probing("-p", t.pid, "debug", "--pause", "--address", "127.0.0.1:0", check=True)
    m = re.search(r"DAP on ([\d.]+):(\d+), token (\w+)", r.stdout)
    assert m, r.stdout
    assert '"connect": {"host": "127.0.0.1", "port": %s}' % m.group(2) in r.stdout
    return m.group(1), int(m.group(2)), m.group(3)


def assert_held(t):
    n = last_tick(t)
    time.sleep(0.5)
    assert last_tick(t) == n, "the target kept running after debug --pause"


@pytest.mark.parametrize("python", PYTHONS)
def test_pause_then_debugger_continues(python, spawn):
    t = spawn(python, "debuggee.py")
    host, port, token = pause(t)
    assert_held(t)  # the CLI has exited: the target stays paused
    c = DAP.tcp(host, port)
    assert c.request("initialize", {"adapterID": "x"})["success"]
    r = c.request("attach", {"token": "wrong"})
    assert not r["success"]
    c = DAP.tcp(host, port)
    assert c.request("initialize", {"adapterID": "x"})["success"]
    assert c.request("attach", {"token": token})["success"]
    assert c.request("configurationDone")["success"]
    deadline = time.time() + 10
    while not any(e["event"] == "stopped" for e in c.events):
        assert time.time() < deadline, "no stopped event after configurationDone"
        try:
            m = c.read(timeout=0.5)
            if m["type"] == "event":
                c.events.append(m)
        except TimeoutError:
            pass
    st = [e for e in c.events if e["event"] == "stopped"][0]["body"]
    assert st["reason"] == "pause" and st["allThreadsStopped"]
    frames = c.request("stackTrace", {"threadId": t.ready["main"]})["body"]["stackFrames"]
    assert any(f["name"] == "main" for f in frames)
    assert_held(t)
    assert c.request("continue", {"threadId": t.ready["main"]})["success"]
    t.assert_responsive()
    c.request("disconnect")
    assert_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_pause_then_resume(python, spawn):
    t = spawn(python, "debuggee.py")
    pause(t)
    assert_held(t)
    r = probing("-p", t.pid, "debug", "--resume", check=True)
    assert r.stdout.strip() == "resumed %d" % t.pid
    t.assert_responsive()
    r = probing("-p", t.pid, "debug", "--resume", check=True)
    assert r.stdout.strip() == "%d was not paused" % t.pid
    assert_clean(t)
    t.check_output_clean()


def test_pause_usage_errors(spawn):
    r = probing("-p", "1", "debug", "--pause", "--dump")
    assert r.returncode == 2 and "exactly one of" in r.stderr
    r = probing("-p", "1", "debug", "--dump", "--address", "x:1")
    assert r.returncode == 2 and "--address only goes with --pause" in r.stderr
