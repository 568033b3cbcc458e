# SPDX-License-Identifier: MIT
"""Signal hygiene: the probe never harms the target's own signal handling. After injection and
after a debugging session attached and detached, on every CPython: handlers installed before
(SIGUSR1, SIGPROF with ITIMER_PROF) still run, handlers installed after behave as before,
faulthandler still dumps the Python stack on SIGSEGV, the kernel's view of the process (caught,
ignored, blocked signals of its threads) is unchanged, every thread of the probe blocks every
signal, and a process-directed signal reaches the target's own thread even when the only one
accepting it was started after the probe's (sample: samples/signals.py)."""
import os
import re
import signal
import time

import pytest

from conftest import PYTHONS, bp, dump_json, probing
from dbgutil import Debugger, assert_clean

SAMPLE = "signals.py"


def spawn_signals(spawn, python, tmp_path, env=None):
    t = spawn(python, SAMPLE, args=(str(tmp_path),), env=env)
    t.workdir = tmp_path
    return t


def command(t, line):
    with open(os.path.join(t.workdir, "commands"), "a") as f:
        f.write(line + "\n")


def got(t, sig, handler, n):
    """Sends nothing; waits for the sample's report that `handler` ran n times for sig."""
    t.wait_line(r"^ok got %s handler=%s n=%d$" % (sig, handler, n), timeout=10)


def kill_and_wait(t, sig, handler, n):
    os.kill(t.pid, getattr(signal, sig))
    got(t, sig, handler, n)


def itimer(t):
    """Runs the sample's ITIMER_PROF command; returns how many times its SIGPROF handler ran."""
    rx = re.compile(r"^ok itimer n=(\d+)$", re.M)
    seen = len(rx.findall(t.output()))
    command(t, "itimer")
    deadline = time.time() + 20
    while True:
        found = rx.findall(t.output())
        if len(found) > seen:
            return int(found[seen])
        assert t.proc.poll() is None, "target died: %s" % t.errors()[-2000:]
        assert time.time() < deadline, "no itimer report within 20 s"
        time.sleep(0.05)


def proc_status(pid, tid=None):
    path = "/proc/%d/task/%d/status" % (pid, tid) if tid else "/proc/%d/status" % pid
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


# glibc's own signals (SIGCANCEL, SIGSETXID): its first pthread_create in a process installs
# the SIGSETXID handler, so a target without threads gains it with the probe's. Applications
# cannot use them (SIGRTMIN is 34): they are left out of every comparison.
GLIBC = (1 << 31) | (1 << 32)


def masks(pid):
    """{tid: SigBlk} of every thread of pid (glibc's own signals left out)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            out[int(tid)] = int(proc_status(pid, int(tid))["SigBlk"], 16) & ~GLIBC
        except FileNotFoundError:  # a thread that just ended
            pass
    return out


def disposition(pid):
    st = proc_status(pid)
    return {"caught": int(st["SigCgt"], 16) & ~GLIBC, "ignored": int(st["SigIgn"], 16) & ~GLIBC}


def bit(sig):
    return 1 << (sig - 1)


# Every signal a thread can block (not SIGKILL, SIGSTOP, nor glibc's own).
BLOCKABLE = [s for s in range(1, 65) if s not in (signal.SIGKILL, signal.SIGSTOP, 32, 33)]


def debug_session(t):
    """A debugging client attaches, pauses the target, stops at a breakpoint, continues and
    detaches; nothing of the debugger's is left after."""
    d = Debugger(t, sample=SAMPLE, inject=False)
    main = t.ready["main"]
    d.req("pause", {"threadId": main})
    assert d.stopped()["reason"] == "pause"
    d.req("continue", {"threadId": main})
    d.set_bps("loop_sleep")
    st = d.stopped()
    assert st["reason"] == "breakpoint" and d.top(st["threadId"])[1] == d.line("loop_sleep")
    d.req("setBreakpoints", {"source": {"path": d.path}, "breakpoints": []})
    d.req("continue", {"threadId": st["threadId"]})
    d.req("disconnect")
    d.c.close()
    assert_clean(t)
    t.assert_responsive()


def stdout_clean(t):
    bad = [line for line in t.output().splitlines() if not t.ALLOWED.match(line)]
    assert not bad, "unexpected lines on the target's stdout: %r" % bad[:5]


@pytest.mark.parametrize("python", PYTHONS)
def test_handlers_installed_before_still_run(python, spawn, tmp_path):
    t = spawn_signals(spawn, python, tmp_path)
    kill_and_wait(t, "SIGUSR1", "before", 1)  # the sample works without the probe
    before = disposition(t.pid)
    assert before["caught"] & bit(signal.SIGUSR1) and before["caught"] & bit(signal.SIGPROF)

    probing("-p", t.pid, "inject", check=True)
    dump_json(t.pid)
    kill_and_wait(t, "SIGUSR1", "before", 2)
    n = itimer(t)
    assert n >= 5, "SIGPROF handler ran %d times in 10 s of ITIMER_PROF" % n

    debug_session(t)
    kill_and_wait(t, "SIGUSR1", "before", 3)
    kill_and_wait(t, "SIGUSR1", "before", 4)
    n = itimer(t)
    assert n >= 5, "SIGPROF handler ran %d times after a debugging session" % n
    assert disposition(t.pid) == before, "the probe changed the process's signal dispositions"
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_handlers_installed_after_injection(python, spawn, tmp_path):
    t = spawn_signals(spawn, python, tmp_path)
    probing("-p", t.pid, "inject", check=True)
    debug_session(t)
    assert not disposition(t.pid)["caught"] & bit(signal.SIGUSR2)

    command(t, "install SIGUSR2")
    t.wait_line(r"^ok installed SIGUSR2 old=SIG_DFL$")
    command(t, "install SIGUSR1")
    t.wait_line(r"^ok installed SIGUSR1 old=before$")
    assert disposition(t.pid)["caught"] & bit(signal.SIGUSR2), "not installed in the kernel"
    kill_and_wait(t, "SIGUSR2", "after", 1)
    kill_and_wait(t, "SIGUSR1", "after", 1)
    kill_and_wait(t, "SIGUSR1", "after", 2)
    assert "handler=before" not in t.output(), "the replaced handler ran"
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_faulthandler_dumps_after_injection(python, spawn, tmp_path):
    env = None
    if os.environ.get("PROBING_TARGET_PRELOAD"):
        # make asan: the sanitizer runtime in the target would take SIGSEGV for itself; leave it
        # to the target's own handler (faulthandler), which is what this test is about.
        env = {"ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0:handle_segv=0"}
    t = spawn_signals(spawn, python, tmp_path, env=env)
    probing("-p", t.pid, "inject", check=True)
    dump_json(t.pid)
    debug_session(t)
    command(t, "segv")
    t.proc.wait(timeout=20)
    assert t.proc.returncode == -signal.SIGSEGV, t.proc.returncode
    err = t.errors()
    assert "Fatal Python error: Segmentation fault" in err, err[-2000:]
    assert re.search(r"^Current thread 0x[0-9a-f]+ (\[.*\] )?\(most recent call first\):$", err, re.M), err
    path = t.script  # the sample's path as python was given it
    for line, func in ((bp(SAMPLE, "segv"), "do_segv"), (None, "main")):
        rx = r'^  File "%s", line %s in %s$' % (re.escape(path), line or r"\d+", func)
        assert re.search(rx, err, re.M), "no frame %s in the dump: %s" % (func, err[-2000:])
    stdout_clean(t)


@pytest.mark.parametrize("python", PYTHONS)
def test_probe_threads_block_every_signal(python, spawn, tmp_path):
    t = spawn_signals(spawn, python, tmp_path)
    own = masks(t.pid)
    before = disposition(t.pid)
    probing("-p", t.pid, "inject", check=True)
    dump_json(t.pid)
    probing("-p", t.pid, "query", "select count(*) from python.threads", check=True)
    after = masks(t.pid)
    ours = set(after) - set(own)
    assert len(ours) >= 2, "expected the probe's threads, got %r" % after
    for tid in ours:
        unblocked = [s for s in BLOCKABLE if not after[tid] & bit(s)]
        assert not unblocked, "probe thread %d accepts signals %r" % (tid, unblocked)
    assert {tid: after[tid] for tid in own} == own, "the target's threads' masks changed"
    assert disposition(t.pid) == before

    # Only a thread started after the probe's accepts SIGUSR2: the kernel looks for a taker
    # from the main thread on in creation order, so it would try the probe's threads first.
    command(t, "receiver")
    m = t.wait_line(r"^ok receiver ident=0x([0-9a-f]+) main=0x([0-9a-f]+)$")
    receiver, main = m.group(1), m.group(2)
    dumps = os.path.join(tmp_path, "dumps")
    for i in range(1, 6):
        os.kill(t.pid, signal.SIGUSR2)
        deadline = time.time() + 10
        while True:
            with open(dumps) as f:
                text = f.read()
            mains = len(re.findall(r"^(Current thread|Thread) 0x%s " % main, text, re.M))
            if mains >= i:
                break
            assert time.time() < deadline, "no faulthandler dump %d: %r" % (i, text[-1000:])
            time.sleep(0.02)
        current = re.findall(r"^Current thread 0x([0-9a-f]+) ", text, re.M)
        assert current == [receiver] * i, (
            "SIGUSR2 delivered elsewhere than the receiver thread (0x%s): %r" % (receiver, text))
    t.assert_responsive()
    t.check_output_clean()
