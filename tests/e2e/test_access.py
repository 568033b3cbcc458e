# SPDX-License-Identifier: MIT
"""Who may reach the probe: the socket directory and file are owner-only, a directory prepared
by someone else is refused (the probe does not serve there), and the probe of a process of
another user can be loaded by root and serves that user. Another user can neither inject into
root's process nor connect to its probe (the directory stops them; past it, the peer-uid check
does). Over TCP, a client without the right token gets nothing but `initialize`."""
import json
import os
import re
import shutil
import stat
import subprocess
import socket
import tempfile
import time

import pytest

from conftest import HOST_PYTHONS, ROOT, Target, dump_json, probing, sock_name
from dapclient import DAP, Closed

pytestmark = pytest.mark.serial  # it empties and remodels /tmp/probing-65534 and sweeps /tmp/probing-0, the machine's

PY = HOST_PYTHONS[-2].values[0]


def test_socket_dir_and_file_are_owner_only(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    d = "/tmp/probing-%d" % os.geteuid()
    st = os.stat(d)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    sock = os.stat("%s/%s" % (d, sock_name(t.pid)))
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) & 0o077 == 0
    t.check_output_clean()


def test_foreign_socket_dir_is_refused(tmp_path):
    d = "/tmp/probing-65534"
    shutil.rmtree(d, ignore_errors=True)
    os.mkdir(d, 0o777)  # root's, world-writable: someone could intercept connections there
    os.chmod(d, 0o777)
    os.chmod(tmp_path, 0o777)
    t = _NobodyTarget(tmp_path)
    try:
        r = probing("--timeout", "3000", "-p", t.pid, "inject")
        # The CLI does not connect either: the directory is not the target user's.
        assert r.returncode == 1 and "probing-65534: owned by uid 0, not by the target's uid " \
            "65534" in r.stderr, r.stderr
        assert "not a private directory" in t.probe_log()
        assert os.listdir(d) == [], "nothing was created in the foreign directory"
        t.assert_responsive()
        t.check_output_clean()
    finally:
        t.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_root_injects_into_another_users_process(tmp_path):
    shutil.rmtree("/tmp/probing-65534", ignore_errors=True)
    t = _NobodyTarget(tmp_path)
    try:
        probing("-p", t.pid, "inject", check=True)
        st = os.stat("/tmp/probing-65534")
        assert st.st_uid == 65534 and stat.S_IMODE(st.st_mode) == 0o700
        d = dump_json(t.pid)  # root may connect (peer uid 0)
        assert {x["name"] for x in d["threads"]} == {"MainThread", "sleeper-1", "reader-1"}
        t.assert_responsive()
        t.check_output_clean()
    finally:
        t.kill()
        shutil.rmtree("/tmp/probing-65534", ignore_errors=True)


class _NobodyTarget(Target):
    def __init__(self, tmp_path, uid=65534):
        # pytest's tmp dirs sit below root-only parents: the probe (as nobody) logs elsewhere.
        logdir = tempfile.mkdtemp(prefix="probing-test-")
        os.chmod(logdir, 0o777)
        super().__init__("/usr/bin/python3", "threads.py", tmp_path,
                         env={"PROBING_LOG": os.path.join(logdir, "probe.log")}, launcher=[
                             "setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                             "--clear-groups"])
        self.log_path = os.path.join(logdir, "probe.log")
        self.logdir = logdir

    def kill(self):
        super().kill()
        shutil.rmtree(self.logdir, ignore_errors=True)


def test_other_user_cannot_inject(spawn):
    t = spawn(PY)
    r = probing("-p", t.pid, "inject", user="nobody")
    assert r.returncode == 1 and "belongs to another user" in r.stderr, r.stderr
    assert t.maps_count() == 0, "the probe was loaded by another user"
    t.assert_responsive()
    t.check_output_clean()


# Run as another user: connect to a Unix socket path and send `initialize`; prints "denied"
# (connect refused by file permissions), "closed" (connected, closed without a byte), or
# "answered".
_CONNECT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("denied"); sys.exit()
body = b'{"seq":1,"type":"request","command":"initialize","arguments":{}}'
try:
    s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    print("answered" if s.recv(100) else "closed")
except (BrokenPipeError, ConnectionResetError):
    print("closed")
"""


def _connect_as(user, path, fd=None):
    pre = []
    if user:
        import pwd
        pw = pwd.getpwnam(user)
        pre = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups"]
    r = subprocess.run([*pre, "/usr/bin/python3", "-c", _CONNECT, path], capture_output=True,
                       text=True, timeout=30, pass_fds=[fd] if fd is not None else [])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_other_user_cannot_connect(spawn):
    t = spawn(PY)
    probing("-p", t.pid, "inject", check=True)
    sock = "/tmp/probing-%d/%s" % (os.geteuid(), sock_name(t.pid))
    r = probing("-p", t.pid, "debug", "--dump", user="nobody")
    assert r.returncode == 1 and "belongs to another user" in r.stderr, r.stderr
    assert _connect_as("nobody", sock) == "denied"  # the 0700 directory
    # Past the directory (an O_PATH descriptor of the socket, reached through /proc/self/fd)
    # and with the socket opened to everyone, the probe still refuses the peer's uid.
    fd = os.open(sock, os.O_PATH)
    try:
        via_fd = "/proc/self/fd/%d" % fd
        assert _connect_as("nobody", via_fd, fd) == "denied"  # the 0600 socket
        os.chmod(sock, 0o666)
        assert _connect_as(None, via_fd, fd) == "answered"  # the way works for root
        assert _connect_as("nobody", via_fd, fd) == "closed"
    finally:
        os.chmod(sock, 0o600)
        os.close(fd)
    assert "refused a Unix-socket peer of another user" in t.probe_log()
    assert dump_json(t.pid)["pid"] == t.pid
    t.assert_responsive()
    t.check_output_clean()


def _guarded_commands():
    """Every request of the dispatch table (probe/server/dispatch.c) not answered before authentication,
    plus an unknown one."""
    with open(os.path.join(ROOT, "probe", "server", "dispatch.c")) as f:
        table = re.findall(r'\{\.name = "([^"]+)",\s*\.flags = ([^,]+),\s*[A-Z]+\(', f.read())
    names = [name for name, flags in table if "SRV_F_PREAUTH" not in flags]
    # A new request answered before authentication widens what anyone on the network reaches.
    assert {n for n, f in table if "SRV_F_PREAUTH" in f} == {"initialize", "attach", "disconnect"}
    assert len(names) >= 20 and "probing/eval" in names and "attach" not in names, table
    return names + ["noSuchCommand"]


def _nothing_then_closed(c, timeout=5):
    """The peer sends nothing (but the `initialized` event that follows `initialize`'s
    response) and closes the connection."""
    while True:
        try:
            m = c.read(timeout=timeout)
        except (Closed, ConnectionResetError, BrokenPipeError):
            return
        except TimeoutError:
            raise AssertionError("the connection was left open for another try")
        assert m.get("event") == "initialized", "answered an unauthenticated client: %r" % m


def _tcp_target(spawn):
    t = spawn(PY)
    r = probing("-p", t.pid, "inject", "--listen", "127.0.0.1:0", env={"PROBING_TOKEN": ""},
                check=True)
    lines = r.stdout.splitlines()
    host, port = lines[1].split()[-1].rsplit(":", 1)
    return t, host, int(port), lines[2].split()[-1]


def test_tcp_without_token_gets_only_initialize(spawn, tmp_path):
    t, host, port, token = _tcp_target(spawn)
    marker = tmp_path / "ran"
    args = {"threadId": t.ready["main"], "frameId": 0, "variablesReference": 1,
            "expression": "__import__('os').mkdir(%r)" % str(marker),
            "code": "__import__('os').mkdir(%r)" % str(marker), "sql": "select 1",
            "address": "127.0.0.1:0", "token": "x" * 20, "key": "eval.timeout_ms",
            "value": "1", "source": {"path": "x.py"}, "breakpoints": [], "filters": ["raised"]}
    for command in _guarded_commands():
        c = DAP.tcp(host, port)
        r = c.request("initialize", {"adapterID": "e2e"})
        assert r["success"] and r["body"]["supportsConfigurationDoneRequest"], r
        c.send(command, args)
        _nothing_then_closed(c)
        c.close()
    # Without `initialize` first, and several requests in one write: still nothing.
    c = DAP.tcp(host, port)
    c.send_raw(b"".join(_frame(i, cmd, args) for i, cmd in enumerate(
        ["evaluate", "probing/eval", "attach", "threads"], 2)))
    _nothing_then_closed(c)
    c.close()
    # `disconnect` is answered (and closes).
    c = DAP.tcp(host, port)
    assert c.request("disconnect")["success"]
    _nothing_then_closed(c)
    c.close()
    # With the right token the same code runs (after anything queued before it would have).
    c = DAP.tcp(host, port)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"token": token, "probingClient": "cli"})["success"]
    assert t.ready["main"] in [x["id"] for x in c.request("threads")["body"]["threads"]]
    done = tmp_path / "authenticated"
    r = c.request("evaluate", {"expression": "__import__('os').mkdir(%r)" % str(done),
                               "context": "repl"})
    assert r["success"] and done.is_dir(), r
    assert not marker.exists(), "code ran for an unauthenticated client"
    c.request("disconnect")
    c.close()
    t.assert_responsive()
    t.check_output_clean()


def _frame(seq, command, args):
    msg = {"seq": seq, "type": "request", "command": command}
    if args is not None:
        msg["arguments"] = args
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


_WRONG = {"missing": "missing", "null": None, "empty": "", "same-length": "same-length",
          "prefix": "prefix", "longer": "longer", "upper": "upper", "space": "space",
          "number": 12345, "list": ["list"], "300-chars": "x" * 300,
          "arguments-not-object": "arguments-not-object"}


@pytest.mark.parametrize("wrong", list(_WRONG.values()), ids=list(_WRONG))
def test_tcp_wrong_token_error_then_closed(spawn, wrong):
    t, host, port, token = _tcp_target(spawn)
    bad = {"same-length": "0" * len(token) if token[0] != "0" else "1" * len(token),
           "prefix": token[:-1], "longer": token + "0", "upper": token.upper(),
           "space": " " + token}.get(wrong, wrong) if isinstance(wrong, str) else wrong
    assert bad != token
    c = DAP.tcp(host, port)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    # Nothing sent behind attach (a request of the table would close the connection itself):
    # the probe closes it on its own, so no second token can be tried on it.
    args = {} if wrong == "missing" else token if wrong == "arguments-not-object" else {
        "token": bad}
    c.send_raw(_frame(2, "attach", args))
    while True:
        r = c.read()
        if r["type"] == "response":
            break
    assert r["request_seq"] == 2 and r["success"] is False, r
    assert ("token" if wrong != "arguments-not-object" else "arguments") in r["message"], r
    _nothing_then_closed(c)
    c.close()
    t.assert_responsive()
    t.check_output_clean()


def _socket_at(path, listening):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    if listening:
        s.listen(1)
    old = time.time() - 3600
    os.utime(path, (old, old))
    return s


def test_stale_sockets_are_swept_at_start(spawn):
    """A process killed with SIGKILL leaves its socket behind; the next probe to start removes
    (2 to 3 s after its start) sockets nobody listens on, and leaves live ones (and other files) alone. A socket named for a
    process of this PID namespace that still runs is left without connecting to it: a loaded
    probe is not woken by every probe that starts."""
    d = "/tmp/probing-%d" % os.geteuid()
    os.makedirs(d, mode=0o700, exist_ok=True)
    ns = os.stat("/proc/self/ns/pid").st_ino
    dead = "%s/%d.sock" % (d, 4194000 + os.getpid() % 100)
    live = "%s/%d.sock" % (d, 4194200 + os.getpid() % 100)
    other = "%s/crash-%d.txt" % (d, 4194300 + os.getpid() % 100)
    dead_ns = "%s/%d-%d.sock" % (d, 4194100 + os.getpid() % 100, ns)  # its process is gone
    running = "%s/%d-%d.sock" % (d, os.getpid(), ns)  # this test's pid: it runs
    paths = (dead, live, other, dead_ns, running)
    for p in paths:
        if os.path.exists(p):
            os.unlink(p)
    s_dead = _socket_at(dead, listening=False)
    s_dead.close()
    s_dead_ns = _socket_at(dead_ns, listening=False)
    s_dead_ns.close()
    s_live = _socket_at(live, listening=True)
    s_running = _socket_at(running, listening=True)
    open(other, "w").close()
    try:
        t = spawn(PY)
        probing("-p", t.pid, "inject", check=True)
        deadline = time.time() + 10
        while (os.path.exists(dead) or os.path.exists(dead_ns)) and time.time() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(dead), "a socket nobody listens on was left"
        assert not os.path.exists(dead_ns), "a socket of a process that is gone was left"
        assert os.path.exists(live) and os.path.exists(other) and os.path.exists(running)
        assert os.path.exists("%s/%s" % (d, sock_name(t.pid)))
        time.sleep(0.5)  # the rest of the sweep's one pass over the directory
        s_running.setblocking(False)
        try:
            s_running.accept()[0].close()
            woken = True
        except BlockingIOError:
            woken = False
        assert not woken, "the sweep connected to the socket of a process that runs"
        t.check_output_clean()
    finally:
        s_live.close()
        s_running.close()
        for p in paths:
            if os.path.exists(p):
                os.unlink(p)


# A fake DAP server, run as another user at the probe's socket path: argv[1] the socket path,
# argv[2] a file recording every connection and every byte received. It answers each request
# with success (an impostor's answer). Prints "ready" once listening.
_FAKE = r"""
import json, os, socket, sys, threading
path, record = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
os.chmod(path, 0o777)
srv.listen(16)
print("ready", flush=True)
lock = threading.Lock()
def note(data):
    with lock, open(record, "ab") as f:
        f.write(data)
def serve(c):
    note(b"<connection>")
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            return
        note(d)
        buf += d
        while b"\r\n\r\n" in buf:
            head, rest = buf.split(b"\r\n\r\n", 1)
            n = int(head.split(b":")[1])
            if len(rest) < n:
                break
            req, buf = json.loads(rest[:n]), rest[n:]
            body = json.dumps({"seq": 1, "type": "response", "request_seq": req["seq"],
                               "command": req["command"], "success": True,
                               "body": {"result": "impostor", "type": "str"}}).encode()
            c.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

_TARGET_UID = 4242  # a user of its own: the test never touches /tmp/probing-0, shared by all


def _as(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]


class _Impostor:
    """The fake server, as uid, at path; .received() is what it got."""

    def __init__(self, uid, path, workdir):
        self.record = os.path.join(workdir, "impostor-%d.rec" % uid)
        open(self.record, "wb").close()
        os.chmod(self.record, 0o666)
        self.proc = subprocess.Popen([*_as(uid), "/usr/bin/python3", "-c", _FAKE, path,
                                      self.record], stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def received(self):
        with open(self.record, "rb") as f:
            return f.read()

    def kill(self):
        os.killpg(self.proc.pid, 9)
        self.proc.wait(timeout=10)


@pytest.mark.parametrize("how", ["foreign-dir", "dir-link", "open-dir", "foreign-listener"])
def test_cli_refuses_an_impostor_socket(tmp_path, how):
    """Someone got to the socket path first; `probing -p PID eval` run by root must not send a
    byte there, and must say which check failed: the directory is another user's (made before
    the target's probe ever started), a symbolic link, open to other users, or the socket is
    served by another process than the target (SO_PEERCRED)."""
    d = "/tmp/probing-%d" % _TARGET_UID
    shutil.rmtree(d, ignore_errors=True)
    if os.path.islink(d):
        os.unlink(d)
    work = tempfile.mkdtemp(prefix="probing-test-")
    os.chmod(work, 0o777)
    os.chmod(tmp_path, 0o777)
    t = _NobodyTarget(tmp_path, uid=_TARGET_UID)
    fake = None
    try:
        sock = "%s/%s" % (d, sock_name(t.pid))
        if how == "foreign-dir":  # nobody's own 0700 directory
            subprocess.run([*_as(65534), "mkdir", "-m", "700", d], check=True)
            fake = _Impostor(65534, sock, work)
            expect = "probing-%d: owned by uid 65534, not by the target's uid %d" % (
                _TARGET_UID, _TARGET_UID)
        elif how == "dir-link":  # a link to nobody's directory
            real = os.path.join(work, "real")
            subprocess.run([*_as(65534), "mkdir", "-m", "700", real], check=True)
            subprocess.run([*_as(65534), "ln", "-s", real, d], check=True)
            fake = _Impostor(65534, sock, work)
            expect = "probing-%d: a symbolic link, not a directory" % _TARGET_UID
        elif how == "open-dir":  # the target user's, but open to everyone (a umask mishap)
            os.mkdir(d)
            os.chown(d, _TARGET_UID, _TARGET_UID)
            os.chmod(d, 0o777)
            fake = _Impostor(65534, sock, work)
            expect = "probing-%d: mode 0777 lets other users in" % _TARGET_UID
        else:  # the real directory and probe, then another process takes over the socket path
            probing("-p", t.pid, "inject", check=True)
            assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
            os.unlink(sock)
            fake = _Impostor(_TARGET_UID, sock, work)
            expect = "served by process %d (uid %d), not by %d" % (fake.proc.pid, _TARGET_UID,
                                                                    t.pid)
        for _ in range(2):  # injecting, then with the probe loaded
            r = probing("--timeout", "3000", "-p", t.pid, "eval", "secret_api_key")
            assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("probing: error: refusing "), r.stderr
            assert expect in lines[0], (expect, lines[0])
            got = fake.received()
            if how == "foreign-listener":  # connecting is how SO_PEERCRED is read: no byte sent
                got = got.replace(b"<connection>", b"")
            assert got == b"", "the CLI talked to the impostor: %r" % fake.received()
        if how != "foreign-listener":
            assert "not a private directory" in t.probe_log()
        t.assert_responsive()
        t.check_output_clean()
    finally:
        if fake:
            fake.kill()
        t.kill()
        if os.path.islink(d):
            os.unlink(d)
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def test_cli_accepts_a_target_in_its_own_pid_namespace(spawn):
    """SO_PEERCRED names the listener as the CLI's PID namespace sees it: a target that is pid 1
    of its own namespace (a container, with its own /tmp) passes the peer check under its pid
    out here."""
    # As in test_faults' private /tmp: the sample is opened before the tmpfs hides /tmp.
    t = spawn(PY, launcher=[
        "unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
        'exec 3<"$1"; shift; mount -t tmpfs tmpfs /tmp && exec "$0" /dev/fd/3 "$@"'])
    assert t.ready["pid"] == 1
    with open("/proc/%d/task/%d/children" % (t.pid, t.pid)) as f:
        pid = int(f.read().split()[0])  # unshare forks the target
    with open("/proc/%d/status" % pid) as f:
        assert re.search(r"^NSpid:\s+%d\s+1$" % pid, f.read(), re.M)
    r = probing("-p", pid, "eval", "6*7")
    assert r.returncode == 0 and r.stdout.strip() == "42", (r.stdout, r.stderr)
    d = json.loads(probing("-p", pid, "debug", "--dump", "--json", check=True).stdout)
    assert d["pid"] == 1
    t.assert_responsive()
    t.check_output_clean()
