# SPDX-License-Identifier: MIT
"""Targets of the Debian sid root (tools/sid-root.sh: CPython 3.13.x, 3.14, 3.15, torch 2.x),
run as a container runs them: the root's interpreter in its own mount namespace after
pivot_root into a new root file system (a tmpfs holding the sid root's directories, bound
read-only, a private /tmp and /proc, and a private /dev/shm as Docker and Kubernetes give one:
multiprocessing's locks and queues need it), the host's old root detached (umount2), and the
same pid as the process the test started (each step execs the next).

The checkout (samples/ and the rest, read-only) and the test's tmp_path (under /tmp, in the
private /tmp) are bound at their own paths inside, so that a path a test gives the target or
the probe reads the same on both sides, as a container's volumes often are. The sid root
itself is shared and read-only to us: everything this mounts lives in the private namespace.

A container has no compiler: the samples that build a C library at start (perf_hot.py,
errno_loop.py, dlopen_loop.py) run a `cc` stand-in first on PATH inside that copies the library
the host's compiler built beforehand from the same source with the same flags (PREBUILT).

Until the probe is self-contained (issue 17's container half), the libraries it needs that the
root lacks are copied into /.probing-lib and named by LD_LIBRARY_PATH; once none are missing,
nothing is copied and the variable is not set."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PREFIX = "sid:"
# The samples' C libraries and the flags their build_lib() gives cc.
PREBUILT = {"perf_hot": ["-O1", "-fno-omit-frame-pointer"], "errno_loop": ["-O2"],
            "dlopen_lib": ["-O1"], "dlopen_walk": ["-O1"], "native_mix": ["-g", "-O0"]}

# Runs as /bin/sh in the new mount namespace (unshare -m): $1 the sid root, $2 the new root's
# mount point (an empty directory), $3 the checkout, $4 the work dir (under /tmp), $5 libraries
# to copy, then the interpreter and its arguments.
_SETUP = r'''set -e
P=$PATH; PATH=/usr/sbin:/usr/bin:/sbin:/bin
R=$1; N=$2; C=$3; W=$4; L=$5; shift 5
mount --make-rprivate /
mount -t tmpfs -o mode=755 tmpfs "$N"
for e in "$R"/* "$R"/.[!.]*; do
  [ -e "$e" ] || [ -L "$e" ] || continue
  b=${e##*/}
  if [ -L "$e" ]; then cp -P "$e" "$N/$b"; continue; fi
  mkdir "$N/$b"
  case $b in
    tmp) mount -t tmpfs -o mode=1777 tmpfs "$N/tmp" ;;
    proc) mount -t proc proc "$N/proc" ;;
    *) mount --bind "$e" "$N/$b"; mount -o remount,bind,ro "$N/$b" ;;
  esac
done
[ ! -d "$N/dev/shm" ] || mount -t tmpfs -o mode=1777 tmpfs "$N/dev/shm"
mkdir -p "$N$C" "$N$W" "$N/.old" "$N/.probing-lib" "$N/.probing-bin"
printf '%s\n' '#!/bin/sh' 'o=; s=' 'while [ $# -gt 0 ]; do case $1 in -o) o=$2; shift;; *.c) s=$1;; esac; shift; done' \
  "exec cp \"$W/.prebuilt/\$(basename \"\$s\" .c).so\" \"\$o\"" > "$N/.probing-bin/cc"
chmod 755 "$N/.probing-bin/cc"
mount --bind "$C" "$N$C"; mount -o remount,bind,ro "$N$C"
mount --bind "$W" "$N$W"
[ -z "$L" ] || cp $L "$N/.probing-lib/"
cd "$N"
pivot_root . .old
cd /
PATH=$P
exec "$1" -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).umount2(b"/.old", 2) != 0:
    sys.exit("sidroot: umount2 of the old root failed: errno %d" % ctypes.get_errno())
os.rmdir("/.old")
os.chdir(os.environ.pop("SIDROOT_CWD", "/"))
if os.environ.get("SIDROOT_PRELOAD"):
    os.environ["LD_PRELOAD"] = os.environ.pop("SIDROOT_PRELOAD")
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


def command(python, args):
    """argv running the interpreter once with args, for a query (its version, a module's
    presence): inside the root through chroot, which is enough there."""
    if not is_sid(python):
        return [python, *args]
    return ["chroot", root(), python[len(PREFIX):], *args]


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
        # (what the probe carries beside itself goes with it: not missing)
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/") and \
                os.path.dirname(os.path.realpath(parts[2])) != os.path.dirname(os.path.realpath(lib)):
            name = parts[0]
            if not any(os.path.exists(os.path.join(r, d, name)) for d in
                       ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib")):
                missing.append(parts[2])
    return missing


_PREBUILT_DIR = []


def _prebuilt():
    """The samples' libraries, built once per test session."""
    if not _PREBUILT_DIR:
        d = tempfile.mkdtemp(prefix="probing-sid-prebuilt-")
        for name, flags in PREBUILT.items():
            subprocess.run(["cc", *flags, "-shared", "-fPIC", "-o", os.path.join(d, name + ".so"),
                            os.path.join(ROOT, "samples", name + ".c")], check=True)
        _PREBUILT_DIR.append(d)
    return _PREBUILT_DIR[0]


class Inside:
    """How one target of the root is started."""

    def __init__(self, python, work, build):
        self.exe = python[len(PREFIX):]
        # The session's whole base directory (pytest-N), so that files of other fixtures
        # (tmp_path_factory's, e.g. a preloaded shim) are at their paths too.
        self.work = os.path.realpath(str(work))
        up = self.work
        while os.path.dirname(up) != up:
            if re.match(r"pytest-\d+$", os.path.basename(up)):
                self.work = up
                break
            up = os.path.dirname(up)
        assert self.work.startswith("/tmp/"), "sid root targets need a work dir under /tmp"
        self.newroot = tempfile.mkdtemp(prefix=".sidroot-", dir=self.work)
        self.libs = _missing_libs(build, self.exe)
        # make asan: the host compiler's sanitizer runtimes, which the probe was built against
        # (the root's are another compiler's, or none), go in with the other libraries and are
        # preloaded from there.
        self.preload = [os.path.realpath(p) for p in
                        os.environ.get("PROBING_TARGET_PRELOAD", "").split()]
        self.libs += self.preload

    def argv(self, args):
        shutil.copytree(_prebuilt(), os.path.join(self.work, ".prebuilt"), dirs_exist_ok=True)
        return ["/usr/bin/unshare", "-m", "/bin/sh", "-c", _SETUP, "sidroot", root(),
                self.newroot, ROOT, self.work, " ".join(self.libs), self.exe, *args]

    def env(self, env):
        e = dict(env)
        # The host's PATH and interpreter settings mean nothing in the root (PYTHONPATH's
        # paths into the checkout do: it is at the same path inside).
        for k in ("PYTHONHOME", "VIRTUAL_ENV"):
            e.pop(k, None)
        e["PATH"] = "/.probing-bin:/usr/local/bin:/usr/bin:/bin"
        if self.libs:
            e["LD_LIBRARY_PATH"] = "/.probing-lib"
        if self.preload:
            # For the target only (set inside, once the root is entered): the runtimes first,
            # from where they were copied, always (a job's ranks started with the test's own
            # environment load the sanitized probe too, and dlopen would bring ASan in last,
            # which it refuses); then anything else a test preloads (a shim under the test's
            # directory) at its own path.
            inside = ["/.probing-lib/" + os.path.basename(p) for p in self.preload]
            inside += [p for p in e.pop("LD_PRELOAD", "").split()
                       if os.path.realpath(p) not in self.preload]
            e["SIDROOT_PRELOAD"] = " ".join(inside)
        return e


def main(argv):
    """python3 tests/e2e/sidroot.py ID ARGS...: runs the sid root's interpreter ID (tools/
    pythons.sh --sid) with ARGS in the container, the checkout at its own path; its exit status.
    For suites outside pytest (tests/pyrt/run.sh)."""
    exe = dict(pythons()).get(argv[0])
    if not exe:
        sys.exit("sidroot: no interpreter %s in the sid root (tools/pythons.sh --sid)" % argv[0])
    work = tempfile.mkdtemp(prefix="probing-sidroot-", dir="/tmp")
    try:
        inside = Inside(PREFIX + exe, work, os.environ.get("PROBING_BUILD",
                                                            os.path.join(ROOT, "build", "release")))
        return subprocess.run(inside.argv(argv[1:]), env=inside.env(dict(os.environ))).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
