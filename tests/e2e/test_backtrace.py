# SPDX-License-Identifier: MIT
"""probing backtrace: the main thread with locals, a thread chosen by native id, a bad id, and
a GIL held forever (frames without locals, and why)."""
import pytest

from conftest import PYTHONS, bp, probing


@pytest.mark.parametrize("python", PYTHONS)
def test_backtrace_main_and_tid(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "backtrace", check=True)
    lines = r.stdout.splitlines()
    assert lines[0] == 'Thread %d "MainThread" (main)' % t.pid
    assert lines[1].startswith("  #0 tick_forever (") and lines[1].endswith(
        "threads.py:%d)" % bp("threads.py", "main_sleep"))
    assert "        text = 'xxxxxxxx" in r.stdout and "        big = <int of " in r.stdout
    assert any(l.startswith("  #1 main (") for l in lines)
    tid = t.ready["threads"]["sleeper-1"]
    r = probing("-p", t.pid, "backtrace", tid, check=True)
    assert r.stdout.startswith('Thread %d "sleeper-1"\n' % tid)
    assert "  #0 sleeper (" in r.stdout and ":%d)" % bp("threads.py", "sleeper_sleep") in r.stdout
    assert "        seconds = 3600  (int)" in r.stdout
    assert "        label = 'sleeping'  (str)" in r.stdout
    r = probing("-p", t.pid, "backtrace", 99999999)
    assert r.returncode == 1 and r.stdout == ""
    assert "no Python thread 99999999 in process %d" % t.pid in r.stderr
    assert '%d "MainThread"' % t.pid in r.stderr
    assert probing("-p", t.pid, "backtrace", "abc").returncode == 2
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_backtrace_without_gil(python, spawn):
    t = spawn(python, "stuck_gil.py")
    r = probing("-p", t.pid, "backtrace", check=True, timeout=20)
    assert r.stdout.startswith("note: the GIL is held by thread %d" % t.pid)
    assert "  #0 hold_gil_forever (" in r.stdout
    assert "stuck_gil.py:%d)" % bp("stuck_gil.py", "stuck_call") in r.stdout
    # The locals read from memory without the GIL (issue 36 item 5), simple values by value.
    assert "read from memory" in r.stdout.splitlines()[0], r.stdout
    assert "ready = True  (bool)" in r.stdout, r.stdout
    assert t.proc.poll() is None
    t.check_output_clean()
