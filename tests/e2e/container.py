# SPDX-License-Identifier: MIT
"""Container-like targets for the end-to-end tests: a command started inside a root (the Debian
sid root of tools/sid-root.sh, shared READ-ONLY by everyone: never written) the three ways users,
Docker and Kubernetes start processes:

- "chroot": a plain chroot, in the host's mount namespace (the root's mounts are made there and
  removed at teardown);
- "pivot": its own mount namespace, the root made / by pivot_root and the old root detached with
  umount2 (the sid root has no mount/umount binaries: this module does it from the launcher);
- "pidns": as "pivot", plus its own PID namespace: the target is pid 1 inside, another pid out
  here (/proc/N/status NSpid maps them); the test gets the host pid.

The root is an overlay: the sid root as its read-only lower layer, writes going to a private
tmpfs (so mount points for binds can be made), with a fresh tmpfs on /tmp, its own /proc, and the
host's /dev. Binds put host paths inside (the samples, the test's tmp_path, a pyenv interpreter),
at the same path unless told otherwise; files can be hidden (whiteouts in the overlay, e.g. a
library the container should not have); the target may run as another user (uid, its group the
same number), and its /tmp be mounted noexec as hardened containers do. Everything is torn down after, on failure too: the
namespaces end with their last process; the chroot's mounts are detached by the fixture.

As a launcher (the prefix of the target's command line, run by the host's python3):
    python3 container.py SPEC_JSON -- ARGV...
"""
import ctypes
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

MODES = ("chroot", "pivot", "pidns")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

MS_RDONLY, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 8, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def _mount(src, target, fstype, flags, data=None):
    _check(_libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()),
           "mount %s on %s" % (src or fstype, target))


def _umount2(target, flags):
    _check(_libc.umount2(target.encode(), flags), "umount2 %s" % target)


def sid_root():
    """The sid root's path (tools/sid-root.sh builds it when missing)."""
    r = subprocess.run([os.path.join(ROOT, "tools", "sid-root.sh")], capture_output=True,
                       text=True, timeout=1800)
    if r.returncode != 0:
        raise AssertionError("tools/sid-root.sh failed: %s" % r.stderr[-2000:])
    return r.stdout.strip()


def _prepare(spec):
    """Mounts the root at <scratch>/merged, in the current mount namespace; returns its path."""
    scratch = spec["scratch"]
    _mount("tmpfs", scratch, "tmpfs", 0, "size=256m,mode=0755")
    # Private: nothing mounted below propagates anywhere, nor comes in.
    _mount(None, scratch, None, MS_REC | MS_PRIVATE)
    for d in ("upper", "work", "merged"):
        os.mkdir(os.path.join(scratch, d))
    merged = os.path.join(scratch, "merged")
    _mount("overlay", merged, "overlay", 0, "lowerdir=%s,upperdir=%s/upper,workdir=%s/work" % (
        spec["root"], scratch, scratch))
    _mount("tmpfs", merged + "/tmp", "tmpfs", MS_NOEXEC if spec.get("tmp_noexec") else 0,
           "mode=1777,size=64m")
    _mount("/dev", merged + "/dev", None, MS_BIND | MS_REC)
    if spec["mode"] != "pidns":  # pidns: mounted by pid 1 of the new namespace
        _mount("proc", merged + "/proc", "proc", 0)
    for path in spec.get("hide", ()):  # a whiteout in the overlay: gone from this root only
        os.unlink(merged + path)
    for host, inside, ro in spec["binds"]:
        where = merged + inside
        if os.path.isdir(host):
            os.makedirs(where, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(where), exist_ok=True)
            open(where, "a").close()
        _mount(host, where, None, MS_BIND | MS_REC)
        if ro:
            _mount(None, where, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    return merged


def _pivot(merged):
    os.chdir(merged)
    _check(_libc.syscall(SYS_PIVOT_ROOT[platform.machine()], b".", b"."), "pivot_root")
    _umount2(".", MNT_DETACH)  # the old root, stacked under the new one
    os.chdir("/")


def _exec(spec, argv):
    if spec.get("uid") is not None:  # the target's user, once the root is in place
        os.setgroups([])
        os.setgid(spec["uid"])
        os.setuid(spec["uid"])
    os.execv(argv[0], argv)


def _launch(spec, argv):
    mode = spec["mode"]
    if mode == "chroot":
        merged = _prepare(spec)
        os.chroot(merged)
        os.chdir("/")
        _exec(spec, argv)
    flags = CLONE_NEWNS | (CLONE_NEWPID if mode == "pidns" else 0)
    _check(_libc.unshare(flags), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    if mode == "pivot":
        _pivot(_prepare(spec))
        _exec(spec, argv)
    # pidns: the first child is pid 1 of the new namespace; this process stays out here, tells
    # the test the child's pid and ends with it.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)  # the pid is written before the target starts
        merged = _prepare(spec)
        _mount("proc", merged + "/proc", "proc", 0)
        _pivot(merged)
        _exec(spec, argv)
    with open(spec["pidfile"] + ".tmp", "w") as f:
        f.write("%d\n" % pid)
    os.rename(spec["pidfile"] + ".tmp", spec["pidfile"])
    os.write(w, b"x")
    os.close(w)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xff)


class Container:
    """A root for one test: cont.launcher goes before the target's command line (conftest's
    Target(launcher=...)); cont.host_pid(proc) is the target's pid as the host sees it;
    cont.teardown() detaches whatever is left (the chroot's mounts)."""

    def __init__(self, root, mode, scratch, binds=(), hide=(), uid=None, tmp_noexec=False):
        assert mode in MODES, mode
        self.root, self.mode = root, mode
        self.scratch = str(scratch)
        os.makedirs(self.scratch, exist_ok=True)
        self.pidfile = self.scratch + ".pid"
        spec = {"root": root, "mode": mode, "scratch": self.scratch, "pidfile": self.pidfile,
                "binds": [(str(h), str(i if i else h), ro) for h, i, ro in binds],
                "hide": list(hide), "uid": uid, "tmp_noexec": tmp_noexec}
        self.launcher = ["/usr/bin/python3", os.path.abspath(__file__), json.dumps(spec), "--"]

    def host_pid(self, proc, timeout=20):
        """The target's pid out here: the launcher's own (it execs the target) but with pidns,
        where the launcher forks it and writes its pid."""
        if self.mode != "pidns":
            return proc.pid
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with open(self.pidfile) as f:
                    return int(f.read())
            except FileNotFoundError:
                if proc.poll() is not None:
                    raise AssertionError("the container's launcher exited (%s)" % proc.returncode)
                time.sleep(0.01)
        raise AssertionError("the container's launcher gave no pid")

    def mounts(self):
        """Mount points of ours in the host's mount namespace (the chroot's; none otherwise)."""
        with open("/proc/self/mountinfo") as f:
            pts = [l.split()[4] for l in f]
        return [p for p in pts if p == self.scratch or p.startswith(self.scratch + "/")]

    def teardown(self):
        if self.mounts():
            _umount2(self.scratch, MNT_DETACH)  # the tmpfs and everything below it
        for p in (self.pidfile, self.pidfile + ".tmp"):
            if os.path.exists(p):
                os.unlink(p)


# Where the test's shared directory (the probe's log) is seen inside.
SHARED = "/probing-test"


def _target_class():
    from conftest import Target

    class ContainerTarget(Target):
        """conftest's Target in a Container: pid is the target's host pid; the probe logs to
        SHARED/probe.log inside (tmp_path/shared out here); kill ends the launcher's process
        group (with pidns, the launcher and the target's whole namespace)."""

        def __init__(self, cont, python, sample, tmp_path, env=None, wait_ready=True,
                     pyargs=(), **kw):
            self.cont = cont
            env = dict(env or {}, PROBING_LOG=SHARED + "/probe.log")
            if os.environ.get("PROBING_TARGET_PRELOAD"):  # make asan: reports where we see them
                for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
                    env[k] = "%s:log_path=%s/sanitizer" % (
                        "detect_leaks=0:verify_asan_link_order=0" if k == "ASAN_OPTIONS"
                        else "halt_on_error=1:print_stacktrace=1", SHARED)
            launcher = cont.launcher
            if pyargs:  # the interpreter's own options go between it and the sample
                launcher, python = [*launcher, python, *pyargs[:-1]], pyargs[-1]
            super().__init__(python, sample, tmp_path, env=env, wait_ready=False,
                             launcher=launcher, **kw)
            self.log_path = tmp_path / "shared" / "probe.log"
            try:
                self.pid = cont.host_pid(self.proc)
                if wait_ready:
                    self.ready = self.wait_line(r"^ready (\{.*\})$", json_group=True)
            except BaseException:
                self.kill()
                raise

        def kill(self):
            if self.proc.poll() is None:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
    return ContainerTarget


def make_spawner(tmp_path):
    """Returns (spawn, cleanup): spawn(mode, python, sample="threads.py", root=None, binds=(),
    hide=(), uid=None, tmp_noexec=False, pyargs=(), **Target kwargs) starts conftest's Target in a fresh Container of the sid root (or root),
    with the samples (read-only) and tmp_path/shared (at SHARED) bound in; cleanup() kills the
    targets and tears the containers down."""
    from conftest import SAMPLES
    made = []
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)

    def spawn(mode, python, sample="threads.py", root=None, binds=(), hide=(), uid=None,
              tmp_noexec=False, **kw):
        # Out of pytest's 0700 directory: a chroot'ed target's user must reach its root.
        scratch = tempfile.mkdtemp(prefix="probing-ctr-", dir="/var/tmp")
        os.chmod(scratch, 0o755)
        if uid is not None:
            os.chmod(shared, 0o777)
        # make asan: the sanitizers' runtimes the target preloads, at their paths.
        preload = [(f, None, True) for f in os.environ.get("PROBING_TARGET_PRELOAD", "").split()]
        cont = Container(root or sid_root(), mode, scratch, hide=hide, uid=uid, tmp_noexec=tmp_noexec,
                         binds=[(SAMPLES, None, True), (shared, SHARED, False), *preload, *binds])
        made.append([cont, None])
        t = _target_class()(cont, python, sample, tmp_path, **kw)
        made[-1][1] = t
        return t

    def cleanup(failed=False):
        for cont, t in made:
            try:
                if t and failed:
                    print("---- probe log of %d ----\n%s" % (t.pid, t.probe_log()[-4000:]))
                    print("---- stderr of %d (tail) ----\n%s" % (t.pid, t.errors()[-4000:]))
                if t:
                    t.kill()
            finally:
                cont.teardown()
                os.rmdir(cont.scratch)
        reports = sorted(shared.glob("sanitizer*"))
        assert not reports, "sanitizer report from a target: %s" % reports[0].read_text()[-4000:]
    return spawn, cleanup


if __name__ == "__main__":
    sep = sys.argv.index("--")
    _launch(json.loads(sys.argv[1]), sys.argv[sep + 1:])
