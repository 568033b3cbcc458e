# SPDX-License-Identifier: MIT
"""Never harm the target: bad bytes on the socket, bad and out-of-order requests, twenty CLI
clients beside a debugging session, clients that stop reading, the target forking, exec'ing or
exiting mid-request, and a target with a private /tmp. In each case the peer gets an error
answer or a closed connection, the probe keeps serving (a new client works), and the target is
unharmed: alive, ticking, nothing of ours in its output. Framing is unit-tested per byte split in
tests/unit/test_dap.c; here it is the real probe in a real target. Fork and exec (samples/forker.py)
run on every CPython; the rest does not depend on the interpreter and runs on one."""
import json
import os
import random
import re
import select
import signal
import socket
import subprocess
import time
from types import SimpleNamespace

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS, dump_json, probe_sock, probing, sock_name
from dapclient import DAP
from dbgutil import Debugger, assert_clean

PY = HOST_PYTHONS[-2].values[0]  # a pyenv CPython we have a build for
UID = os.geteuid()


def sock_path(pid):
    return probe_sock(pid)


def frame(body):
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def cli_client(pid):
    c = DAP.unix(sock_path(pid))
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    return c


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def wait_fds(pid, n, timeout=10):
    """The target is back to n descriptors: every connection we opened is closed on its side."""
    deadline = time.time() + timeout
    while nfds(pid) > n:
        assert time.time() < deadline, "connections left open in %d: %r" % (
            pid, sorted(os.readlink("/proc/%d/fd/%s" % (pid, f))
                        for f in os.listdir("/proc/%d/fd" % pid)))
        time.sleep(0.05)


def wait_log(t, text, seen=0, timeout=10):
    """The probe's log holds text more than `seen` times."""
    deadline = time.time() + timeout
    while t.probe_log().count(text) <= seen:
        assert time.time() < deadline, "%r not in the probe's log (again)" % text
        time.sleep(0.05)


def wait_stopped(c, timeout=10):
    """The next `stopped` event on DAP client c (other events are kept in c.events)."""
    return Debugger.wait_event(SimpleNamespace(c=c), "stopped", timeout)["body"]


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1))


def still_serves(t):
    """A new client works (a full CLI command) and the target keeps running."""
    d = dump_json(t.pid)
    assert d["pid"] == t.pid and any(th["main"] and th["frames"] for th in d["threads"]), d
    t.assert_responsive()


def still_open(c):
    """The peer has not closed c (checked without waiting and without reading)."""
    r, _, _ = select.select([c.sock], [], [], 0)
    return not r or c.sock.recv(1, socket.MSG_PEEK) != b""


def agent_answers(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    finally:
        s.close()


def probe_copies(pid):
    """Paths of the probe libraries pid maps; a copy the injector made (and removed once
    loaded) ends in " (deleted)"."""
    with open("/proc/%d/maps" % pid) as f:
        return {line.split(None, 5)[-1].strip() for line in f if "/libprobing-" in line}


# ---- bytes and requests ----

def test_bad_bytes_close_only_that_connection(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    base = nfds(t.pid)
    # A client holding half a frame open holds up nobody.
    held = DAP.unix(sock_path(t.pid))
    held.send_raw(b'Content-Length: 200\r\n\r\n{"seq": 1, "type": ')
    garbage = bytes(b for b in random.Random(6).randbytes(20000) if b != 13)  # no header end
    deep = b"[" * 100000 + b"]" * 100000
    cases = [
        (garbage, "header longer than 1024 bytes"),
        (b"X-Other: 1\r\n\r\n{}", "missing or invalid Content-Length"),
        (b"Content-Length: -1\r\n\r\n{}", "missing or invalid Content-Length"),
        (b"Content-Length: 1073741824\r\n\r\n{", "Content-Length over the limit"),
        (frame(deep), "body is not valid JSON"),
        (frame(b'{"seq": 1, "type": "request", "command": "threads"'), "body is not valid JSON"),
        (frame(b'{"seq": 1, "type": "request", "command": "x\xff\xfe"}'),
         "message is not valid UTF-8"),
        (frame(b'{"seq": 1, "type": "request"}'), "request.command: expected string"),
        (frame(b'{"seq": 1e300, "type": "request", "command": "threads"}'),
         "message.seq: expected integer"),
    ]
    for data, reason in cases:
        seen = t.probe_log().count("closing connection: " + reason)
        c = DAP.unix(sock_path(t.pid))
        c.send_raw(data)
        assert c.closed_within(5), "not closed after %r" % data[:60]
        c.close()
        wait_log(t, "closing connection: " + reason, seen)
        assert still_open(held), "another connection was closed"
    # A frame cut off half-way, then the client hangs up.
    c = DAP.unix(sock_path(t.pid))
    c.send_raw(frame(json.dumps({"seq": 1, "type": "request", "command": "threads"}).encode())[:30])
    c.close()
    # A valid request one byte at a time is answered.
    c = DAP.unix(sock_path(t.pid))
    for b in frame(b'{"seq": 1, "type": "request", "command": "initialize", "arguments": {}}'):
        c.send_raw(bytes([b]))
    assert c.read()["success"]
    c.close()
    still_serves(t)
    held.close()
    wait_fds(t.pid, base)
    still_serves(t)
    t.check_output_clean()


def test_bad_arguments_get_error_answers(spawn):
    t = spawn(PY, "debuggee.py")
    d = Debugger(t)
    main = t.ready["main"]
    path = d.path
    cases = [
        ("frobnicate", {}, "unknown command 'frobnicate'"),
        ("", None, "unknown command ''"),
        ("launch", {"program": path}, "unknown command 'launch'"),
        ("terminate", {}, "unknown command 'terminate'"),
        ("x" * 5000, None, "unknown command 'xxx"),
        ("threads", [], "arguments: expected object"),
        ("stackTrace", {"threadId": str(main)}, "arguments.threadId: expected integer"),
        ("stackTrace", {"threadId": main, "levels": "all"}, "arguments.levels: expected integer"),
        ("pause", {"threadId": "main"}, "arguments.threadId: expected integer"),
        ("continue", {"threadId": 1.5}, "arguments.threadId: expected integer"),
        ("next", {"threadId": 1e300}, "arguments.threadId: expected integer"),
        ("exceptionInfo", {"threadId": {}}, "arguments.threadId: expected integer"),
        ("scopes", {"frameId": 1.5}, "arguments.frameId: expected integer"),
        ("variables", {"variablesReference": "1"}, "arguments.variablesReference: expected integer"),
        ("setBreakpoints", {"source": {"path": path}, "breakpoints": {"line": 3}},
         "arguments.breakpoints: expected array"),
        ("setBreakpoints", {"source": path, "breakpoints": [{"line": 3}]}, "arguments.source.path"),
        ("setFunctionBreakpoints", {"breakpoints": "add"}, "arguments.breakpoints: expected array"),
        ("setExceptionBreakpoints", {"filters": "raised"}, "arguments.filters: expected array"),
        ("setExceptionBreakpoints", {"filters": [1]}, "arguments.filters: expected strings"),
        ("evaluate", {"expression": ["1"]}, "arguments.expression: expected string"),
        ("evaluate", {"expression": "1", "frameId": "0"}, "arguments.frameId: expected integer"),
        ("setVariable", {"variablesReference": 1, "name": 3, "value": "1"},
         "arguments.name: expected string"),
        ("source", {"sourceReference": "1"}, "arguments.sourceReference: expected integer"),
        ("probing/dump", {"maxFrames": "all"}, "arguments.maxFrames: expected integer"),
        ("probing/dump", {"locals": "yes"}, "arguments.locals: expected boolean"),
        ("probing/query", {"sql": 1}, "arguments.sql: expected string"),
        ("probing/eval", {"code": {"x": 1}}, "arguments.code: expected string"),
        ("probing/config", {"key": ["query.max_rows"]}, "arguments.key: expected string"),
        ("probing/memory", {"top": "10"}, "arguments.top: expected integer"),
        ("probing/pause", {"hold": "yes"}, "arguments.hold: expected boolean"),
    ]
    for command, args, message in cases:
        r = d.req(command, args, ok=False)
        assert not r["success"] and message in r["message"], (command, args, r)
        assert r["body"]["error"]["format"] == r["message"]
    # The same connection goes on; nothing was set, nothing stopped.
    assert {th["id"] for th in d.req("threads")["body"]["threads"]} >= {main, t.ready["worker"]}
    st = d.state()
    assert st["breakpoints"] == 0 and not st["stopped"] and not st["raised"], st
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_requests_out_of_order(python, spawn):
    t = spawn(python, "debuggee.py")
    probing("-p", t.pid, "inject", check=True)
    main = t.ready["main"]
    c = DAP.unix(sock_path(t.pid))
    for command, args in [("variables", {"variablesReference": 1}), ("scopes", {"frameId": 0}),
                          ("stackTrace", {"threadId": main}), ("threads", None),
                          ("continue", {"threadId": main}), ("next", {"threadId": main}),
                          ("evaluate", {"expression": "1"}), ("configurationDone", None),
                          ("setBreakpoints", {"source": {"path": "x.py"}, "breakpoints": []}),
                          ("probing/pause", {})]:
        r = c.request(command, args)
        assert not r["success"] and "not attached: send 'attach'" in r["message"], (command, r)
    # A CLI client may not drive the debugger.
    cli = cli_client(t.pid)
    r = cli.request("pause", {"threadId": main})
    assert not r["success"] and "is for the debugging client" in r["message"], r
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {})["success"]
    assert c.request("configurationDone")["success"]
    # Nothing is stopped: stepping, frames and references are refused.
    for command, args, message in [
            ("next", {"threadId": main}, "is not stopped"),
            ("stepIn", {"threadId": main}, "is not stopped"),
            ("stepOut", {"threadId": main}, "is not stopped"),
            ("scopes", {"frameId": 0}, "frame 0"),
            ("variables", {"variablesReference": 12345}, "variablesReference 12345"),
            ("setVariable", {"variablesReference": 12345, "name": "n", "value": "1"},
             "variablesReference 12345"),
            ("exceptionInfo", {"threadId": main}, "is not stopped on an exception")]:
        r = c.request(command, args)
        assert not r["success"] and message in r["message"], (command, r)
    # continue with nothing stopped: harmless.
    for _ in range(2):
        r = c.request("continue", {"threadId": main})
        assert r["success"] and r["body"]["allThreadsContinued"] is True, r
    t.assert_responsive()
    assert not [e for e in c.events if e["event"] == "stopped"], c.events
    # The session still works: a pause and a step, then continue.
    assert c.request("pause", {"threadId": main})["success"]
    st = wait_stopped(c)
    assert c.request("next", {"threadId": st["threadId"]})["success"]
    assert wait_stopped(c)["reason"] == "step"
    assert c.request("continue", {"threadId": main})["success"]
    assert c.request("disconnect")["success"]
    # After disconnect the connection is closed.
    try:
        c.send("threads")
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert c.closed_within(5)
    assert cli.request("threads")["success"]  # the CLI client was never disturbed
    cli.close()
    assert_clean(t)
    t.assert_responsive()
    t.check_output_clean()


# ---- load ----

def test_twenty_cli_clients_beside_a_debugging_session(spawn):
    t = spawn(PY, "debuggee.py")
    d = Debugger(t)
    base = nfds(t.pid)
    main, worker = t.ready["main"], t.ready["worker"]
    d.req("pause", {"threadId": main})
    d.stopped()
    procs = []
    for i in range(20):
        args = (["debug", "--dump", "--json"] if i % 2 else
                ["query", "SELECT count(*) AS n FROM python.threads", "--format", "json"])
        procs.append((args[0], subprocess.Popen([CLI, "-p", str(t.pid), *args], text=True,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    cycles, deadline = 0, time.time() + 60
    while any(p.poll() is None for _, p in procs):
        assert time.time() < deadline, "CLI clients still running after %d cycles" % cycles
        d.req("continue", {"threadId": main})
        d.req("pause", {"threadId": main})
        assert d.stopped()["reason"] == "pause"
        cycles += 1
    d.req("continue", {"threadId": main})
    for kind, p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and err == "", (kind, p.returncode, err)
        if kind == "query":
            assert json.loads(out) == [{"n": 2}], out
        else:
            assert {th["id"] for th in json.loads(out)["threads"]} == {main, worker}, out
    t.assert_responsive()
    d.req("disconnect")
    assert_clean(t)
    wait_fds(t.pid, base - 1)  # the debugging client's connection is gone too
    t.check_output_clean()


def test_client_that_stops_reading_is_dropped(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    base = nfds(t.pid)
    c = cli_client(t.pid)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    big = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 10000) "
           "SELECT i, printf('%0200d', i) FROM n")  # about 2 MB per answer
    for _ in range(40):
        c.send("probing/query", {"sql": big})
    still_serves(t)  # others are served meanwhile
    wait_log(t, "client is not reading (over 33554432 bytes queued): dropping it", timeout=30)
    assert c.closed_within(10)
    c.close()
    wait_fds(t.pid, base)
    still_serves(t)
    t.check_output_clean()


def test_client_flooding_requests_is_dropped(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    base, rss = nfds(t.pid), status_kb(t.pid, "VmRSS")
    c = cli_client(t.pid)
    c.sock.settimeout(10)
    # Small answers that take a while (each evaluation waits for the worker): without a bound,
    # what is queued behind them grows with every request read.
    req = frame(json.dumps({"seq": 9, "type": "request", "command": "probing/eval",
                            "arguments": {"code": "import time; time.sleep(0.05)"}}).encode())
    sent, dropped = 0, False
    while sent < 200000 and not dropped:
        try:
            c.send_raw(req * 500)
            sent += 500
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
    assert dropped, "the probe took %d requests without dropping the client" % sent
    grown = status_kb(t.pid, "VmHWM") - rss
    if not os.environ.get("PROBING_TARGET_PRELOAD"):  # ASan's shadow and quarantine: not compared
        assert grown < 64 * 1024, "the target grew by %d kB for one client" % grown
    wait_log(t, "requests in flight and sent 'probing/eval': dropping it")
    c.close()
    wait_fds(t.pid, base)
    still_serves(t)
    t.check_output_clean()


# ---- the target's own life: fork, exec, exit ----

def child_ticks(t):
    return len(re.findall(r"^ok child tick \d+$", t.output(), re.M))


def wait_child_ticks(t, n, timeout=10):
    deadline = time.time() + timeout
    while child_ticks(t) < n:
        assert time.time() < deadline, "the fork child stopped ticking"
        time.sleep(0.05)


@pytest.mark.parametrize("python", PYTHONS)
def test_fork_child_runs_and_can_be_injected(python, spawn):
    t = spawn(python, "forker.py")
    probing("-p", t.pid, "inject", check=True)
    c = cli_client(t.pid)  # connected to the parent across the fork
    os.kill(t.pid, signal.SIGUSR1)
    child = t.wait_line(r"^ok child ready (\{.*\})$", json_group=True)["pid"]
    wait_child_ticks(t, child_ticks(t) + 2)
    # No agent of its own, and none of the parent's sockets (listener or connections).
    assert not agent_answers(sock_path(child))
    fds = [os.readlink("/proc/%d/fd/%s" % (child, f)) for f in os.listdir("/proc/%d/fd" % child)]
    assert not [f for f in fds if f.startswith("socket:")], fds
    assert len(probe_copies(child)) == 1
    # So a connection the parent closes is closed for its peer, with the child running on.
    assert c.request("threads")["success"]
    c.send_raw(b"garbage\r\n\r\n")
    assert c.closed_within(5), "the fork child keeps the parent's connection open"
    c.close()
    still_serves(t)
    try:
        check_fork_child(t, child)
        # The fresh copy, a file of its own under /tmp, was removed once loaded: the child maps
        # it, and nothing of ours is left in /tmp.
        copies = [p for p in probe_copies(child) if p.startswith("/tmp/probing-")]
        assert copies and all(p.endswith(" (deleted)") for p in copies), probe_copies(child)
        # (its directory seen in the target's own /tmp, which is private in the sid root)
        assert not [p for p in copies
                    if os.path.exists("/proc/%d/root%s" % (child, os.path.dirname(p)))], copies
    finally:
        os.kill(child, signal.SIGKILL)
    still_serves(t)
    t.check_output_clean()


def check_fork_child(t, child):
    # Commands on the child start a fresh probe in it (a new copy: the inherited one has no
    # agent); four at once load one copy.
    procs = [subprocess.Popen([CLI, "-p", str(child), "debug", "--dump", "--json"], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and err == "", err
        d = json.loads(out)
        assert [th["frames"][0]["name"] for th in d["threads"] if th["main"]] == ["child_loop"], d
    assert len(probe_copies(child)) == 2, probe_copies(child)
    r = probing("-p", child, "inject", check=True)
    assert "probe already loaded in %d" % child in r.stdout, r.stdout
    assert len(probe_copies(child)) == 2
    # The child's debugger works: pause, stack, continue, nothing left behind.
    ct = SimpleNamespace(pid=child, sock=probe_sock(child))
    dbg = Debugger(ct, sample="forker.py", inject=False)
    dbg.req("pause", {"threadId": child})
    st = dbg.stopped()
    assert st["reason"] == "pause"
    assert dbg.frames(child)[0]["name"] == "child_loop"
    ticks = child_ticks(t)
    time.sleep(0.3)
    assert child_ticks(t) == ticks, "the child kept running while stopped"
    dbg.req("continue", {"threadId": child})
    wait_child_ticks(t, ticks + 2)
    dbg.req("disconnect")
    assert_clean(ct)


@pytest.mark.parametrize("python", PYTHONS)
def test_exec_runs_the_new_image_and_can_be_injected(python, spawn):
    t = spawn(python, "forker.py")
    probing("-p", t.pid, "inject", check=True)
    c = cli_client(t.pid)  # connected across the exec
    os.kill(t.pid, signal.SIGUSR2)
    t.wait_line(r'^ready \{.*"execed": true\}$')
    assert c.closed_within(10), "a connection of the old image outlived the exec"
    c.close()
    assert t.maps_count() == 0
    t.assert_responsive()
    r = probing("-p", t.pid, "inject", check=True)
    assert "probe loaded in %d" % t.pid in r.stdout, r.stdout
    d = dump_json(t.pid)
    assert [th["frames"][0]["name"] for th in d["threads"] if th["main"]] == ["main"], d
    still_serves(t)
    t.check_output_clean()


@pytest.mark.parametrize("how", ["killed", "exits"])
def test_target_exits_with_a_request_in_flight(how, spawn, tmp_path):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    marker = tmp_path / "running"
    code = "open(%r, 'w').close()\nimport os, threading, time\n" % str(marker)
    if how == "exits":
        code += "threading.Timer(0.2, os._exit, (3,)).start()\n"
    code += "time.sleep(30)"
    p = subprocess.Popen([CLI, "-p", str(t.pid), "eval", code], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 10
    while not marker.exists():
        assert time.time() < deadline and p.poll() is None, p.communicate(timeout=10)
        time.sleep(0.02)
    if how == "killed":
        os.kill(t.pid, signal.SIGKILL)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 1 and out == "", (p.returncode, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0] == (
        "probing: error: eval: process %d exited before answering (the connection closed)"
        % t.pid), err
    assert t.proc.wait(timeout=10) == (-signal.SIGKILL if how == "killed" else 3)


# ---- a private /tmp ----

def test_private_tmp_in_own_mount_namespace(spawn):
    # The sample is opened before the tmpfs hides /tmp (the checkout may live there, as CI's
    # clean clone does) and run through its descriptor.
    t = spawn(PY, "forker.py", launcher=[
        "unshare", "-m", "sh", "-c",
        'exec 3<"$1"; shift; mount -t tmpfs tmpfs /tmp && exec "$0" /dev/fd/3 "$@"'])
    assert os.readlink("/proc/%d/ns/mnt" % t.pid) != os.readlink("/proc/self/ns/mnt")
    r = probing("-p", t.pid, "inject", check=True)
    assert "socket /tmp/probing-%d/%s" % (UID, sock_name(t.pid)) in r.stdout, r.stdout
    ours = "/tmp/probing-%d/%s" % (UID, sock_name(t.pid))
    theirs = os.stat("/proc/%d/root%s" % (t.pid, ours))
    if os.path.exists(ours):  # a stale socket of an older process with this pid
        assert os.stat(ours).st_ino != theirs.st_ino
    still_serves(t)
    # A fork child there too: its fresh probe is copied into its own /tmp.
    os.kill(t.pid, signal.SIGUSR1)
    child = t.wait_line(r"^ok child ready (\{.*\})$", json_group=True)["pid"]
    d = dump_json(child)
    assert [th["frames"][0]["name"] for th in d["threads"] if th["main"]] == ["child_loop"], d
    # Its copy, made in its own /tmp, is removed once loaded: nothing of ours is left there.
    copies = [p for p in probe_copies(child) if p.startswith("/tmp/probing-")]
    assert copies and all(p.endswith(" (deleted)") for p in copies), probe_copies(child)
    wait_child_ticks(t, child_ticks(t) + 2)
    still_serves(t)
    t.check_output_clean()
