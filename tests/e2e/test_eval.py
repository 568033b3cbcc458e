# SPDX-License-Identifier: MIT
"""probing eval on every CPython: expressions, statements with output captured in the target
(and not on its stdout), exceptions, syntax errors, changing a global the sample prints, a GIL
held forever (nothing runs, the holder is named), and no trace left behind."""
import time

import pytest

from conftest import PYTHONS, bp, probing


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_expression_and_output(python, spawn):
    t = spawn(python, "globals.py")
    r = probing("-p", t.pid, "eval", "6 * 7")
    assert (r.returncode, r.stdout, r.stderr) == (0, "42\n", "")
    r = probing("-p", t.pid, "eval",
                'print("captured-out")\nimport sys as _s\nprint("captured-err", file=_s.stderr)\n'
                'del _s\nlen(particles)')
    assert r.returncode == 0, r.stderr
    assert r.stdout == "captured-out\n5000\n" and r.stderr == "captured-err\n"
    r = probing("-p", t.pid, "eval", "None")
    assert (r.returncode, r.stdout) == (0, "")
    # Another thread's prints are not captured: they reach the target's real stdout.
    r = probing("-p", t.pid, "eval",
                "import threading as _t\n"
                "_x = _t.Thread(target=lambda: print('ok from-thread', flush=True))\n"
                "_x.start(); _x.join(); del _t, _x\nprint('mine')")
    assert r.returncode == 0 and r.stdout == "mine\n", r
    t.wait_line(r"^ok from-thread$")
    t.assert_responsive()
    assert "captured" not in t.output() and "mine" not in t.output()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_exception_and_syntax_error(python, spawn):
    t = spawn(python, "globals.py")
    r = probing("-p", t.pid, "eval", "x = 1\n1 / 0")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("Traceback (most recent call last):\n")
    assert 'File "<probing>", line 2, in <module>' in r.stderr
    assert r.stderr.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "probing-helper" not in r.stderr and "probing: error" not in r.stderr
    r = probing("-p", t.pid, "eval", "def f(:")
    assert r.returncode == 1 and r.stdout == ""
    assert "SyntaxError" in r.stderr and 'File "<probing>", line 1' in r.stderr
    assert "Traceback" not in r.stderr and "ast.py" not in r.stderr
    # SystemExit in the code does not end the target.
    r = probing("-p", t.pid, "eval", "raise SystemExit(3)")
    assert r.returncode == 1 and "SystemExit: 3" in r.stderr
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_sees_and_changes_globals(python, spawn):
    t = spawn(python, "globals.py")
    assert probing("-p", t.pid, "eval", "message", check=True).stdout == "'hello'\n"
    before = int(probing("-p", t.pid, "eval", "counter", check=True).stdout)
    time.sleep(0.5)
    assert int(probing("-p", t.pid, "eval", "counter", check=True).stdout) > before
    probing("-p", t.pid, "eval", "message = 'set-by-eval'", check=True)
    t.wait_line(r"^ok message=set-by-eval$")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_leaves_no_trace(python, spawn):
    t = spawn(python, "globals.py")
    names = "sorted(globals())"
    before = probing("-p", t.pid, "eval", names, check=True).stdout
    probing("-p", t.pid, "eval", "print('x')\n1/0")
    probing("-p", t.pid, "eval", "def f(:")
    probing("-p", t.pid, "eval", "print('y', file=__import__('sys').stderr)", check=True)
    assert probing("-p", t.pid, "eval", names, check=True).stdout == before
    # After the evaluation, sys.stdout/stderr are the very objects they were: a thread started
    # by the code looks once the evaluation is over.
    probing("-p", t.pid, "eval",
            "import threading as _t, time as _tm, sys as _s\n"
            "def _chk(s=_s, tm=_tm):\n"
            "    tm.sleep(0.5)\n"
            "    print('ok restored=%s' % (s.stdout is s.__stdout__ and s.stderr is s.__stderr__),"
            " flush=True)\n"
            "_t.Thread(target=_chk).start()\ndel _t, _tm, _s, _chk", check=True)
    t.wait_line(r"^ok restored=True$")
    assert probing("-p", t.pid, "eval", names, check=True).stdout == before
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_eval_gil_held_forever(python, spawn):
    t = spawn(python, "stuck_gil.py")
    start = time.time()
    r = probing("-p", t.pid, "eval", "open('/tmp/probing-must-not-run', 'w')", timeout=20)
    assert time.time() - start < 5
    assert r.returncode == 1 and r.stdout == ""
    assert ("the GIL is held by thread %d" % t.pid) in r.stderr
    assert "in hold_gil_forever (" in r.stderr
    assert "stuck_gil.py:%d)" % bp("stuck_gil.py", "stuck_call") in r.stderr
    assert "nothing was run" in r.stderr
    assert t.proc.poll() is None
    t.check_output_clean()


def test_eval_usage():
    r = probing("-p", "1", "eval")
    assert r.returncode == 2 and "expected one argument" in r.stderr
