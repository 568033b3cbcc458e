# SPDX-License-Identifier: MIT
"""End-to-end fixtures: real target processes from samples/, the real CLI, real sockets.

Every target runs in its own session (process group), with stdout/stderr captured to files and
PROBING_LOG set; teardown kills the group and checks that the target's output holds only what
the target printed. Every wait is bounded."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import sidroot

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("PROBING_BUILD", os.path.join(ROOT, "build", "release"))
CLI = os.path.join(BUILD, "bin", "probing")
SAMPLES = os.path.join(ROOT, "samples")


def _pythons():
    out = subprocess.run([os.path.join(ROOT, "tools", "pythons.sh")], capture_output=True,
                         text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        minor, _inc, exe = line.split()
        found.append(pytest.param(exe, id=minor))
    if os.path.exists("/usr/bin/python3"):
        found.append(pytest.param("/usr/bin/python3", id="debian"))
    return found


# This machine's interpreters (pyenv's 3.8-3.13, then Debian's python3 last): tests that need
# one host interpreter take it by position here.
HOST_PYTHONS = _pythons()
# The Debian sid root's (3.13-sid, 3.14, 3.15), run in a pivot_root'ed mount namespace
# (sidroot.py), when tools/sid-root.sh has built the root; PYTHONS narrows them as the rest.
SID_PYTHONS = [pytest.param(sidroot.PREFIX + exe, id=i) for i, exe in sidroot.pythons()]
PYTHONS = HOST_PYTHONS + SID_PYTHONS
# The oldest of this machine's pyenv CPythons (3.8 where pyenv has it), for tests that take the
# oldest, a middle one and Debian's.
OLDEST_HOST = next((p.id for p in HOST_PYTHONS if p.id != "debian"), None)


def bp(sample, name):
    """Line number of the '# BP: name' marker in samples/<sample>."""
    with open(os.path.join(SAMPLES, sample)) as f:
        for i, line in enumerate(f, 1):
            if re.search(r"#\s*BP:\s*%s\b" % re.escape(name), line):
                return i
    raise AssertionError("no BP marker %r in %s" % (name, sample))


def sanitizer_env(log_path=None):
    """make asan (PROBING_TARGET_PRELOAD set): what a process that may load the sanitized probe
    needs, its runtimes loaded first; reports to log_path (else stderr). Otherwise nothing."""
    if not os.environ.get("PROBING_TARGET_PRELOAD"):
        return {}
    log = ":log_path=%s" % log_path if log_path else ""
    # disable_coredump=0: ASan sets RLIMIT_CORE to 0 otherwise (test_core's kernel cores)
    return {"LD_PRELOAD": os.environ["PROBING_TARGET_PRELOAD"],
            "ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0:disable_coredump=0" + log,
            "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1" + log}


def asan_interceptor(frame, call="read", func="name"):
    """make asan: whether frame (its name under key func) is ASan's interceptor of libc's call,
    which sits between the C caller and glibc's function."""
    return bool(os.environ.get("PROBING_TARGET_PRELOAD")) and \
        ("interceptor_" + call) in (frame.get(func) or "")


class Target:
    """A running sample. .ready is the JSON of its 'ready {...}' line."""

    # Lines a sample may print; anything else in its output is a leak from the probe.
    ALLOWED = re.compile(r"^(ready \{.*\}|tick \d+( value=-?\d+)?|step \d+|"
                         r"training started, pid \d+|ok .*)$")

    def __init__(self, python, sample, tmp_path, env=None, args=(), wait_ready=True, launcher=(),
                 cwd=None):
        self.out_path = tmp_path / ("%s.out" % sample)
        self.err_path = tmp_path / ("%s.err" % sample)
        self.log_path = tmp_path / "probe.log"
        e = dict(os.environ)
        e.pop("PROBING", None)
        e["PROBING_LOG"] = str(self.log_path)
        e["PROBING_LOG_LEVEL"] = "debug"
        e.update(sanitizer_env(tmp_path / "sanitizer"))
        if not sidroot.is_sid(python):
            # What a sample builds in a mkdtemp directory (the C libraries of read_loop.py,
            # native_mix.py, ...) goes with the test's own directory, not into the machine's
            # /tmp for good (the sid root's /tmp is its own, removed with it).
            e["TMPDIR"] = str(tmp_path)
        e.update(env or {})
        self.script = os.path.join(SAMPLES, sample)  # as python is given it
        argv = [*launcher, python, self.script, *args]
        self.inside = None
        if sidroot.is_sid(python):
            assert not launcher, "a launcher inside the sid root is not supported"
            self.inside = sidroot.Inside(python, tmp_path, BUILD)
            argv = self.inside.argv([os.path.join(SAMPLES, sample), *args])
            e = self.inside.env(e)
            if cwd:  # a directory bound inside (under the test's tmp_path)
                e["SIDROOT_CWD"], cwd = str(cwd), None
        self.proc = subprocess.Popen(
            argv,
            stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"),
            stdin=subprocess.DEVNULL, start_new_session=True, env=e, cwd=cwd)
        self.pid = self.proc.pid
        self.ready = None
        if wait_ready:
            self.ready = self.wait_line(r"^ready (\{.*\})$", json_group=True)

    @property
    def sock(self):
        """The probe's Unix socket: in its own /tmp, which is private in the sid root
        (reached through /proc/PID/root, as the CLI does)."""
        path = "/tmp/probing-%d/%s" % (os.geteuid(), sock_name(self.pid))
        return "/proc/%d/root%s" % (self.pid, path) if self.inside else path

    def host_path(self, path):
        """A path of the target's own /tmp as this side reads it."""
        return "/proc/%d/root%s" % (self.pid, path) if self.inside else path

    def output(self):
        with open(self.out_path) as f:
            return f.read()

    def errors(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_line(self, pattern, timeout=20, json_group=False):
        deadline = time.time() + timeout
        rx = re.compile(pattern, re.M)
        while time.time() < deadline:
            # Whether it has exited, asked before the search: its last lines are then in the
            # output the search reads.
            exited = self.proc.poll() is not None
            m = rx.search(self.output())
            if m:
                return json.loads(m.group(1)) if json_group else m
            if exited:
                raise AssertionError("target exited (%s): %s %s" % (
                    self.proc.returncode, self.output()[-500:], self.errors()[-2000:]))
            time.sleep(0.02)
        raise AssertionError("timed out waiting for %r; output: %s" % (pattern, self.output()[-500:]))

    def ticks(self):
        return len(re.findall(r"^tick \d+( value=-?\d+)?$", self.output(), re.M))

    def assert_responsive(self, timeout=10):
        """The target still runs Python code: new ticks appear."""
        assert self.proc.poll() is None, "target died: %s" % self.errors()[-2000:]
        before = self.ticks()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.ticks() >= before + 2:
                return
            time.sleep(0.05)
        raise AssertionError("target stopped ticking (%d ticks); state: %s" % (
            before, open("/proc/%d/stat" % self.pid).read()))

    def maps_count(self, name="libprobing-"):
        with open("/proc/%d/maps" % self.pid) as f:
            return len({line.split()[-1] for line in f if name in line})

    def probe_log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except FileNotFoundError:
            return "(no probe log)"

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGCONT)
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)

    def check_output_clean(self, extra_allowed=None):
        bad = [l for l in self.output().splitlines() if not self.ALLOWED.match(l)
               and not (extra_allowed and re.match(extra_allowed, l))]
        assert not bad, "unexpected lines on the target's stdout: %r" % bad[:5]
        err = self.errors()
        if extra_allowed:
            err = "\n".join(l for l in err.splitlines() if not re.match(extra_allowed, l))
        assert err.strip() == "", "unexpected stderr from the target: %r" % err[-2000:]


@pytest.fixture
def spawn(tmp_path, request):
    targets = []

    def _spawn(python, sample="threads.py", **kw):
        t = Target(python, sample, tmp_path, **kw)
        targets.append(t)
        return t

    yield _spawn
    failed = request.node.rep_call.failed if hasattr(request.node, "rep_call") else True
    for t in targets:
        if failed:
            print("---- probe log of %d ----\n%s" % (t.pid, t.probe_log()[-4000:]))
            print("---- stdout of %d (tail) ----\n%s" % (t.pid, t.output()[-1500:]))
            print("---- stderr of %d (tail) ----\n%s" % (t.pid, t.errors()[-4000:]))
        t.kill()
    reports = sorted(tmp_path.glob("sanitizer*"))
    assert not reports, "sanitizer report from a target: %s" % reports[0].read_text()[-4000:]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "serial: the file runs after the others, alone on the machine, not on "
        "pytest-xdist's workers (make e2e, E2E_JOBS): it lists every process of the node, shares "
        "a directory of the machine, or measures time, rates or overheads")


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def probing(*args, timeout=60, env=None, user=None, check=False):
    """Runs the CLI; returns CompletedProcess (text)."""
    cmd = [CLI, *[str(a) for a in args]]
    if user:
        import pwd
        pw = pwd.getpwnam(user)
        cmd = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups",
               *cmd]
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    if check and r.returncode != 0:
        raise AssertionError("probing %s failed (%d): %s%s" % (" ".join(map(str, args)),
                             r.returncode, r.stdout, r.stderr))
    return r


def sock_name(pid):
    """The probe's socket's name in its directory: <pid>-<ns>.sock, the pid as the target sees
    it (NSpid's last) and the inode of its PID namespace (probe/core/rundir.c)."""
    inner = pid
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                inner = int(line.split()[-1])
    return "%d-%d.sock" % (inner, os.stat("/proc/%d/ns/pid" % pid).st_ino)


def probe_sock(pid):
    """The probe's socket in the target's /tmp (through /proc/PID/root when that /tmp is not
    ours: a target in the sid root)."""
    path = "/tmp/probing-%d/%s" % (os.geteuid(), sock_name(pid))
    theirs = "/proc/%d/root%s" % (pid, path)
    if not os.path.exists(path) and os.path.exists(theirs):
        return theirs
    return path


def dump_json(pid, *extra):
    r = probing("-p", pid, "debug", "--dump", "--json", *extra, check=True)
    return json.loads(r.stdout)
