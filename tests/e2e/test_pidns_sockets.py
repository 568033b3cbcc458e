# SPDX-License-Identifier: MIT
"""The probe's socket name across PID namespaces (issue 37 item 7): two processes with the same
pid in two PID namespaces (unshare --pid --fork --mount-proc) that share /tmp each get their
own socket (<pid>-<pid namespace inode>.sock) and both answer; a live socket at a probe's path
is never taken over, and the CLI says what listens there."""
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import SAMPLES, probing, sanitizer_env, sock_name  # noqa: E402

FAKE = os.path.join(SAMPLES, "fake_rank.py")


def _start_in_pidns(out):
    """python3 fake_rank.py as pid 1 of a new PID namespace; returns (unshare's Popen, the
    python's pid as we see it)."""
    p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "/usr/bin/python3", FAKE],
                         stdout=open(out, "w"), stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True,
                         env=dict(os.environ, **sanitizer_env()))
    deadline = time.time() + 30
    while time.time() < deadline:
        if re.search(r"^ready ", open(out).read(), re.M):
            kids = []
            for t in os.listdir("/proc/%d/task" % p.pid):
                with open("/proc/%d/task/%s/children" % (p.pid, t)) as f:
                    kids += [int(x) for x in f.read().split()]
            assert len(kids) == 1, kids
            return p, kids[0]
        assert p.poll() is None, open(out).read()
        time.sleep(0.05)
    raise AssertionError("not ready: " + open(out).read())


def _kill(procs):
    for p in procs:
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.wait(timeout=10)


def test_same_pid_in_two_pid_namespaces(tmp_path):
    procs = []
    try:
        a, pa = _start_in_pidns(tmp_path / "a.out")
        procs.append(a)
        b, pb = _start_in_pidns(tmp_path / "b.out")
        procs.append(b)
        for pid in (pa, pb):
            with open("/proc/%d/status" % pid) as f:
                assert re.search(r"^NSpid:\s+%d\s+1$" % pid, f.read(), re.M)
        assert sock_name(pa) != sock_name(pb) and sock_name(pa).startswith("1-")
        for pid in (pa, pb):
            r = probing("-p", pid, "inject")
            assert r.returncode == 0, r.stderr
        for pid in (pa, pb):  # each its own probe's answer, the first not taken over
            r = probing("-p", pid, "debug", "--dump", "--json")
            assert r.returncode == 0, r.stderr
            d = json.loads(r.stdout)
            main = [t for t in d["threads"] if t["main"]][0]
            assert d["pid"] == 1 and main["frames"][0]["name"] == "wait_for_work", d
            assert os.path.exists("/tmp/probing-%d/%s" % (os.geteuid(), sock_name(pid)))
    finally:
        _kill(procs)


def test_live_socket_is_never_taken_over(tmp_path):
    """Something of the same user already listens at the probe's path: the probe does not unlink
    it (it serves nothing, saying why in its log), and the CLI names the listener instead of
    blaming another user."""
    procs = []
    srv = socket.socket(socket.AF_UNIX)
    path = None
    try:
        a, pa = _start_in_pidns(tmp_path / "a.out")
        procs.append(a)
        d = "/tmp/probing-%d" % os.geteuid()
        os.makedirs(d, mode=0o700, exist_ok=True)
        path = os.path.join(d, sock_name(pa))
        if os.path.exists(path):  # a dead one of an earlier namespace with this inode
            os.unlink(path)
        srv.bind(path)
        srv.listen(4)
        ino = os.stat(path).st_ino
        r = probing("--timeout", "3000", "-p", pa, "debug", "--dump")
        assert r.returncode != 0
        assert os.stat(path).st_ino == ino, "the live socket was replaced"
        line = r.stderr.strip()
        assert ("served by process %d (uid %d), not by %d: another process of the target's own "
                "user listens there" % (os.getpid(), os.geteuid(), pa)) in line, line
        assert "another user" not in line and len(line.splitlines()) == 1, line
    finally:
        srv.close()
        _kill(procs)
        if path and os.path.exists(path):
            os.unlink(path)
