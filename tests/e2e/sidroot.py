# SPDX-License-Identifier: MIT
"""Targets of the Debian sid root (tools/sid-root.sh: CPython 3.13.x, 3.14, 3.15, torch 2.x),
run as a container runs them: the root's interpreter in its own mount namespace after
pivot_root, with a private /tmp, the host's old root detached (umount2), and the same pid as
the process the test started (each step execs the next).

Inside, /mnt/samples is samples/ (read-only) and /mnt/work the test's tmp_path: the paths a
test gives the target are mapped with .inside(). The root itself is shared and read-only to us:
everything this mounts lives in the private namespace only.

Until the probe is self-contained (issue 17's container half), the libraries it needs that the
root lacks are copied into /mnt/lib and named by LD_LIBRARY_PATH; once none are missing,
nothing is copied and the variable is not set."""
import os
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLES = os.path.join(ROOT, "samples")
PREFIX = "sid:"

# Runs as /bin/sh in the new mount namespace (unshare -m): $1 root, $2 samples, $3 work dir,
# $4 libraries to copy, then the interpreter and its arguments.
_SETUP = r'''set -e
P=$PATH; PATH=/usr/sbin:/usr/bin:/sbin:/bin
R=$1; S=$2; W=$3; L=$4; shift 4
mount --make-rprivate /
mount --bind "$R" "$R"
mount -o remount,bind,ro "$R"
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/mnt"
mount -t proc proc "$R/proc"
mkdir "$R/mnt/old" "$R/mnt/samples" "$R/mnt/work" "$R/mnt/lib"
mount --bind -o ro "$S" "$R/mnt/samples"
mount --bind "$W" "$R/mnt/work"
[ -z "$L" ] || cp $L "$R/mnt/lib/"
cd "$R"
pivot_root . mnt/old
cd /
PATH=$P
exec "$1" -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).umount2(b"/mnt/old", 2) != 0:
    sys.exit("sidroot: umount2 of the old root failed: errno %d" % ctypes.get_errno())
os.rmdir("/mnt/old")
os.execv(sys.argv[1], sys.argv[1:])' "$@"
'''


def root():
    """The sid root's path, or None when it is not built."""
    out = subprocess.run([os.path.join(ROOT, "tools", "sid-root.sh"), "--if-present"],
                         capture_output=True, text=True).stdout.strip()
    return out or None


def pythons():
    """[(id, interpreter path inside the root)] from tools/pythons.sh --sid."""
    out = subprocess.run([os.path.join(ROOT, "tools", "pythons.sh"), "--sid"],
                         capture_output=True, text=True, check=True).stdout
    return [(l.split()[0], l.split()[2]) for l in out.splitlines() if l.strip()]


def is_sid(python):
    return isinstance(python, str) and python.startswith(PREFIX)


def _missing_libs(build, exe):
    """Host paths of the libraries the probe for exe needs that the root lacks."""
    minor = exe.rsplit("python", 1)[-1]
    lib = os.path.join(build, "lib", "probing", "libprobing-%s.so" % minor)
    r = root()
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    missing = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            name = parts[0]
            if not any(os.path.exists(os.path.join(r, d, name)) for d in
                       ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib")):
                missing.append(parts[2])
    return missing


class Inside:
    """How one target of the root is started and how its paths read from inside."""

    def __init__(self, python, work, build):
        self.exe = python[len(PREFIX):]
        self.work = str(work)
        self.libs = _missing_libs(build, self.exe)

    def inside(self, value):
        """A host path (samples/, the work dir) as the target sees it; anything else as is."""
        v = str(value)
        for host, there in ((SAMPLES, "/mnt/samples"), (self.work, "/mnt/work")):
            if v == host or v.startswith(host + os.sep):
                return there + v[len(host):]
        return value

    def argv(self, args):
        return ["/usr/bin/unshare", "-m", "/bin/sh", "-c", _SETUP, "sidroot", root(), SAMPLES, self.work,
                " ".join(self.libs), self.exe, *[self.inside(a) for a in args]]

    def env(self, env):
        e = {k: self.inside(v) for k, v in env.items()}
        # The host's PATH and Python settings mean nothing in the root.
        for k in ("PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV"):
            e.pop(k, None)
        e["PATH"] = "/usr/local/bin:/usr/bin:/bin"
        if self.libs:
            e["LD_LIBRARY_PATH"] = "/mnt/lib"
        return e
