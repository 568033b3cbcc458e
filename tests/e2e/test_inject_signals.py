# SPDX-License-Identifier: MIT
"""The CLI dies while it injects: the target must not (issue 37, item 1).

The first command on a process hijacks one of its threads to call dlopen. If the CLI is killed
in that window (Ctrl-C, `timeout`'s SIGTERM, systemd, SIGKILL), the kernel detaches it, and a
call that returns to address 0 for the tracer to catch would crash the target. The injector
holds its catchable signals until the target is restored, and makes its calls through a
trampoline that restores the thread by itself (rt_sigreturn) when no tracer is left.

- A stand-in probe whose constructor takes 400 ms (samples/slow_ctor.c) puts the CLI surely
  inside the remote call when the signal comes: SIGINT, SIGTERM, SIGHUP and SIGKILL each.
- The real probe, signals at random points of the CLI's whole life, many times.

The target (samples/read_loop.py) has its hijacked main thread blocked in a C read() loop that
counts wrong reads (a syscall not restarted as it was), a changed errno and lost FP state; after
each attempt it must be alive, not stopped, not traced, with the thread's signal mask as before,
and, at its end, report no anomaly.
"""
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import CLI, HOST_PYTHONS, OLDEST_HOST, PYTHONS, SAMPLES, probing

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL]


def _settled(t):
    """The target's main thread is in its read loop (its mask is read at a quiet moment, not
    while pthread_create blocks signals around the feeder's start)."""
    t.wait_line(r"^tick 1$")
    return _status(t.pid, t.pid)["SigBlk"].strip()


def _status(pid, tid=None):
    path = "/proc/%d/task/%d/status" % (pid, tid) if tid else "/proc/%d/status" % pid
    with open(path) as f:
        return dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)


def _assert_unharmed(t, sigblk):
    assert t.proc.poll() is None, "the target died (exit %s): %s" % (
        t.proc.returncode, t.errors()[-1000:])
    deadline = time.time() + 5
    while True:
        st = _status(t.pid)
        state = st["State"].split()[0]
        if state not in "Tt" and st["TracerPid"].strip() == "0":
            break
        assert time.time() < deadline, "the target was left %s, tracer %s" % (
            st["State"].strip(), st["TracerPid"].strip())
        time.sleep(0.01)
    # The mask comes back when the remote call ends (the probe's start may still run).
    while _status(t.pid, t.pid)["SigBlk"].strip() != sigblk:
        assert time.time() < deadline + 5, "the hijacked thread's signal mask changed: %s, was %s" % (
            _status(t.pid, t.pid)["SigBlk"].strip(), sigblk)
        time.sleep(0.01)
    t.assert_responsive()


def _finish(t):
    m = t.wait_line(r"^ok read anomalies (\d+) first (-?\d+) reads (\d+)$", timeout=60)
    assert t.proc.wait(timeout=10) == 0
    assert int(m.group(1)) == 0, (
        "the hijacked thread saw %s anomalies (first code %s: -N a failed read with errno N, "
        "2000+N errno changed, 3000 FP state lost)" % (m.group(1), m.group(2)))
    assert int(m.group(3)) > 100


def _slow_libdir(tmp_path, python):
    minor = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    d = tmp_path / "libdir"
    d.mkdir(exist_ok=True)
    so = d / ("libprobing-%s.so" % minor)
    if not so.exists():
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so),
                        os.path.join(SAMPLES, "slow_ctor.c")], check=True)
    return d


@pytest.mark.parametrize("python", HOST_PYTHONS)
@pytest.mark.parametrize("sig", SIGNALS, ids=[s.name for s in SIGNALS])
def test_cli_killed_inside_the_remote_call(python, sig, spawn, tmp_path):
    libdir = _slow_libdir(tmp_path, python)
    mark = str(tmp_path / "ctor")
    t = spawn(python, "read_loop.py", args=("3",),
              env={"SLOW_CTOR_MARK": mark, "SLOW_CTOR_MS": "400"})
    sigblk = _settled(t)
    env = dict(os.environ, PROBING_LIBDIR=str(libdir))
    cli = subprocess.Popen([CLI, "-p", str(t.pid), "inject"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while not os.path.exists(mark + ".start"):
        assert time.time() < deadline and cli.poll() is None, "the constructor never started"
        time.sleep(0.002)
    time.sleep(0.1)
    assert not os.path.exists(mark + ".done")
    cli.send_signal(sig)
    cli.communicate(timeout=30)
    lock = "/tmp/probing-%d/%d.inject.lock" % (os.geteuid(), t.pid)
    if sig == signal.SIGKILL:
        assert cli.returncode == -signal.SIGKILL
        assert os.path.exists(lock)  # nothing runs in a CLI killed so: the next one sweeps
    else:
        # Held until the target was restored, then taken: the CLI ends by that signal, its
        # lock file removed first (before: left behind, one per interrupted injection).
        assert cli.returncode == -sig, cli.returncode
        assert not os.path.exists(lock), lock
    deadline = time.time() + 5
    while not os.path.exists(mark + ".done"):
        assert time.time() < deadline, "the constructor never finished"
        time.sleep(0.01)
    time.sleep(0.05)
    _assert_unharmed(t, sigblk)
    _finish(t)


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in (OLDEST_HOST, "3.12", "debian")])
def test_signals_at_random_points_of_an_injection(python, spawn):
    """The real probe; each signal at random points of the CLI's life (measured first)."""
    rng = random.Random(int(os.environ.get("PROBING_TEST_SEED", "0")) or None)
    # How long a whole `inject` takes here, from exec to exit.
    lives = []
    for _ in range(3):
        t = spawn(python, "read_loop.py", args=("1",))
        t0 = time.monotonic()
        probing("-p", t.pid, "inject", check=True)
        lives.append(time.monotonic() - t0)
        _finish(t)
    life = min(lives) * 0.8
    hits = {s.name: 0 for s in SIGNALS}
    for sig in SIGNALS:
        for _ in range(5):
            t = spawn(python, "read_loop.py", args=("1",))
            sigblk = _settled(t)
            cli = subprocess.Popen([CLI, "-p", str(t.pid), "inject"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(rng.uniform(0, life))
            cli.send_signal(sig)
            cli.communicate(timeout=30)
            if cli.returncode < 0:
                hits[sig.name] += 1
            _assert_unharmed(t, sigblk)
            _finish(t)
    # Each signal landed while the CLI still ran at least once.
    assert min(hits.values()) >= 1, hits


def test_stale_lock_files_swept(spawn, tmp_path):
    """Lock files a killed CLI left for processes that are gone are removed by the next
    injection (one not held, of a dead pid); a held one, or one of a live process, stays."""
    d = "/tmp/probing-%d" % os.geteuid()
    os.makedirs(d, mode=0o700, exist_ok=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    live = spawn(HOST_PYTHONS[0].values[0], "read_loop.py", args=("1",))
    held_pid = subprocess.Popen(["true"])
    held_pid.wait()
    paths = {k: "%s/%d.inject.lock" % (d, p) for k, p in
             (("gone", gone.pid), ("live", live.pid), ("held", held_pid.pid))}
    for p in paths.values():
        open(p, "w").close()
    import fcntl
    with open(paths["held"]) as h:
        fcntl.flock(h, fcntl.LOCK_EX | fcntl.LOCK_NB)
        t = spawn(HOST_PYTHONS[0].values[0], "read_loop.py", args=("1",))
        probing("-p", t.pid, "inject", check=True)
        assert not os.path.exists(paths["gone"])
        assert os.path.exists(paths["live"]) and os.path.exists(paths["held"])
        assert not os.path.exists("%s/%d.inject.lock" % (d, t.pid))  # its own, unlinked
    for k in ("live", "held"):
        os.unlink(paths[k])
    _finish(live)
    _finish(t)
