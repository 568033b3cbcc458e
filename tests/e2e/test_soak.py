# SPDX-License-Identifier: MIT
"""Soak (issue 6, "never harm the target"): 500 debugging sessions (attach, a pause or a
breakpoint, stackTrace, scopes, variables, continue, disconnect or a vanished client) and 500
CLI runs (`debug --dump --json`, `query`) against one running debuggee, on the C trace function
+ PEP 523 gate (3.8) and on sys.monitoring (3.12). The target's resident memory (within 2 MB),
open fds and threads after all of them must match what they were after the first cycle of each
kind, the target must still tick, and the debugger must have left nothing behind."""
import json
import os
import socket
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import OLDEST_HOST, PYTHONS, SAMPLES, bp, probing, sock_name
from dapclient import DAP, Closed
from dbgutil import assert_clean

pytestmark = pytest.mark.serial  # counts of requests and growth over fixed windows

CYCLES = 500  # debugging sessions
CLI_RUNS = 500  # CLI processes, alternating dump and query
CLI_WORKERS = 3
RSS_SLACK_KB = 2048
# make asan: the target preloads ASan, whose quarantine holds freed memory (256 MB).
SANITIZED = bool(os.environ.get("PROBING_TARGET_PRELOAD"))
# The oldest (3.8-3.10): the C trace function and the PEP 523 gate; 3.11: entry hooks
# (hooks_entry.c: the breakpoint function swapped and put back every cycle); 3.12:
# sys.monitoring. A missing one fails.
GATE = OLDEST_HOST if OLDEST_HOST in ("3.8", "3.9", "3.10") else "3.8"
SOAK_PYTHONS = [next((p for p in PYTHONS if p.id == v), pytest.param(None, id=v))
                for v in (GATE, "3.11", "3.12")]


def sock_path(pid):
    return "/tmp/probing-%d/%s" % (os.geteuid(), sock_name(pid))


def usage(pid):
    with open("/proc/%d/status" % pid) as f:
        kb = {l.split(":")[0]: int(l.split()[1]) for l in f if l.startswith(("VmRSS", "RssAnon",
                                                                               "RssFile"))}
    return {"rss_kb": kb["VmRSS"], "anon_kb": kb["RssAnon"], "file_kb": kb["RssFile"],
            "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": len(os.listdir("/proc/%d/task" % pid))}


def fd_targets(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            pass
    return out


def open_sessions(pid):
    """Connections the probe still holds: the target's socket fds that /proc/net/unix lists as
    connected on the probe's socket path (accepted sockets carry the listener's path)."""
    path = sock_path(pid)
    connected = set()
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[7] == path and parts[5] == "03":
                connected.add(parts[6])
    return [fd for fd, link in fd_targets(pid).items()
            if link.startswith("socket:[") and link[8:-1] in connected]


def idle_usage(pid, timeout=10):
    """/proc figures once the probe has closed every connection (the CLI does not wait for the
    probe to close its side, so that happens a little after the CLI exits)."""
    deadline = time.time() + timeout
    while open_sessions(pid):
        assert time.time() < deadline, "the probe still holds connections %r after %ss" % (
            open_sessions(pid), timeout)
        time.sleep(0.02)
    return usage(pid), fd_targets(pid), thread_names(pid)


def thread_names(pid):
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out[int(tid)] = f.read().strip()
        except FileNotFoundError:
            pass
    return out


def summary(now, then):
    """What `now` has that `then` has not (fd -> link or tid -> name), counted by value."""
    new = Counter(v for k, v in now.items() if then.get(k) != v)
    return ", ".join("%s x%d" % kv for kv in new.most_common(5)) or "none"


class Session:
    """One debugging client over the Unix socket, with bounded waits."""

    def __init__(self, pid):
        self.c = DAP.unix(sock_path(pid))

    def req(self, command, args=None):
        r = self.c.request(command, args, timeout=10)
        assert r["success"], (command, r)
        return r["body"] if "body" in r else {}

    def attach(self, timeout=10):
        # After a client that vanished, the probe frees the seat when it sees the EOF: a new
        # client may get there first and is told to wait.
        deadline = time.time() + timeout
        while True:
            r = self.c.request("attach", {}, timeout=10)
            if r["success"]:
                return
            assert "another debugging client" in r["message"] and time.time() < deadline, r
            time.sleep(0.005)

    def stopped(self, timeout=10):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.c.events):
                if e["event"] == "stopped":
                    del self.c.events[i]
                    return e["body"]
            left = deadline - time.time()
            assert left > 0, "no stopped event within %ss: %r" % (
                timeout, [e["event"] for e in self.c.events])
            try:
                m = self.c.read(timeout=left)
            except TimeoutError:
                continue
            if m["type"] == "event":
                self.c.events.append(m)

    def closed(self, timeout=10):
        """The probe closes the connection (EOF) after a disconnect."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                m = self.c.read(timeout=max(0.01, deadline - time.time()))
            except (Closed, ConnectionResetError):
                return True
            except TimeoutError:
                break
            assert m["type"] == "event", m
        return False


# How cycle i ends: continue + disconnect, except for i % 10 == 4 (disconnect while stopped)
# and i % 10 == 9 (the client vanishes: closes its socket without a disconnect, after continuing,
# or while stopped when i % 20 == 19).
FIRST_OF_EACH_KIND = [0, 1, 4, 9, 19]


def debug_cycle(t, i, path, add_line):
    """Cycle i: odd cycles stop at a breakpoint in add(), even ones pause."""
    use_bp = i % 2 == 1
    vanish = i % 10 == 9
    leave_stopped = i % 10 == 4 or i % 20 == 19
    s = Session(t.pid)
    try:
        s.req("initialize", {"adapterID": "soak"})
        s.attach()
        s.req("configurationDone")
        if use_bp:
            b = s.req("setBreakpoints", {"source": {"path": path},
                                         "breakpoints": [{"line": add_line}]})["breakpoints"]
            assert b[0]["verified"], b
        else:
            s.req("pause", {"threadId": t.ready["main"]})
        st = s.stopped()
        assert st["reason"] == ("breakpoint" if use_bp else "pause"), st
        tid = st["threadId"]
        frames = s.req("stackTrace", {"threadId": tid})["stackFrames"]
        assert frames, st
        if use_bp:
            assert (frames[0]["name"], frames[0]["line"]) == ("add", add_line), frames[0]
        scopes = s.req("scopes", {"frameId": frames[0]["id"]})["scopes"]
        local = [sc for sc in scopes if sc["presentationHint"] == "locals"][0]
        names = {v["name"]: v["value"]
                 for v in s.req("variables", {"variablesReference": local["variablesReference"]})
                 ["variables"]}
        assert names, (frames[0], local)
        if use_bp:
            assert "a" in names and names["b"] == "1", names
            s.req("setBreakpoints", {"source": {"path": path}, "breakpoints": []})
        if not leave_stopped:
            assert s.req("continue", {"threadId": tid})["allThreadsContinued"] is True
        if vanish:
            s.c.sock.shutdown(socket.SHUT_RDWR)
            return
        s.req("disconnect")
        assert s.closed(), "cycle %d: the probe did not close the connection after disconnect" % i
    finally:
        s.c.close()


def cli_run(pid, i):
    if i % 2 == 0:
        r = probing("-p", pid, "debug", "--dump", "--json", timeout=30)
        assert r.returncode == 0, ("dump", i, r.returncode, r.stderr)
        threads = json.loads(r.stdout)["threads"]
        assert any(th["main"] for th in threads), threads
    else:
        r = probing("-p", pid, "query", "SELECT count(*) FROM python.threads", timeout=30)
        assert r.returncode == 0, ("query", i, r.returncode, r.stderr)
        assert r.stdout.split()[:2] == ["count(*)", "--------"] and r.stdout.split()[2] == "2", (
            r.stdout)


def describe(before, after):
    return ("VmRSS %d kB -> %d kB (%+d kB: anonymous %+d, file-backed %+d), fds %d -> %d, "
            "threads %d -> %d" % (
                before["rss_kb"], after["rss_kb"], after["rss_kb"] - before["rss_kb"],
                after["anon_kb"] - before["anon_kb"], after["file_kb"] - before["file_kb"],
                before["fds"], after["fds"], before["threads"], after["threads"]))


@pytest.mark.parametrize("python", SOAK_PYTHONS)
def test_soak(python, spawn):
    assert python, "this CPython was not found (tools/pythons.sh lists what pyenv has)"
    t = spawn(python, "debuggee.py")
    probing("-p", t.pid, "inject", check=True)
    path = os.path.join(SAMPLES, "debuggee.py")
    add_line = bp("debuggee.py", "add_body")
    start = time.time()

    # The first cycle of each kind (a pause, a breakpoint, each way of leaving, a dump, a query)
    # brings in what is loaded or built once (the store, the interpreter's per-code
    # instrumentation, thread stacks); then the baseline.
    first = FIRST_OF_EACH_KIND
    for i in first:
        debug_cycle(t, i, path, add_line)
    cli_run(t.pid, 0)
    cli_run(t.pid, 1)
    assert_clean(t)
    base, base_fds, base_tasks = idle_usage(t.pid)

    # The rest: the CLI runs in a small pool, submitted one per debugging session so that
    # they run beside the sessions (and beside stopped threads) all along. On a failure the
    # queued runs are cancelled, so the test ends soon after.
    runs = iter(range(2, CLI_RUNS))
    cli = []
    with ThreadPoolExecutor(CLI_WORKERS) as pool:
        try:
            for i in range(CYCLES):
                for f in cli:
                    if f.done() and f.exception():
                        f.result()
                n = next(runs, None)
                if n is not None:
                    cli.append(pool.submit(cli_run, t.pid, n))
                if i not in first:
                    debug_cycle(t, i, path, add_line)
            cli += [pool.submit(cli_run, t.pid, n) for n in runs]
            for f in cli:
                f.result()
        finally:
            for f in cli:
                f.cancel()
    wall = time.time() - start

    t.assert_responsive()
    assert_clean(t)
    after, after_fds, after_tasks = idle_usage(t.pid)
    print("\nsoak %s: %d debugging sessions + %d CLI runs in %.1f s; %s" % (
        python, CYCLES, CLI_RUNS, wall, describe(base, after)))

    leaks = []
    grown = after["rss_kb"] - base["rss_kb"]
    if SANITIZED:
        print("(RSS not compared: ASan's quarantine keeps freed memory resident by design)")
    elif grown >= RSS_SLACK_KB:
        leaks.append("VmRSS grew by %d kB (limit %d kB)" % (grown, RSS_SLACK_KB))
    if after["fds"] != base["fds"]:
        leaks.append("open fds %d -> %d (%+d): new %s; gone %s" % (
            base["fds"], after["fds"], after["fds"] - base["fds"],
            summary(after_fds, base_fds), summary(base_fds, after_fds)))
    if after["threads"] != base["threads"]:
        leaks.append("threads %d -> %d (%+d): new %s; gone %s" % (
            base["threads"], after["threads"], after["threads"] - base["threads"],
            summary(after_tasks, base_tasks), summary(base_tasks, after_tasks)))
    assert not leaks, "the soak leaked: " + "; ".join(leaks)
    t.check_output_clean()
