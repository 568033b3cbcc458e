# SPDX-License-Identifier: MIT
"""The switch interval while a GIL worker waits (probe/gil/hurry.c): lowered to 100 us for the
wait only, so that a thread computing in Python lets the worker in sooner, and put back exactly
(the program's own setting, or one it made during the wait). The target's computing thread
reads sys.getswitchinterval() in a tight loop: it sees the lowered value only while a worker
waits (it runs only while it holds the GIL, which the waiting worker asks it to drop), never
any other. The speed itself is `make bench`'s (tests/bench/bench_debug.py part 2)."""
import ast
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import CLI, PYTHONS, probing

LOW = 100 * 1e-6  # the interval while a worker waits (HURRY_US), as sys.getswitchinterval() shows it


def ev(pid, code):
    r = probing("-p", pid, "eval", code)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def seen(pid):
    return ast.literal_eval(ev(pid, "dict(seen)"))


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_wait_lowers_the_switch_interval_then_restores_the_programs(python, spawn):
    t = spawn(python, "switch_watch.py", args=("--interval", "0.0123"))
    own = t.ready["interval"]
    assert abs(own - 0.0123) < 1e-6, own
    probing("-p", t.pid, "inject", check=True)
    for i in range(20):
        assert ev(t.pid, "%d + 1" % i) == str(i + 1)
        if i % 5 == 0:
            probing("-p", t.pid, "debug", "--dump", "--locals", "--json", check=True)
            probing("-p", t.pid, "memory", "--json", check=True)
    assert ev(t.pid, "sys.getswitchinterval()") == repr(own)
    s = seen(t.pid)
    # Lowered while we waited (this fails without hurry.c: nothing but the program's value is
    # ever seen), to our value and no other.
    assert set(s) == {LOW}, s
    assert ev(t.pid, "own") == repr([own])
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_wait_keeps_a_setting_the_program_makes_meanwhile(python, spawn):
    # The computing thread sets 0.0077 on seeing our value: the restore (a compare-and-swap from
    # ours) must leave the program's new setting, not write back the one read before.
    t = spawn(python, "switch_watch.py", args=("--interval", "0.0123", "--set-when-lowered",
                                                "0.0077"))
    probing("-p", t.pid, "inject", check=True)
    for i in range(20):
        assert ev(t.pid, "%d + 1" % i) == str(i + 1)
    mine = ast.literal_eval(ev(t.pid, "own"))
    assert len(mine) >= 2 and abs(mine[-1] - 0.0077) < 1e-6, mine
    assert ev(t.pid, "sys.getswitchinterval()") == repr(mine[-1])
    # Writing back the value read before (0.0123) would show here: the thread would see it.
    assert set(seen(t.pid)) == {LOW}
    t.check_output_clean()


def hold_gil(t):
    """SIGUSR1: the main thread keeps the GIL in a C call, pause() (ctypes.PyDLL: the GIL is kept
    from before the call until it returns). "ok holding" is written before pause() is entered,
    and the write lets the GIL go, so the line alone does not say the hold began (an eval ran in
    between in CI): waits until the kernel shows the main thread inside pause()."""
    os.kill(t.pid, signal.SIGUSR1)
    t.wait_line(r"^ok holding$")
    wchan = "/proc/%d/task/%d/wchan" % (t.pid, t.pid)
    deadline = time.time() + 10
    while "pause" not in open(wchan).read():
        assert time.time() < deadline, "the main thread never entered pause()"
        time.sleep(0.005)


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_held_in_c_request_times_out_and_the_interval_is_restored(python, spawn):
    # The main thread keeps the GIL in a C call (ctypes.PyDLL, pause()) until SIGUSR2: an eval
    # times out (eval.timeout_ms 40, within the hurry's budget); the interval is put back when
    # the wait is given up, with the GIL still held (the probe's log says so, in order), and
    # the program then reads its own value.
    t = spawn(python, "switch_watch.py")
    own = t.ready["interval"]
    assert ev(t.pid, "sys.getswitchinterval()") == repr(own)
    hold_gil(t)
    # 40 ms only for the eval that must time out: the program's computing thread passes the GIL
    # on at its switch interval, which on a loaded machine can take longer than that.
    probing("-p", t.pid, "config", "eval.timeout_ms=40", check=True)
    before = len(t.probe_log())
    r = probing("-p", t.pid, "eval", "1")
    assert r.returncode == 1 and ("the GIL is held by thread %d" % t.pid) in r.stderr, r.stderr
    log = t.probe_log()[before:]
    us = round(own * 1e6)
    lowered = log.find("switch interval lowered from %d to 100 us" % us)
    restored = log.find("switch interval restored to %d us" % us, lowered)
    assert 0 <= lowered < restored, log
    os.kill(t.pid, signal.SIGUSR2)
    t.wait_line(r"^ok released interval=%s$" % repr(own).replace(".", r"\."))
    # The default again (see above).
    probing("-p", t.pid, "config", "eval.timeout_ms=500", check=True)
    assert ev(t.pid, "sys.getswitchinterval()") == repr(own)
    assert set(seen(t.pid)) <= {LOW}
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_fork_child_of_a_lowered_process_has_the_programs_interval(python, spawn):
    # The computing thread forks on seeing our value (while our worker waits): the child's
    # interval is the program's (pthread_atfork), the parent's still ours until the wait ends.
    t = spawn(python, "switch_watch.py", args=("--interval", "0.0123", "--fork-when-lowered"))
    own = t.ready["interval"]
    probing("-p", t.pid, "inject", check=True)
    for i in range(200):  # until it forked 5 times (a busy machine may delay its sightings)
        forks = ast.literal_eval(ev(t.pid, "forks"))
        if len(forks) == 5:
            break
    assert len(forks) == 5, forks
    children = re.findall(r"^ok child interval=(.*)$", t.output(), re.M)
    assert children == [repr(own)] * 5, children
    assert ev(t.pid, "sys.getswitchinterval()") == repr(own)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_held_in_c_the_lowering_ends_after_its_budget_while_the_request_waits(python, spawn):
    # With eval.timeout_ms at 60 s and the GIL kept by a C call, the interval is lowered for
    # PROBE_HURRY_BUDGET_MS (50 ms) only: a holder that does not drop the GIL then is not
    # hurried by it, and the waiters would only wake every 100 us. The eval still waiting, the
    # log has it restored; released, the eval answers.
    t = spawn(python, "switch_watch.py")
    us = round(t.ready["interval"] * 1e6)
    probing("-p", t.pid, "config", "eval.timeout_ms=60000", check=True)
    assert ev(t.pid, "1") == "1"  # the start-up job (thread names) is done
    hold_gil(t)
    before = len(t.probe_log())
    p = subprocess.Popen([CLI, "-p", str(t.pid), "eval", "6 * 7"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 10
        while "switch interval restored to %d us" % us not in t.probe_log()[before:]:
            assert p.poll() is None and time.time() < deadline, t.probe_log()[before:]
            time.sleep(0.02)
        assert "switch interval lowered from %d to 100 us" % us in t.probe_log()[before:]
        assert p.poll() is None  # it waits on, at the program's interval
        os.kill(t.pid, signal.SIGUSR2)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert (p.returncode, out, err) == (0, "42\n", ""), err
    t.wait_line(r"^ok released interval=%s$" % repr(t.ready["interval"]).replace(".", r"\."))
    assert ev(t.pid, "sys.getswitchinterval()") == repr(t.ready["interval"])
    t.check_output_clean()
