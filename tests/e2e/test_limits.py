# SPDX-License-Identifier: MIT
"""Floods before authentication on TCP (`inject --listen`) do not harm the target: the net.*
limits (docs/security.md). Each test sets the other limits out of the way (PROBING_NET_* in the
target's environment) so that the limit it is about is the one that acts. Loopback only; every
client is closed by the test; every wait is bounded."""
import json
import os
import re
import resource
import socket
import subprocess
import threading
import time

import pytest

from conftest import HOST_PYTHONS, probing
from dapclient import DAP, Closed

pytestmark = pytest.mark.serial  # a slow client's timings (a reply within 1 s)

PY = HOST_PYTHONS[-2].values[0]


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1))


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def tcp_conns(pid):
    """Established TCP connections pid holds (its socket descriptors found in /proc/net/tcp*):
    not thrown off by the files the sample opens and closes every tick."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    n = 0
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            n += sum(1 for line in f.readlines()[1:]
                     if line.split()[3] == "01" and line.split()[9] in inodes)
    return n


def listen(t, token="limits-token-0001"):
    r = probing("-p", t.pid, "inject", "--json", "--listen", "127.0.0.1:0",
                env={"PROBING_TOKEN": token}, check=True)
    host, port = json.loads(r.stdout)["address"].rsplit(":", 1)
    return host, int(port), token


def authed(host, port, token):
    """A TCP client past `attach` (what an IDE holds for hours)."""
    c = DAP.tcp(host, port)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"token": token, "probingClient": "cli"})["success"]
    return c


def still_works(c, t):
    r = c.request("threads")
    assert r["success"] and t.pid in [x["id"] for x in r["body"]["threads"]], r


def wait_closed(s, timeout):
    """True if the probe closes s (EOF or reset) within timeout."""
    s.settimeout(0.2)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def probe_log_has(t, text, timeout=10):
    deadline = time.time() + timeout
    while text not in t.probe_log():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_big_bodies_before_attach_keep_rss_bounded(spawn):
    """40 connections, each announcing 16777000 bytes and sending 15 MiB, then staying open:
    each is closed past net.preauth_max_bytes, and the target's peak RSS hardly moves."""
    t = spawn(PY, env={"PROBING_NET_MAX_UNAUTHENTICATED": "64",
                       "PROBING_NET_AUTH_TIMEOUT_MS": "600000"})
    host, port, token = listen(t)
    ide = authed(host, port, token)
    before = status_kb(t.pid, "VmHWM")
    chunk = b"x" * (1 << 20)
    socks, closed = [], []

    def flood():
        s = socket.create_connection((host, port), timeout=10)
        socks.append(s)
        try:
            s.sendall(b"Content-Length: 16777000\r\n\r\n")
            for _ in range(15):
                s.sendall(chunk)
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            closed.append(s)

    threads = [threading.Thread(target=flood) for _ in range(40)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    try:
        grown = status_kb(t.pid, "VmHWM") - before
        print("VmHWM before %d kB, after %d kB" % (before, before + grown))
        if not os.environ.get("PROBING_TARGET_PRELOAD"):  # ASan's shadow: not compared
            assert grown < 32 * 1024, "the target grew by %d kB before any attach" % grown
        assert all(wait_closed(s, 10) for s in socks), "a flooding connection was left open"
        assert probe_log_has(t, "Content-Length over the limit of 8192 bytes")
        still_works(ide, t)
    finally:
        for s in socks:
            s.close()
        ide.close()
    t.assert_responsive()
    t.check_output_clean()


def _flood_idle(host, port, n):
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            pass  # refused or timed out: the probe is not obliged to take it
    return socks


def _last_value(t):
    """The value of the sample's newest tick, after two new ones."""
    before = t.ticks()
    deadline = time.time() + 10
    while t.ticks() < before + 2:
        assert time.time() < deadline, "the target stopped ticking"
        time.sleep(0.05)
    return int(re.findall(r"^tick \d+ value=(-?\d+)$", t.output(), re.M)[-1])


def _raise_own_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))


def test_idle_connections_capped_under_ulimit(spawn):
    """`ulimit -n 1024`, 1100 idle TCP connections with the default limits: the probe keeps
    net.max_unauthenticated (8) of them, the target can still open files, an authenticated
    client works, and the target's descriptors are back once the flood is gone."""
    _raise_own_nofile()
    t = spawn(PY, "fd_user.py", launcher=["prlimit", "--nofile=1024:1024", "--"])
    assert _last_value(t) == 0
    host, port, token = listen(t)
    ide = authed(host, port, token)
    assert tcp_conns(t.pid) == 1
    socks = _flood_idle(host, port, 1100)
    try:
        held = tcp_conns(t.pid) - 1
        print("1100 idle connections: %d connected, the target holds %d of them (%d descriptors "
              "in all)" % (len(socks), held, nfds(t.pid)))
        assert held <= 8, "the probe holds %d connections of unauthenticated clients" % held
        assert _last_value(t) == 0, "the target could not open files"
        assert probe_log_has(t, "TCP connections not past attach (net.max_unauthenticated)")
        still_works(ide, t)
    finally:
        for s in socks:
            s.close()
    still_works(authed(host, port, token), t)
    ide.close()
    t.assert_responsive()
    t.check_output_clean()


def test_descriptors_kept_for_the_target(spawn):
    """With the caps and the deadline out of the way (1024 each, 10 minutes), 1100 idle connections stop at net.fd_reserve
    (64) descriptors short of `ulimit -n 1024`: the target, holding 600 of its own, can still
    open 8 more each tick."""
    _raise_own_nofile()
    t = spawn(PY, "fd_user.py", args=("600",), launcher=["prlimit", "--nofile=1024:1024", "--"],
              env={"PROBING_NET_MAX_CONNECTIONS": "1024",
                   "PROBING_NET_MAX_UNAUTHENTICATED": "1024",
                   "PROBING_NET_AUTH_TIMEOUT_MS": "600000"})
    assert _last_value(t) == 0
    host, port, token = listen(t)
    socks = _flood_idle(host, port, 1100)
    try:
        n = nfds(t.pid)
        print("1100 idle connections: %d connected, the target has %d of 1024 descriptors open"
              % (len(socks), n))
        # + 8: the sample's own files of the moment, open while it ticks
        assert n <= 1024 - 64 + 8, "the probe left the target %d descriptors" % (1024 - n)
        assert n > 900, "the flood did not reach the reserve (%d open): the test proves nothing" % n
        assert _last_value(t) == 0, "the target could not open files"
        assert probe_log_has(t, "kept for the target (net.fd_reserve)")
    finally:
        for s in socks:
            s.close()
    t.assert_responsive()
    t.check_output_clean()


def test_slow_and_silent_clients_dropped_after_auth_timeout(spawn):
    """net.auth_timeout_ms (set live to 1500 ms): a client sending one byte every 0.25 s and one
    sending nothing are both closed, whatever they send; an authenticated client idle for twice
    as long is not."""
    t = spawn(PY)
    host, port, token = listen(t)
    probing("-p", t.pid, "config", "net.auth_timeout_ms=1500", check=True)
    ide = authed(host, port, token)
    silent = socket.create_connection((host, port), timeout=5)
    slow = socket.create_connection((host, port), timeout=5)
    slow.settimeout(0.25)
    msg = b"Content-Length: 200\r\n\r\n" + b" " * 200
    start, sent, dropped = time.time(), 0, False
    try:
        while time.time() - start < 10 and not dropped:
            try:
                slow.sendall(msg[sent % len(msg):sent % len(msg) + 1])
                sent += 1
                if slow.recv(100) == b"":
                    dropped = True
            except socket.timeout:
                pass
            except (ConnectionResetError, BrokenPipeError):
                dropped = True
        took = time.time() - start
        print("slow client dropped after %.1f s, %d bytes" % (took, sent))
        assert dropped, "a client sending a byte every 0.25 s was kept %d s" % took
        assert wait_closed(silent, 5), "a silent client was kept"
        assert probe_log_has(t, "not past attach within 1500 ms (net.auth_timeout_ms)")
        time.sleep(1.5)
        still_works(ide, t)  # idle for more than twice the timeout, authenticated
    finally:
        silent.close()
        slow.close()
        ide.close()
    t.assert_responsive()
    t.check_output_clean()


def test_limits_are_settings(spawn):
    t = spawn(PY, env={"PROBING_NET_FD_RESERVE": "100"})
    probing("-p", t.pid, "inject", check=True)
    r = probing("-p", t.pid, "query", "SELECT name, value, default_value FROM probing.settings "
                "WHERE name LIKE 'net.%' ORDER BY name", "-f", "json", check=True)
    got = {x["name"]: (x["value"], x["default_value"]) for x in json.loads(r.stdout)}
    assert got == {"net.auth_timeout_ms": ("10000", "10000"), "net.fd_reserve": ("100", "64"),
                   "net.max_connections": ("64", "64"),
                   "net.max_unauthenticated": ("8", "8"),
                   "net.preauth_max_bytes": ("8192", "8192")}, got
    t.check_output_clean()


def test_reconnecting_flood_does_not_lock_out_token_holder(spawn):
    """Issue 37 item 8: eight clients that connect from 127.0.0.2, never attach and reconnect
    the moment they are closed hold net.max_unauthenticated (8) for good; a new connection then
    takes the place of the oldest of the address holding the most (it was refused), so the token
    holder's CLI (`-t`, from 127.0.0.1) gets in within a second, every time."""
    t = spawn(PY)
    host, port, token = listen(t)
    stop = threading.Event()
    reconnects = [0]

    def attacker():
        while not stop.is_set():
            try:
                s = socket.socket()
                s.bind(("127.0.0.2", 0))
                s.settimeout(5)
                s.connect((host, port))
            except OSError:
                time.sleep(0.01)
                continue
            reconnects[0] += 1
            while not stop.is_set():  # held until the probe closes it, then again at once
                try:
                    s.settimeout(0.2)
                    if s.recv(100) == b"":
                        break
                except socket.timeout:
                    continue
                except OSError:
                    break
            s.close()
    threads = [threading.Thread(target=attacker) for _ in range(8)]
    for th in threads:
        th.start()
    try:
        deadline = time.time() + 5
        while tcp_conns(t.pid) < 8 and time.time() < deadline:
            time.sleep(0.05)
        assert tcp_conns(t.pid) >= 8, "the flood did not reach the cap: the test proves nothing"
        took = []
        for _ in range(5):
            t0 = time.time()
            r = probing("-t", "%s:%d" % (host, port), "debug", "--dump", "--json",
                        env={"PROBING_TOKEN": token}, timeout=20)
            took.append(time.time() - t0)
            assert r.returncode == 0, (r.returncode, r.stderr)
            assert json.loads(r.stdout)["threads"]
            time.sleep(0.3)
        print("token holder through 8 reconnecting clients: %s ms; %d connects"
              % (", ".join("%.0f" % (x * 1000) for x in took), reconnects[0]))
        assert max(took) < 1.0, took
        assert tcp_conns(t.pid) <= 8 + 1
        assert probe_log_has(t, "closed the oldest TCP connection not past attach")
    finally:
        stop.set()
        for th in threads:
            th.join(10)
    t.assert_responsive()
    t.check_output_clean()


def test_refusal_says_why(spawn):
    """A target short of descriptors (a soft `ulimit -n` of 48, under net.fd_reserve's 64):
    the probe loads but refuses every connection, and says why before closing it (a
    `probing/refused` event): the CLI's one-line error names the reason and the fix, not a
    closed connection. Raising the live target's soft limit (prlimit --pid) is that fix."""
    t = spawn(PY, launcher=["prlimit", "--nofile=48:4096", "--"])
    r = probing("-p", t.pid, "inject")
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r
    assert re.match(r"probing: error: the probe refused the connection: \d+ of 48 descriptors "
                    r"open, 64 kept for the target \(net\.fd_reserve\): raise the target's "
                    r"open-file limit \(prlimit --pid PID --nofile=N\) and retry$", r.stderr), r
    assert probe_log_has(t, "kept for the target (net.fd_reserve)")
    subprocess.run(["prlimit", "--pid", str(t.pid), "--nofile=1024:4096"], check=True, timeout=30)
    r = probing("-p", t.pid, "debug", "--dump", check=True)
    assert "MainThread" in r.stdout, r.stdout
    t.assert_responsive()
    t.check_output_clean()
