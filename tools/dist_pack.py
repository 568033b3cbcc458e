#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/dist_pack.py: packs a build made in the bullseye root (tools/dist.sh) into the release.

usage: dist_pack.py BUILD ROOT OUT PYINC MINOR...
  BUILD  build/dist-bullseye (bin/probing, lib/probing/...)
  ROOT   the bullseye root, where the libraries the build links are found
  OUT    build/dist: probing-VERSION-linux-x86_64.tar.gz and probing-VERSION-py3-none-
         manylinux_2_XX_x86_64.whl (XX: the highest GLIBC_ version any file needs)

Every library an ELF file NEEDs that is not glibc's own is copied from ROOT beside the probes
under a private name (libfoo.so.N -> libfoo-probing.so.N: a user's LD_LIBRARY_PATH or a target's
own copy never stands in for it), the NEEDED entries renamed to match and each file given the
run path $ORIGIN (bin/probing: $ORIGIN/../lib/probing), what auditwheel does. Only the standard
library and patchelf/readelf/strip are used. tools/dist_check.py checks the result.
DIST_ARCH=aarch64 (make dist-aarch64): the build is aarch64's, cross-built against an arm64 ROOT;
the names say linux-aarch64 / manylinux_2_XX_aarch64 and the cross binutils strip."""
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile

ARCH = os.environ.get("DIST_ARCH") or "x86_64"
if ARCH not in ("x86_64", "aarch64"):
    sys.exit("probing: error: dist: DIST_ARCH=%s: only x86_64 and aarch64 are known" % ARCH)
GLIBC_LIBS = {
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "ld-linux-x86-64.so.2" if ARCH == "x86_64" else "ld-linux-aarch64.so.1", "libresolv.so.2", "libutil.so.1",
}
LIB_DIRS = ["lib/%s-linux-gnu" % ARCH, "usr/lib/%s-linux-gnu" % ARCH, "lib", "usr/lib"]
STRIP = "strip" if ARCH == "x86_64" else "aarch64-linux-gnu-strip"
TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    sys.stderr.write("probing: error: dist: %s\n" % msg)
    sys.exit(1)


def run(*cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", run("readelf", "-d", path))


def glibc_max(path):
    vers = re.findall(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", run("readelf", "-V", "-W", path))
    return max(((int(a), int(b)) for a, b in vers), default=(0, 0))


def private_name(soname):
    stem, dot, rest = soname.partition(".so")
    return stem + "-probing" + dot + rest


def version():
    m = re.search(r'#define PROBING_VERSION "([^"]+)"', open(os.path.join(TOP, "common/pb.h")).read())
    return m.group(1)


def find_lib(root, soname):
    for d in LIB_DIRS:
        p = os.path.join(root, d, soname)
        if os.path.exists(p):
            return p
    die("%s, which the build needs, is not in the bullseye root %s" % (soname, root))


def graft(libdir, elves, root):
    """Carries what elves NEED into libdir; returns the carried files."""
    carried = {}
    queue = list(elves)
    while queue:
        f = queue.pop(0)
        for n in needed(f):
            if n in GLIBC_LIBS or os.path.exists(os.path.join(libdir, n)):
                continue
            priv = private_name(n)
            dst = os.path.join(libdir, priv)
            if not os.path.exists(dst):
                shutil.copyfile(find_lib(root, n), dst)
                os.chmod(dst, 0o644)
                run("patchelf", "--set-soname", priv, dst)
                run("patchelf", "--set-rpath", "$ORIGIN", dst)
                carried[priv] = n
                queue.append(dst)
            run("patchelf", "--replace-needed", n, priv, f)
    return carried


CONFIG = ("import os\n"
          "# The release: the probes beside this package (tools/dist_pack.py).\n"
          "LIBDIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), %s))\n")

CLI = '''# SPDX-License-Identifier: MIT
"""The `probing` command of the wheel: runs the CLI carried in this package (bin/probing, which
finds its libraries in ../lib/probing beside itself)."""
import os
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "probing")
    try:
        os.execv(exe, ["probing"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("probing: error: cannot run %s: %s: reinstall the wheel\\n" % (exe, e.strerror))
        sys.exit(1)


if __name__ == "__main__":
    main()
'''


def doc_files():
    files = ["README.md"] + sorted(
        os.path.join(d, f) for d, _, fs in os.walk(os.path.join(TOP, "docs")) for f in fs)
    return [os.path.relpath(os.path.join(TOP, f), TOP) for f in files]


def main():
    if len(sys.argv) < 6:
        die("usage: dist_pack.py BUILD ROOT OUT PYINC MINOR...")
    build, root, out = sys.argv[1:4]
    minors = sys.argv[5:]
    ver = version()
    name = "probing-%s" % ver
    stage = os.path.join(out, "stage", name)
    shutil.rmtree(os.path.join(out, "stage"), ignore_errors=True)
    os.makedirs(os.path.join(stage, "bin"))
    libdir = os.path.join(stage, "lib", "probing")
    os.makedirs(libdir)
    shutil.copy2(os.path.join(build, "bin", "probing"), os.path.join(stage, "bin"))
    for f in sorted(os.listdir(os.path.join(build, "lib", "probing"))):
        shutil.copy2(os.path.join(build, "lib", "probing", f), libdir)
    for m in minors:
        for kind in ("libprobing-%s.so", "libprobing-read-%s.so"):
            if not os.path.exists(os.path.join(libdir, kind % m)):
                die("the build made no %s" % (kind % m))
    ours = [os.path.join(stage, "bin", "probing")] + [
        os.path.join(libdir, f) for f in sorted(os.listdir(libdir)) if is_elf(os.path.join(libdir, f))]
    for f in ours:
        run(STRIP, "--strip-debug", f)  # the symbol table stays (crash reports name functions)
    carried = graft(libdir, ours, root)
    for f in ours:
        run("patchelf", "--set-rpath", "$ORIGIN/../lib/probing" if "/bin/" in f else "$ORIGIN", f)
    # The Python package, as `make install` lays it out (tools/install-python.sh), its LIBDIR
    # relative to itself; and the docs.
    pysrc = os.path.join(TOP, "probe", "python")
    for m in minors:
        site = os.path.join(stage, "lib", "python" + m, "site-packages")
        os.makedirs(os.path.join(site, "probing"))
        for f in sorted(os.listdir(os.path.join(pysrc, "probing"))):
            if f.endswith(".py"):
                shutil.copyfile(os.path.join(pysrc, "probing", f), os.path.join(site, "probing", f))
        with open(os.path.join(site, "probing", "_config.py"), "w") as f:
            f.write(CONFIG % '"..", "..", "..", "probing"')
        shutil.copyfile(os.path.join(pysrc, "probing.pth"), os.path.join(site, "probing.pth"))
    docdir = os.path.join(stage, "share", "doc", "probing")
    for f in doc_files():
        os.makedirs(os.path.join(docdir, os.path.dirname(f)), exist_ok=True)
        shutil.copyfile(os.path.join(TOP, f), os.path.join(docdir, f))

    elves = [os.path.join(d, f) for d, _, fs in os.walk(stage) for f in fs if is_elf(os.path.join(d, f))]
    top = max(glibc_max(f) for f in elves)
    tag = max(top, (2, 17))
    tarball = os.path.join(out, "%s-linux-%s.tar.gz" % (name, ARCH))

    def owner(ti):
        ti.uid = ti.gid = 0
        ti.uname = ti.gname = "root"
        return ti

    with tarfile.open(tarball, "w:gz") as t:
        t.add(stage, arcname=name, filter=owner)

    # The wheel: the package with the CLI and libraries inside it (probing/bin/probing,
    # probing/lib/probing/...), the `probing` command a console script that execs it.
    plat = "manylinux_%d_%d_%s" % (tag + (ARCH,))
    whl = os.path.join(out, "%s-py3-none-%s.whl" % (name, plat))
    distinfo = "%s.dist-info" % name
    entries = []  # (arcname, bytes, mode)

    def add_file(arc, path):
        mode = 0o755 if os.stat(path).st_mode & stat.S_IXUSR else 0o644
        with open(path, "rb") as f:
            entries.append((arc, f.read(), mode))

    for f in sorted(os.listdir(os.path.join(pysrc, "probing"))):
        if f.endswith(".py"):
            add_file("probing/" + f, os.path.join(pysrc, "probing", f))
    entries.append(("probing/_config.py", (CONFIG % '"lib", "probing"').encode(), 0o644))
    entries.append(("probing/_cli.py", CLI.encode(), 0o644))
    add_file("probing.pth", os.path.join(pysrc, "probing.pth"))
    add_file("probing/bin/probing", os.path.join(stage, "bin", "probing"))
    for f in sorted(os.listdir(libdir)):
        add_file("probing/lib/probing/" + f, os.path.join(libdir, f))
    for f in doc_files():
        add_file("%s.data/data/share/doc/probing/%s" % (name, f), os.path.join(TOP, f))
    readme = open(os.path.join(TOP, "README.md")).read()
    meta = ("Metadata-Version: 2.1\nName: probing\nVersion: %s\n"
            "Summary: Attach to live Python processes by PID: stacks, eval, SQL, profiles, a debugger\n"
            "License: MIT\nRequires-Python: >=3.8\nPlatform: linux\n"
            "Description-Content-Type: text/markdown\n\n%s" % (ver, readme))
    entries.append((distinfo + "/METADATA", meta.encode(), 0o644))
    entries.append((distinfo + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: probing tools/dist_pack.py\n"
                                          "Root-Is-Purelib: false\nTag: py3-none-%s\n" % plat).encode(), 0o644))
    entries.append((distinfo + "/entry_points.txt", b"[console_scripts]\nprobing = probing._cli:main\n", 0o644))
    entries.append((distinfo + "/top_level.txt", b"probing\n", 0o644))
    rec = io.StringIO()
    w = csv.writer(rec, lineterminator="\n")
    for arc, data, _ in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        w.writerow([arc, "sha256=" + digest, len(data)])
    w.writerow([distinfo + "/RECORD", "", ""])
    entries.append((distinfo + "/RECORD", rec.getvalue().encode(), 0o644))
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, mode in entries:
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (stat.S_IFREG | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    print("dist: carried %s" % ", ".join("%s (%s)" % (k, v) for k, v in sorted(carried.items())))
    print("dist: highest GLIBC_ needed: 2.%d -> %s" % (top[1], plat))
    for f in (tarball, whl):
        print("dist: %s %.1f MB" % (f, os.path.getsize(f) / 1e6))


if __name__ == "__main__":
    main()
