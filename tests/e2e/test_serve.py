# SPDX-License-Identifier: MIT
"""`probing serve` (docs/http.md): the HTTP API with plain HTTP requests (urllib) against real
targets from samples/, /metrics parsed by prometheus_client's text-format parser (Debian's
python3-prometheus-client), the security rules (loopback only without a token, the token as a
header or a one-time login cookie, the loopback peer's user, Host, Origin on POST, methods),
and the curl examples of docs/http.md run as written against a live server."""
import gzip
import json
import os
import re
import signal
import subprocess

import sidroot
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import CLI, PYTHONS, ROOT, probing

pytestmark = pytest.mark.serial  # serve lists every process of this user on the node

SAMPLE = "flamehot.py"


class Server:
    """A running `probing serve`; .url is its base URL (ends with /)."""

    def __init__(self, *args, env=None, user=None):
        e = dict(os.environ)
        e.update(env or {})
        cmd = [CLI, "serve", *args]
        if user:
            import pwd
            pw = pwd.getpwnam(user)
            cmd = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                   "--clear-groups", *cmd]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=e, start_new_session=True)
        self.lines = []
        deadline = time.time() + 20
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if line.startswith("serving the processes"):
                break
        m = re.match(r"^probing serve: (http://\S+/)$", self.lines[0] if self.lines else "")
        assert m, "serve did not start: %r %s" % (self.lines, self.proc.stderr.read()
                                                   if self.proc.poll() is not None else "")
        self.url = m.group(1)
        self.origin = self.url.rstrip("/")
        if "--token" in args:
            self.lines.append(self.proc.stdout.readline().rstrip("\n"))
            if not (env or {}).get("PROBING_SERVE_TOKEN"):
                self.lines.append(self.proc.stdout.readline().rstrip("\n"))

    def stop(self):
        """SIGTERM: serve stops cleanly, exit 0, nothing on stderr (a sanitizer's report)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
                raise AssertionError("serve did not stop on SIGTERM")
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0 and err == "", (self.proc.returncode, err[-4000:])


@pytest.fixture
def serve():
    servers = []

    def _serve(*args, **kw):
        s = Server(*args, **kw)
        servers.append(s)
        return s

    yield _serve
    for s in servers:
        s.stop()


def http(url, method="GET", body=None, headers=None, timeout=30):
    """(status, headers, body bytes) of one request; HTTP errors are answers, not raises."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def api(s, path, method="GET", body=None, headers=None):
    h = {"Origin": s.origin} if method == "POST" else {}
    h.update(headers or {})
    status, hdrs, data = http(s.url + path.lstrip("/"), method, body, h)
    ctype = hdrs.get("Content-Type", "")
    return status, (json.loads(data) if ctype.startswith("application/json") else data)


@pytest.mark.parametrize("python", PYTHONS)
def test_serve_api(spawn, serve, python):
    t = spawn(python, SAMPLE)
    s = serve("--listen", "127.0.0.1:0")
    status, procs = api(s, "/api/processes")
    assert status == 200
    mine = [p for p in procs if p["pid"] == t.pid]
    assert len(mine) == 1, procs
    p = mine[0]
    assert p["probe"] is False and SAMPLE in p["command"] and p["threads"] >= 2
    assert p["python"].startswith(".".join(python_version(python).split(".")[:2]))
    assert p["rss"] > 1 << 20 and p["rank"] is None

    # Nothing injects without the attach request.
    status, err = api(s, "/api/processes/%d/stacks" % t.pid)
    assert status == 409 and "attach first" in err["error"], err
    assert t.maps_count() == 0
    status, a = api(s, "/api/processes/%d/attach" % t.pid, "POST")
    assert status == 200 and a["injected"] is True, a
    assert t.maps_count() == 1
    status, a = api(s, "/api/processes/%d/attach" % t.pid, "POST")
    assert status == 200 and a["injected"] is False, a
    status, procs = api(s, "/api/processes")
    assert [p["probe"] for p in procs if p["pid"] == t.pid] == [True]

    # Stacks: the GIL-free dump, the threads the sample names.
    status, d = api(s, "/api/processes/%d/stacks" % t.pid)
    assert status == 200 and d["pid"] == t.pid
    names = {th["name"]: th for th in d["threads"]}
    assert "spinner" in names and names["spinner"]["nativeId"] == t.ready["spinner"]
    funcs = {f["name"] for th in d["threads"] for f in th["frames"]}
    assert "spin_python" in funcs, funcs
    status, d = api(s, "/api/processes/%d/stacks?locals=1" % t.pid)
    assert status == 200 and any("locals" in f for th in d["threads"] for f in th["frames"])

    # Memory: /proc figures and objects by type, top bounded.
    status, m = api(s, "/api/processes/%d/memory?top=3" % t.pid)
    assert status == 200 and m["process"]["rss"] > 1 << 20, m
    assert 1 <= len(m["objects"]["types"]) <= 3 and "gc" in m
    status, m = api(s, "/api/processes/%d/memory?top=0" % t.pid)
    assert status == 400 and "expected 1 to 1000" in m["error"]

    # SQL: results, and SQLite's own message as a 400.
    status, q = api(s, "/api/processes/%d/query" % t.pid, "POST",
                    {"sql": "SELECT name FROM python.threads ORDER BY name"})
    assert status == 200 and ["spinner"] in q["rows"], q
    status, q = api(s, "/api/processes/%d/query" % t.pid, "POST", {"sql": "SELECT nope"})
    assert status == 400 and "no such column: nope" in q["error"], q
    status, q = api(s, "/api/processes/%d/query" % t.pid, "POST", b"not json")
    assert status == 400 and "JSON object" in q["error"]

    # A flame graph before any profile is a 404 that says what to do.
    status, f = api(s, "/api/processes/%d/flamegraph?format=folded" % t.pid)
    assert status == 404 and "start perf" in f["error"], f
    status, r = api(s, "/api/processes/%d/perf" % t.pid, "POST", {"action": "start"})
    assert status == 200 and r["running"] is True, r
    deadline = time.time() + 30
    while time.time() < deadline:
        status, r = api(s, "/api/processes/%d/perf" % t.pid, "POST", {"action": "status"})
        if r["samples"] >= 100:
            break
        time.sleep(0.2)
    status, r = api(s, "/api/processes/%d/perf" % t.pid, "POST", {"action": "stop"})
    assert status == 200 and r["wasRunning"] is True and r["samples"] >= 100, r
    # The graph holds every sample the table kept (the sampler's count may include one whose
    # stack was not stored: flamegraph leaves those out, as 'probing flamegraph' does).
    status, q = api(s, "/api/processes/%d/query" % t.pid, "POST",
                    {"sql": "SELECT COUNT(*) FROM perf.samples s JOIN perf.stacks st "
                            "ON st.stack_id = s.stack_id"})
    kept = q["rows"][0][0]
    assert r["samples"] - 2 <= kept <= r["samples"], (kept, r["samples"])
    status, folded = api(s, "/api/processes/%d/flamegraph?format=folded" % t.pid)
    assert status == 200
    counts = [int(line.rsplit(" ", 1)[1]) for line in folded.decode().splitlines()]
    assert sum(counts) == kept, (sum(counts), kept)
    assert b"native_share" in folded and b"spin_python" in folded
    status, svg = api(s, "/api/processes/%d/flamegraph?format=svg" % t.pid)
    assert status == 200 and svg.lstrip().startswith(b"<?xml") and b"<svg" in svg
    assert b'data-samples="%d"' % kept in svg
    status, ss = api(s, "/api/processes/%d/flamegraph?format=speedscope" % t.pid)
    assert status == 200 and ss["$schema"].startswith("https://www.speedscope.app")
    # chrometrace and pprof, rendered by the same code as the CLI's
    status, ct = api(s, "/api/processes/%d/flamegraph?format=chrometrace" % t.pid)
    assert status == 200 and any(e["ph"] == "X" and e["name"] == "native_share"
                                 for e in ct["traceEvents"]), ct["traceEvents"][:5]
    status, pp = api(s, "/api/processes/%d/flamegraph?format=pprof" % t.pid)
    assert status == 200 and pp[:2] == b"\x1f\x8b"
    from test_record import pprof_class
    prof = pprof_class()()
    prof.ParseFromString(gzip.decompress(pp))
    assert sum(x.value[0] for x in prof.sample) == kept
    status, e = api(s, "/api/processes/%d/flamegraph?format=png" % t.pid)
    assert status == 400 and "svg, folded, speedscope, chrometrace or pprof" in e["error"]
    # The filters of flamegraph: thread, since, gil, idle, native=all (the same code).
    base = "/api/processes/%d/flamegraph?format=folded" % t.pid
    status, one = api(s, base + "&thread=%d" % t.ready["spinner"])
    assert status == 200 and b"spin_python" in one and b"native_share" not in one
    status, every = api(s, base + "&native=all")
    assert status == 200 and sum(int(l.rsplit(b" ", 1)[1]) for l in every.splitlines()) == kept
    assert len(every) > len(folded)  # CPython's own frames and the start-up kept
    status, g = api(s, base + "&gil=1&idle=1&since=3600")
    assert status == 200 and 0 < sum(int(l.rsplit(b" ", 1)[1]) for l in g.splitlines()) <= kept
    for q, msg in (("&thread=x", "thread 'x': expected a native thread id"),
                   ("&since=-1", "since '-1': expected a number of seconds > 0"),
                   ("&gil=yes", "gil 'yes': expected 1"),
                   ("&native=some", "native 'some': expected all")):
        status, e = api(s, base + q)
        assert status == 400 and e["error"] == msg, (q, e)
    status, e = api(s, base + "&thread=1")
    assert status == 404 and "no samples for thread 1" in e["error"], e
    status, e = api(s, "/api/processes/%d/perf" % t.pid, "POST", {"action": "explode"})
    assert status == 400

    # /metrics, through Prometheus' own parser.
    status, text = api(s, "/metrics")
    assert status == 200
    fams = {f.name: f for f in text_string_to_metric_families(text.decode())}
    def value(name):
        got = [sm.value for sm in fams[name].samples
               if sm.labels.get("pid") == str(t.pid) and not sm.name.endswith("_created")]
        assert len(got) == 1, (name, fams[name].samples)
        return got[0]
    assert value("probing_process_resident_memory_bytes") > 1 << 20
    assert value("probing_process_threads") >= 2
    assert value("probing_probe_loaded") == 1
    assert value("probing_python_threads") == 2
    assert value("probing_gil_held") in (0, 1)
    assert value("probing_perf_running") == 0
    assert fams["probing_perf_samples"].type == "counter"
    assert value("probing_perf_samples") == r["samples"]  # the sampler's own count

    # Unknown pid, and a process that is not Python.
    status, e = api(s, "/api/processes/999999999/stacks")
    assert status == 404
    status, e = api(s, "/api/processes/1/attach" if os.getuid() == 0 else "/x", "POST")
    assert status in (403, 404, 422), e
    t.assert_responsive()
    t.check_output_clean()


def python_version(exe):
    return subprocess.run(sidroot.command(exe, ["-c", "import platform; print(platform.python_version())"]),
                          capture_output=True, text=True, check=True).stdout.strip()


def test_serve_keep_alive_list_attach_stacks(spawn, serve):
    """The web page's requests on one kept-alive connection (one of serve's threads): the list,
    attach, then the stacks at once. The list finds the ranks, which once left the reads of
    every process's maps kept in that thread: the stacks after attach read the maps of before
    it and answered 409 (stop 53, seen only by the browser's tests)."""
    import http.client
    import urllib.parse
    t = spawn("/usr/bin/python3", SAMPLE)
    s = serve("--listen", "127.0.0.1:0")
    u = urllib.parse.urlparse(s.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        def ask(method, path, headers=None):
            c.request(method, path, body=b"{}" if method == "POST" else None,
                      headers=headers or {})
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"null")
        for _ in range(2):
            status, procs = ask("GET", "/api/processes")
            assert status == 200 and any(p["pid"] == t.pid for p in procs)
        status, a = ask("POST", "/api/processes/%d/attach" % t.pid,
                        {"Origin": s.origin, "Content-Type": "application/json"})
        assert status == 200 and a["injected"] is True, a
        status, d = ask("GET", "/api/processes/%d/stacks" % t.pid)
        assert status == 200 and d["pid"] == t.pid, d
    finally:
        c.close()


def test_serve_rank_and_job(spawn, serve):
    """A rank of a torch-style job: rank and job in the list and as /metrics labels."""
    env = {"RANK": "3", "WORLD_SIZE": "8", "MASTER_ADDR": "10.1.2.3", "MASTER_PORT": "29500"}
    t = spawn("/usr/bin/python3", "threads.py", env=env)
    s = serve("--listen", "127.0.0.1:0")
    status, procs = api(s, "/api/processes")
    p = [p for p in procs if p["pid"] == t.pid][0]
    assert p["rank"] == 3 and p["job"] == "torch:10.1.2.3:29500" and p["world_size"] == 8
    status, text = api(s, "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(text.decode())}
    labels = [sm.labels for sm in fams["probing_process_threads"].samples
              if sm.labels["pid"] == str(t.pid)]
    assert labels == [{"pid": str(t.pid), "rank": "3", "job": "torch:10.1.2.3:29500"}]


def test_serve_security(spawn, serve):
    t = spawn("/usr/bin/python3", SAMPLE)
    # A non-loopback address without a token: refused before listening.
    r = subprocess.run([CLI, "serve", "--listen", "0.0.0.0:0"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("probing: error: serve: 0.0.0.0 is not a loopback address")
    assert len(r.stderr.splitlines()) == 1
    r = subprocess.run([CLI, "serve", "--token", "hunter2"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 2 and "--token takes 'auto'" in r.stderr

    # Loopback without a token: methods, Origin, Host.
    s = serve("--listen", "127.0.0.1:0")
    path = "/api/processes/%d/attach" % t.pid
    status, hdrs, body = http(s.url + path.lstrip("/"))
    assert status == 405 and hdrs["Allow"] == "POST"
    status, _, body = http(s.url + "api/processes", "POST", b"{}", {"Origin": s.origin})
    assert status == 405
    status, _, body = http(s.url + path.lstrip("/"), "POST", b"")
    assert status == 403 and b"Origin" in body
    status, _, body = http(s.url + path.lstrip("/"), "POST", b"", {"Origin": "http://evil.example"})
    assert status == 403 and b"evil.example" in body
    assert t.maps_count() == 0, "a refused POST injected"
    status, _, body = http(s.url + "api/processes", headers={"Host": "evil.example:80"})
    assert status == 403 and b"not a loopback address" in body
    status, _, _ = http(s.url + "api/processes", headers={"Host": "localhost:%s" % s.origin.rsplit(":", 1)[1]})
    assert status == 200

    # Another local user's connection to the loopback port: refused (peer uid from /proc/net/tcp).
    if os.getuid() == 0:
        code = ("import urllib.request,urllib.error,sys\n"
                "try: urllib.request.urlopen(sys.argv[1], timeout=20); print(200)\n"
                "except urllib.error.HTTPError as e: print(e.code, e.read().decode())\n")
        pw = __import__("pwd").getpwnam("nobody")
        r = subprocess.run(["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                            "--clear-groups", "/usr/bin/python3", "-c", code,
                            s.url + "api/processes"], capture_output=True, text=True, timeout=30)
        assert r.stdout.startswith("403 ") and "own user's connections" in r.stdout, r

    # With a token: none, a wrong one, the right one as a header; the one-time login URL.
    tok = serve("--listen", "127.0.0.1:0", "--token", "auto")
    m = re.match(r"^token: ([0-9a-f]{32,})$", tok.lines[2])
    assert m, tok.lines
    token = m.group(1)
    assert tok.lines[3] == "login once at: %slogin?token=%s" % (tok.url, token)
    status, _, body = http(tok.url + "api/processes")
    assert status == 401 and b"token is needed" in body
    status, _, _ = http(tok.url + "api/processes", headers={"Authorization": "Bearer x" + token})
    assert status == 401
    status, _, _ = http(tok.url + "api/processes", headers={"Authorization": "Bearer " + token})
    assert status == 200
    opener = urllib.request.build_opener(urllib.request.HTTPRedirectHandler)
    req = urllib.request.Request(tok.url + "login?token=" + token)
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    try:
        urllib.request.build_opener(NoRedirect).open(req, timeout=20)
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 303 and e.headers["Location"] == "/"
        cookie = e.headers["Set-Cookie"]
    assert cookie.startswith("probing_token=%s;" % token) and "HttpOnly" in cookie
    status, _, _ = http(tok.url + "api/processes", headers={"Cookie": cookie.split(";")[0]})
    assert status == 200
    status, _, body = http(tok.url + "login?token=" + token)
    assert status == 401 and b"works once" in body
    status, _, _ = http(tok.url + "api/processes",
                        headers={"Cookie": "probing_token=nottheright1"})
    assert status == 401
    # A non-loopback address with a token from the environment starts (and prints no token).
    env_tok = "0123456789abcdef0123"
    s2 = serve("--listen", "0.0.0.0:0", env={"PROBING_SERVE_TOKEN": env_tok})
    assert not any(l.startswith("token:") for l in s2.lines)
    port = s2.origin.rsplit(":", 1)[1]
    status, _, _ = http("http://127.0.0.1:%s/api/processes" % port)
    assert status == 401
    status, _, _ = http("http://127.0.0.1:%s/api/processes" % port,
                        headers={"Authorization": "Bearer " + env_tok})
    assert status == 200
    t.check_output_clean()


# Makes socket(AF_NETLINK, ...) fail in `probing serve` (LD_PRELOAD), writing a line to
# $PROBING_TEST_NETLINK_LOG each time: the peer check's /proc/net/tcp fallback is the one used.
NO_NETLINK_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int socket(int domain, int type, int protocol)
{
    static int (*real)(int, int, int);
    if (domain == AF_NETLINK) {
        const char *log = getenv("PROBING_TEST_NETLINK_LOG");
        int fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666) : -1;
        if (fd >= 0) {
            (void)!write(fd, "refused\n", 8);
            close(fd);
        }
        errno = EAFNOSUPPORT;
        return -1;
    }
    if (!real)
        real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
    return real(domain, type, protocol);
}
"""


@pytest.mark.parametrize("lookup", ["sock_diag", "proc"])
def test_serve_peer_time_wait(spawn, serve, lookup):
    """Another local user (nobody) leaves TIME_WAIT sockets from one local port (their
    /proc/net/tcp lines show uid 0) and then connects from that port to root's loopback serve,
    with one of those lines ahead of its own (tests/e2e/peer_attack.py): it must be refused,
    as its own established socket's user, and inject nothing nor read the target's password.
    Root's own connections and another user's own server are still answered, by the kernel's
    sock_diag and, with netlink refused (an LD_PRELOAD shim), by /proc/net/tcp{,6}."""
    assert os.getuid() == 0, "this test runs serve as root and the attacker as nobody"
    import pwd
    import tempfile
    nobody = pwd.getpwnam("nobody")
    secret = "pw-" + os.urandom(8).hex()
    t = spawn("/usr/bin/python3", "secret_holder.py", env={"PROBING_TEST_SECRET": secret})
    shared = tempfile.mkdtemp(prefix="probing-peer-")  # readable by nobody (tmp_path is not)
    env = {}
    try:
        os.chmod(shared, 0o777)
        log = os.path.join(shared, "netlink.log")
        if lookup == "proc":
            src = os.path.join(shared, "nonetlink.c")
            with open(src, "w") as f:
                f.write(NO_NETLINK_C)
            so = os.path.join(shared, "nonetlink.so")
            subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", so, src, "-ldl"], check=True)
            os.chmod(so, 0o755)
            # (make asan: a sanitized CLI wants its runtimes first)
            env = {"LD_PRELOAD": " ".join(filter(None, [os.environ.get("PROBING_TARGET_PRELOAD"),
                                                        so])),
                   "PROBING_TEST_NETLINK_LOG": log}
        s = serve("--listen", "127.0.0.1:0", env=env)
        port = s.origin.rsplit(":", 1)[1]
        attach = "/api/processes/%d/attach" % t.pid
        stacks = "/api/processes/%d/stacks?locals=1" % t.pid
        with open(os.path.join(os.path.dirname(__file__), "peer_attack.py")) as f:
            code = f.read()
        reqs = [["GET", "/api/processes"], ["POST", attach], ["GET", stacks]]
        r = subprocess.run(["setpriv", "--reuid=%d" % nobody.pw_uid,
                            "--regid=%d" % nobody.pw_gid, "--clear-groups",
                            "/usr/bin/python3", "-c", code, port, json.dumps(reqs)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-3000:]
        for req, got in zip(reqs, json.loads(r.stdout)):
            # The attack is in place: the first line for its address and port is TIME_WAIT.
            assert got["positioned"] and got["first_state"] == "06" and got["first_uid"] == 0, got
            assert got["status"] == 403, (req, got)
            assert "own user's connections (the peer's uid is %d)" % nobody.pw_uid in got["body"]
            assert secret not in got["body"]
        assert t.maps_count() == 0, "nobody's refused POST injected"

        # Root's own connections: answered, and they see what the attacker wanted.
        status, procs = api(s, "/api/processes")
        assert status == 200 and any(p["pid"] == t.pid for p in procs)
        status, _ = api(s, attach, "POST")
        assert status == 200 and t.maps_count() == 1
        status, d = api(s, stacks)
        assert status == 200 and secret in json.dumps(d)
        # On IPv6 loopback too.
        s6 = serve("--listen", "[::1]:0", env=env)
        status, procs = api(s6, "/api/processes")
        assert status == 200 and any(p["pid"] == t.pid for p in procs), (status, procs)

        # Another user's server answers that user's plain connections, not root's.
        n = serve("--listen", "127.0.0.1:0", env=env, user="nobody")
        code = ("import urllib.request,urllib.error,sys\n"
                "try: urllib.request.urlopen(sys.argv[1], timeout=20); print(200)\n"
                "except urllib.error.HTTPError as e: print(e.code, e.read().decode())\n")
        r = subprocess.run(["setpriv", "--reuid=%d" % nobody.pw_uid,
                            "--regid=%d" % nobody.pw_gid, "--clear-groups",
                            "/usr/bin/python3", "-c", code, n.url + "api/processes"],
                           capture_output=True, text=True, timeout=30)
        assert r.stdout.strip() == "200", r
        status, _, body = http(n.url + "api/processes")
        assert status == 403 and b"(the peer's uid is 0)" in body, body
        if lookup == "proc":
            with open(log) as f:
                assert f.read().count("refused") >= 5, "the netlink shim was not used"
        else:
            assert not os.path.exists(log)
    finally:
        import shutil
        shutil.rmtree(shared, ignore_errors=True)
    t.check_output_clean()


def test_serve_help_and_pages(serve):
    r = probing("serve", "--help", check=True)
    assert r.stdout.startswith("usage: probing serve [--listen HOST:PORT] [--token auto]")
    r = probing("serve", "--bogus")
    assert r.returncode == 2 and "unknown option" in r.stderr
    r = probing("serve", "--listen", "nowhere")
    assert r.returncode == 2 and "--listen 'nowhere'" in r.stderr
    s = serve("--listen", "127.0.0.1:0")
    for path, ctype in (("", "text/html"), ("index.html", "text/html"),
                        ("app.js", "text/javascript"), ("style.css", "text/css")):
        status, hdrs, body = http(s.url + path)
        assert status == 200 and hdrs["Content-Type"].startswith(ctype), path
        web = os.path.join(ROOT, "injector", "cli", "serve", "web")
        with open(os.path.join(web, path or "index.html"), "rb") as f:
            assert body == f.read()
    status, _, _ = http(s.url + "nope.html")
    assert status == 404


def test_serve_docs_curl_examples(spawn, serve, tmp_path):
    """docs/http.md's curl examples, run as written (bash, curl -f) in the doc's order."""
    with open(os.path.join(ROOT, "docs", "http.md")) as f:
        blocks = re.findall(r"^```sh\n(.*?)^```$", f.read(), re.M | re.S)
    assert len(blocks) >= 7, blocks
    t = spawn("/usr/bin/python3", SAMPLE)
    s = serve("--listen", "127.0.0.1:0")
    env = dict(os.environ, URL=s.origin, ORIGIN=s.origin, PID=str(t.pid))
    outs = []
    for b in blocks:
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (b, r.stdout[-2000:], r.stderr[-2000:])
        outs.append(r.stdout)
    assert t.pid in [p["pid"] for p in json.loads(outs[0])]
    assert json.loads(outs[1])["injected"] is True
    assert "spinner" in {th["name"] for th in json.loads(outs[2])["threads"]}
    assert ["spinner", 1] in json.loads(outs[3])["rows"]
    assert '"wasRunning":true' in outs[4]
    assert (tmp_path / "cpu.svg").read_text().lstrip().startswith("<?xml")
    top = outs[5].splitlines()
    assert len(top) == 3 and all(re.match(r"^.+ \d+$", l) for l in top), top
    fams = {f.name for f in text_string_to_metric_families(outs[6])}
    assert {"probing_process_threads", "probing_gil_held", "probing_perf_samples"} <= fams
    t.check_output_clean()


def test_serve_stacks_shared_by_pollers(spawn, serve):
    """Clients polling one process's stacks share one dump at most 500 ms old: 20 requests at
    once cost the target one or two connections (the probe logs each), not twenty; a request
    after 500 ms takes a fresh dump."""
    import concurrent.futures
    t = spawn("/usr/bin/python3", "threads.py")
    s = serve("--listen", "127.0.0.1:0")
    assert api(s, "/api/processes/%d/attach" % t.pid, "POST")[0] == 200
    time.sleep(0.6)

    def connections():
        return t.probe_log().count("new Unix connection")
    before = connections()
    with concurrent.futures.ThreadPoolExecutor(20) as ex:
        answers = list(ex.map(lambda _: api(s, "/api/processes/%d/stacks" % t.pid), range(20)))
    assert all(st == 200 and d["pid"] == t.pid for st, d in answers)
    during = connections() - before
    assert 1 <= during <= 2, during
    time.sleep(0.6)
    assert api(s, "/api/processes/%d/stacks" % t.pid)[0] == 200
    assert connections() - before == during + 1
    # locals are never shared: each asks the probe.
    api(s, "/api/processes/%d/stacks?locals=1" % t.pid)
    assert connections() - before == during + 2


def test_serve_torch(spawn, serve):
    """perf --torch through the API on samples/torch_train.py (Debian's python3 and torch
    1.13): no trace before a start (404 that says what to do), start tracing every step, the
    last traced steps as a Chrome trace (module calls as complete events, nested in order),
    status, stop, and the per-module query the page runs."""
    t = spawn("/usr/bin/python3", "torch_train.py")
    s = serve("--listen", "127.0.0.1:0")
    assert api(s, "/api/processes/%d/attach" % t.pid, "POST")[0] == 200
    status, e = api(s, "/api/processes/%d/torch/trace" % t.pid)
    assert status == 404 and "start perf --torch" in e["error"], e
    status, st = api(s, "/api/processes/%d/torch" % t.pid, "POST", {"action": "start", "every": 1})
    assert status == 200 and st["running"] is True and st["every"] == 1, st
    deadline = time.time() + 60
    while time.time() < deadline:
        status, st = api(s, "/api/processes/%d/torch" % t.pid, "POST", {"action": "status"})
        if st["tracedSteps"] >= 3:
            break
        time.sleep(0.3)
    assert st["tracedSteps"] >= 3, st
    status, trace = api(s, "/api/processes/%d/torch/trace?steps=2" % t.pid)
    assert status == 200 and trace["otherData"]["pid"] == t.pid
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["cat"] for e in spans} == {"forward", "backward", "step"}, spans[:3]
    assert len([e for e in spans if e["cat"] == "step"]) == 2
    assert {"TinyTransformer", "CrossEntropyLoss"} <= {e["name"] for e in spans}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    status, q = api(s, "/api/processes/%d/query" % t.pid, "POST", {
        "sql": "SELECT module, COUNT(*) FROM python.torch_trace WHERE stage = 'forward_post' "
               "GROUP BY 1"})
    assert status == 200 and len(q["rows"]) >= 3, q
    # /metrics: the step-time histogram and per-module means, through Prometheus' parser.
    status, text = api(s, "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(text.decode())}
    h = fams["probing_torch_step_seconds"]
    assert h.type == "histogram"
    mine = [sm for sm in h.samples if sm.labels["pid"] == str(t.pid)]
    count = [sm.value for sm in mine if sm.name.endswith("_count")][0]
    buckets = [(float(sm.labels["le"]), sm.value) for sm in mine if sm.name.endswith("_bucket")]
    assert count >= 3 and buckets[-1] == (float("inf"), count)
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)
    assert [sm.value for sm in mine if sm.name.endswith("_sum")][0] > 0
    mods = {(sm.labels["module"], sm.labels["stage"]): sm.value
            for sm in fams["probing_torch_module_seconds"].samples
            if sm.labels["pid"] == str(t.pid)}
    assert mods[("TinyTransformer", "forward")] > 0 and mods[("TinyTransformer", "backward")] > 0
    status, e = api(s, "/api/processes/%d/torch/trace?steps=0" % t.pid)
    assert status == 400
    status, st = api(s, "/api/processes/%d/torch" % t.pid, "POST", {"action": "stop"})
    assert status == 200 and st["running"] is False, st
    status, e = api(s, "/api/processes/%d/torch" % t.pid, "POST", {"action": "go"})
    assert status == 400
    status, _ = api(s, "/api/processes/%d/torch" % t.pid)
    assert status == 405


def test_serve_remote_target(spawn, serve):
    """--target HOST:PORT: a probe listening on TCP (inject --listen) served beside the local
    processes, named HOST:PORT in the API, reached with $PROBING_TOKEN; a wrong token shows as
    that entry's error; nothing to attach there."""
    t = spawn("/usr/bin/python3", "threads.py")
    token = "remote-token-0123456789"
    r = probing("-p", t.pid, "inject", "--listen", "127.0.0.1:0", env={"PROBING_TOKEN": token},
                check=True)
    address = [l.split()[-1] for l in r.stdout.splitlines() if l.startswith("listening on ")][0]
    r = subprocess.run([CLI, "serve", "--target", address], capture_output=True, text=True,
                       timeout=20, env={k: v for k, v in os.environ.items()
                                        if k != "PROBING_TOKEN"})
    assert r.returncode == 2 and "--target needs $PROBING_TOKEN" in r.stderr
    r = probing("serve", "--target", "1234")
    assert r.returncode == 2 and "expected HOST:PORT" in r.stderr
    s = serve("--listen", "127.0.0.1:0", "--target", address, env={"PROBING_TOKEN": token})
    status, procs = api(s, "/api/processes")
    remote = [p for p in procs if p["id"] == address]
    assert len(remote) == 1, procs
    p = remote[0]
    assert p["pid"] == t.pid and p["probe"] is True and p["target"] == address
    assert "threads.py" in p["command"] and "error" not in p
    local = [p for p in procs if p["id"] == t.pid]
    assert len(local) == 1 and local[0]["probe"] is True
    status, d = api(s, "/api/processes/%s/stacks" % address)
    assert status == 200 and d["pid"] == t.pid
    status, q = api(s, "/api/processes/%s/query" % address, "POST",
                    {"sql": "SELECT COUNT(*) FROM python.threads"})
    assert status == 200 and q["rows"][0][0] >= 2
    status, e = api(s, "/api/processes/%s/attach" % address, "POST")
    assert status == 400 and "loaded already" in e["error"]
    # No traced step there yet: the error names the target as the paths do (it said "process
    # -1" and /api/processes/-1/torch, the index it was kept under, before).
    status, e = api(s, "/api/processes/%s/torch/trace" % address)
    assert status == 404 and e["error"] == (
        "no traced step in %s yet: start perf --torch (POST /api/processes/%s/torch) and let a "
        "step end" % (address, address)), e
    status, text = api(s, "/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(text.decode())}
    got = [sm for sm in fams["probing_python_threads"].samples
           if sm.labels.get("target") == address]
    assert len(got) == 1 and got[0].labels["pid"] == str(t.pid) and got[0].value >= 2
    s.stop()
    bad = serve("--listen", "127.0.0.1:0", "--target", address,
                env={"PROBING_TOKEN": "not-the-token-9876543"})
    status, procs = api(bad, "/api/processes")
    p = [p for p in procs if p["id"] == address][0]
    assert p["probe"] is False and p["error"], p
    status, e = api(bad, "/api/processes/%s/stacks" % address)
    assert status == 502, e
    t.check_output_clean()


def test_serve_jobs(spawn, serve):
    """A fake torch-style job of 3 ranks (samples/fake_rank.py): GET /api/jobs lists it (as
    `cluster list --json`), POST /api/jobs/stacks gives its grouped stacks (as `cluster stacks
    --json`): one group of ranks 0-2 in wait_for_work; a bad job is 502 with the CLI's line."""
    port = str(20000 + os.getpid() % 20000)
    job = "torch:10.20.0.1:%s" % port
    ranks = [spawn("/usr/bin/python3", "fake_rank.py",
                   env={"RANK": str(r), "WORLD_SIZE": "3", "MASTER_ADDR": "10.20.0.1",
                        "MASTER_PORT": port}) for r in range(3)]
    s = serve("--listen", "127.0.0.1:0")
    status, doc = api(s, "/api/jobs")
    assert status == 200
    mine = [j for j in doc["jobs"] if j["job"] == job]
    assert len(mine) == 1 and sorted(r["pid"] for r in mine[0]["ranks"]) == sorted(
        t.pid for t in ranks), doc
    assert all(r["probe"] == "not loaded" for r in mine[0]["ranks"])
    status, st = api(s, "/api/jobs/stacks", "GET")
    assert status == 405
    status, st = api(s, "/api/jobs/stacks", "POST", {"job": job})
    assert status == 200, st
    assert st["job"] == job and len(st["groups"]) == 1 and st["groups"][0]["ranks"] == [0, 1, 2]
    assert st["groups"][0]["frames"][0]["func"] == "wait_for_work"
    status, e = api(s, "/api/jobs/stacks", "POST", {"job": "torch:nowhere:1"})
    assert status == 502 and "torch:nowhere:1" in e["error"], e
    status, e = api(s, "/api/jobs/stacks", "POST", {})
    assert status == 400
    for t in ranks:
        t.check_output_clean()


def test_serve_jobs_on_other_nodes(spawn, serve, tmp_path):
    """The cluster's host options: serve lists and groups a job whose ranks it finds on the
    nodes they name, each reached through the --exec template once per request (here 'sh -c'
    stands in for ssh: node alpha runs the command on this machine, node dead never answers and
    costs its --node-timeout); a rank the world size expects and no node has is missing. Bad
    host options stop serve before it listens, in one line."""
    port = str(21000 + os.getpid() % 20000)
    job = "torch:10.22.0.1:%s" % port
    ranks = [spawn("/usr/bin/python3", "fake_rank.py",
                   env={"RANK": str(r), "WORLD_SIZE": "4", "MASTER_ADDR": "10.22.0.1",
                        "MASTER_PORT": port}) for r in range(3)]
    log = tmp_path / "calls"
    tmpl = ("sh -c 'echo {host} >> %s; if [ {host} = dead ]; then sleep 60; else exec \"$@\"; fi' "
            "sh {cmd}" % log)
    s = serve("--listen", "127.0.0.1:0", "--hosts", "alpha,dead", "--exec", tmpl,
              "--node-timeout", "3000", "--probing", CLI)
    assert not log.exists(), "serve asked a node before a request"
    status, doc = api(s, "/api/jobs")
    assert status == 200, doc
    mine = [j for j in doc["jobs"] if j["job"] == job]
    assert len(mine) == 1 and sorted(r["pid"] for r in mine[0]["ranks"]) == sorted(
        t.pid for t in ranks), doc
    assert {"node": "dead", "error": "no answer within 3000 ms (--node-timeout)"} in doc["errors"]
    assert sorted(log.read_text().split()) == ["alpha", "dead"]  # one command per node
    t0 = time.time()
    status, st = api(s, "/api/jobs/stacks", "POST", {"job": job})
    took = time.time() - t0
    assert status == 200, st
    assert [g["ranks"] for g in st["groups"]] == [[0, 1, 2]], st
    assert st["groups"][0]["frames"][0]["func"] == "wait_for_work"
    assert st["world_size"] == 4 and st["missing"] == [3], st
    assert [e["node"] for e in st["errors"]] == ["dead"], st
    assert took < 3 + 10, took
    assert sorted(log.read_text().split()) == ["alpha", "alpha", "dead", "dead"]
    for t in ranks:
        t.check_output_clean()
    for args, msg in [(["--hosts", "n[1-"], "serve: the host options: cluster hosts: node list "
                       "'n[1-': unbalanced brackets or a space"),
                      (["--hosts", "a", "--hostfile", "b"], "serve: the host options: cluster "
                       "hosts: give one of --hosts, --hostfile, --nodelist, --slurm"),
                      (["--hostfile", str(tmp_path / "none")], "serve: the host options: "
                       "cluster hosts: ")]:
        r = probing("serve", "--listen", "127.0.0.1:0", *args)
        assert r.returncode == 2 and r.stderr.startswith("probing: error: " + msg), (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stdout == "", r.stderr


def test_serve_cluster_child_signals(serve, tmp_path):
    """serve blocks SIGINT and SIGTERM in its threads and ignores SIGPIPE; the `probing cluster`
    it runs for /api/jobs, and the node commands that one starts, get none of it: nothing
    blocked, and SIGINT, SIGTERM, SIGPIPE not ignored (seen from a command the --exec
    template's shell runs)."""
    status_file = tmp_path / "sig"
    # grep reads its own status (/proc/self): what the node command inherits. The shell's own
    # (/proc/$$) shows every signal blocked while dash waits for grep, whatever it inherited.
    tmpl = "sh -c 'grep ^Sig /proc/self/status > %s; exec \"$@\"' sh {cmd}" % status_file
    s = serve("--listen", "127.0.0.1:0", "--hosts", "alpha", "--exec", tmpl, "--probing", CLI)
    status, doc = api(s, "/api/jobs")
    assert status in (200, 502), doc
    sig = dict(l.split(":\t") for l in status_file.read_text().splitlines())
    assert int(sig["SigBlk"], 16) == 0, sig
    bit = lambda n: 1 << (n - 1)  # noqa: E731
    for n in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        assert not int(sig["SigIgn"], 16) & bit(n), (n, sig)


def test_cli_links_no_http_server():
    """`probing` itself loads no HTTP server nor GnuTLS (every command would pay their start-up,
    and GnuTLS writes to stderr without a random source); `serve` runs lib/probing/probing-serve,
    which has them, with the same arguments, and the probes are found from either."""
    libs = subprocess.run(["ldd", CLI], capture_output=True, text=True, check=True).stdout
    assert "microhttpd" not in libs and "gnutls" not in libs, libs
    serve_bin = os.path.join(os.path.dirname(os.path.dirname(CLI)), "lib", "probing",
                             "probing-serve")
    assert "microhttpd" in subprocess.run(["ldd", serve_bin], capture_output=True, text=True,
                                          check=True).stdout
    r = probing("serve", "--help", check=True)
    assert r.stdout.startswith("usage: probing serve")
    r = probing("serve", "--listen", "nowhere")
    assert r.returncode == 2 and r.stderr.startswith("probing: error: serve: --listen 'nowhere'")


def _connect_from(src, url):
    """A TCP connection to serve's address from the loopback address src (127.X.Y.Z)."""
    import socket
    import urllib.parse
    u = urllib.parse.urlparse(url)
    c = socket.socket()
    c.bind((src, 0))
    c.settimeout(5)
    c.connect((u.hostname, u.port))
    return c


def _vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def test_serve_unfinished_requests(serve):
    """Issue 37 item 8: 300 requests from one address that never finish their headers do not
    lock everyone else out (connections per address are limited, 32); the owner's client on
    another address is answered at once, and the idle ones are closed after 10 s."""
    s = serve("--listen", "127.0.0.1:0")
    held = []
    for i in range(300):
        try:
            c = _connect_from("127.0.0.2", s.url)
            c.sendall(b"GET /api/processes HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends
            held.append(c)
        except OSError:
            pass
    time.sleep(0.5)
    t0 = time.time()
    status, _, _ = http(s.url + "api/processes", timeout=5)
    assert status == 200 and time.time() - t0 < 3
    # The half-open ones were closed: by the per-address limit at once, the rest when idle.
    time.sleep(11)
    import socket
    open_ = 0
    for c in held:
        try:
            c.settimeout(0.2)
            c.recv(1)  # b"" (closed) or an error answer: not held
        except socket.timeout:
            open_ += 1
        except OSError:
            pass
        c.close()
    assert len(held) >= 32 and open_ == 0, "%d unfinished requests open after 11 s" % open_


def test_serve_body_before_token(serve):
    """Issue 37 item 8: 200 connections sending 1 MB bodies without the token are refused on
    their headers (401), their bodies never read: serve's peak RSS stays bounded (it grew by
    about 200 MB when bodies were read before the token was checked)."""
    s = serve("--listen", "127.0.0.1:0", "--token", "auto")
    time.sleep(0.3)
    before = _vm(s.proc.pid, "VmHWM")
    body = b"x" * ((1 << 20) - 16)
    conns = []
    for i in range(200):
        src = "127.0.%d.%d" % (1 + i // 20, 10 + i % 20)  # 10 addresses, 20 each
        try:
            c = _connect_from(src, s.url)
            c.sendall(b"POST /api/jobs/stacks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Origin: %s\r\nContent-Length: %d\r\n\r\n" % (s.origin.encode(), len(body)))
            conns.append(c)
        except OSError:
            pass
    import threading

    def push(c):
        try:
            c.sendall(body)
        except OSError:
            pass
    threads = [threading.Thread(target=push, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    time.sleep(0.5)
    grown = _vm(s.proc.pid, "VmHWM") - before
    answers = []
    for c in conns:
        try:
            c.settimeout(2)
            answers.append(c.recv(64))
        except OSError:
            answers.append(b"")
        c.close()
    print("serve peak RSS growth: %d MB" % (grown >> 20))
    assert grown < 20 << 20, "serve's peak RSS grew by %d MB" % (grown >> 20)
    assert sum(a.startswith(b"HTTP/1.1 401") for a in answers) >= 150, answers[:5]
    # A body over the limit with the token: 413 on the headers.
    tok = re.match(r"^token: (\S+)$", s.lines[2]).group(1)
    c = _connect_from("127.0.0.1", s.url)
    c.sendall(b"POST /api/jobs/stacks HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\n"
              b"Authorization: Bearer %s\r\nContent-Length: 5000000\r\n\r\n"
              % (s.origin[7:].encode(), s.origin.encode(), tok.encode()))
    assert c.recv(64).startswith(b"HTTP/1.1 413")
    c.close()
    # The token holder is answered.
    status, _, _ = http(s.url + "api/processes", headers={"Authorization": "Bearer " + tok})
    assert status == 200


FAKE_PROBE = r"""
import mmap, os, socket, sys, time
lib = os.path.join(sys.argv[1], "libprobing-fake-%d.so" % os.getpid())
with open(lib, "wb") as f:
    f.write(b"\0" * 4096)
with open(lib, "rb") as f:
    # mapped as code, as a probe's is: "a probe" to the CLI, which lists mappings of files
    # with code where the kernel has PROCMAP_QUERY (injector/ptrace/procfs.c)
    m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)
d = "/tmp/probing-%d" % os.geteuid()
os.makedirs(d, mode=0o700, exist_ok=True)
s = socket.socket(socket.AF_UNIX)
s.bind(os.path.join(d, "%d.sock" % os.getpid()))
s.listen(64)  # never accepted, never answered
print("ready", flush=True)
time.sleep(300)
"""


def test_serve_metrics_fake_probes(spawn, serve, tmp_path):
    """Issue 37 item 8: three processes posing as probes (a libprobing- mapping, a socket at
    the probe's path that never answers) cost /metrics one 5 s deadline in all, not 10 s each
    in turn; the real probe's figures are in the answer."""
    t = spawn("/usr/bin/python3", SAMPLE)
    s = serve("--listen", "127.0.0.1:0")
    assert api(s, "/api/processes/%d/attach" % t.pid, "POST")[0] == 200
    fakes = []
    try:
        for _ in range(3):
            f = subprocess.Popen(["/usr/bin/python3", "-c", FAKE_PROBE, str(tmp_path)],
                                 stdout=subprocess.PIPE, text=True)
            fakes.append(f)
            assert f.stdout.readline().strip() == "ready"
        status, procs = api(s, "/api/processes")
        posing = [p for p in procs if p["pid"] in [f.pid for f in fakes]]
        assert len(posing) == 3 and all(p["probe"] for p in posing), posing
        t0 = time.time()
        status, _, body = http(s.url + "metrics", timeout=60)
        took = time.time() - t0
        print("/metrics with 3 fake probes: %.2f s" % took)
        assert status == 200
        fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
        threads = [x for x in fams["probing_python_threads"].samples
                   if x.labels["pid"] == str(t.pid)]
        assert threads and threads[0].value >= 1, threads
        assert took < 5 + 2, "/metrics took %.1f s" % took
    finally:
        for f in fakes:
            f.kill()
            f.wait()
            try:
                os.unlink("/tmp/probing-%d/%d.sock" % (os.geteuid(), f.pid))
            except OSError:
                pass
