#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/dist_check.py: `make dist-check`. Proves, with readelf and nm, that every ELF file of the
release (the tarball and the wheel of build/dist, unpacked) takes nothing from the build machine:
  - it NEEDs only glibc's own libraries and the loader, or a file carried in the folder its run
    path names (itself checked the same way);
  - its run path, if any, is $ORIGIN-relative (no absolute RPATH/RUNPATH);
  - it NEEDs no libpython (a second interpreter would be loaded into the target);
  - each probe (libprobing-3.X.so) exports exactly the entry points probe/probe.h declares
    (tools/check_exports.sh);
  - no GLIBC_ symbol version above the wheel's manylinux_2_XX tag;
  - the tarball and the wheel hold a probe and a reader for each CPython minor 3.8-3.15.
Prints every breach, one line each, and exits 1 on any.
usage: dist_check.py [DIST]          (DIST: build/dist)
DIST_ARCH=aarch64: DIST holds the aarch64 release (make dist-aarch64: build/dist-aarch64).
       dist_check.py --self-test     breaks a copy of the release five ways; each must be caught"""
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = os.environ.get("DIST_ARCH") or "x86_64"
GLIBC_LIBS = {
    "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
    "ld-linux-x86-64.so.2" if ARCH == "x86_64" else "ld-linux-aarch64.so.1", "libresolv.so.2", "libutil.so.1",
}
MINORS = ["3.%d" % i for i in range(8, 16)]


def run(*cmd):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout


def is_elf(path):
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def check_tree(tree, tag, label, breaches):
    elves = sorted(os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if is_elf(os.path.join(d, f)))
    if not elves:
        breaches.append("%s: no ELF file at all" % label)
    probes = []
    for f in elves:
        rel = "%s:%s" % (label, os.path.relpath(f, tree))
        dyn = run("readelf", "-d", "-W", f)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dyn)
        paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library (?:rpath|runpath): \[(.*)\]", dyn)
        dirs = []
        for p in paths:
            for e in p.split(":"):
                if not e.startswith("$ORIGIN"):
                    breaches.append("%s has the run path '%s': only $ORIGIN-relative ones may be searched" % (rel, e))
                else:
                    dirs.append(os.path.normpath(e.replace("$ORIGIN", os.path.dirname(f))))
        for n in needed:
            if n.startswith("libpython"):
                breaches.append("%s NEEDs %s: the target's own interpreter must be used, never a second one" % (rel, n))
            elif n in GLIBC_LIBS:
                continue
            elif not any(os.path.isfile(os.path.join(d, n)) for d in dirs):
                breaches.append("%s NEEDs %s, which is neither glibc's nor carried where its run path looks (%s)"
                                % (rel, n, ":".join(paths) or "no run path"))
        vers = re.findall(r"GLIBC_(\d+)\.(\d+)", run("readelf", "-V", "-W", f))
        top = max(((int(a), int(b)) for a, b in vers), default=(0, 0))
        if top > tag:
            breaches.append("%s needs GLIBC_%d.%d, above the wheel's manylinux_%d_%d" % (rel, top[0], top[1], tag[0], tag[1]))
        if re.fullmatch(r"libprobing-3\.\d+\.so", os.path.basename(f)):
            probes.append(f)
    if probes:
        r = subprocess.run([os.path.join(TOP, "tools", "check_exports.sh")] + probes,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if r.returncode:
            breaches.append("%s: %s" % (label, r.stdout.strip()))
    names = {os.path.basename(f) for f in elves}
    for m in MINORS:
        for want in ("libprobing-%s.so" % m, "libprobing-read-%s.so" % m):
            if want not in names:
                breaches.append("%s holds no %s" % (label, want))
    for want in ("probing", "probing-serve", "probing-cli.so"):
        if want not in names:
            breaches.append("%s holds no %s" % (label, want))
    return len(elves)


def check(dist):
    breaches = []
    wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
    tars = [f for f in os.listdir(dist) if f.endswith("-linux-%s.tar.gz" % ARCH)]
    if len(wheels) != 1 or len(tars) != 1:
        return ["%s holds %d wheels and %d tarballs, not one of each: run 'make dist'" % (dist, len(wheels), len(tars))]
    m = re.search(r"-manylinux_(\d+)_(\d+)_%s\.whl$" % ARCH, wheels[0])
    if not m:
        return ["%s: no manylinux_X_Y_%s tag in its name" % (wheels[0], ARCH)]
    tag = (int(m.group(1)), int(m.group(2)))
    with tempfile.TemporaryDirectory(prefix="probing-dist-check-") as tmp:
        with tarfile.open(os.path.join(dist, tars[0])) as t:
            t.extractall(os.path.join(tmp, "tar"))
        with zipfile.ZipFile(os.path.join(dist, wheels[0])) as z:
            for zi in z.infolist():
                p = z.extract(zi, os.path.join(tmp, "whl"))
                os.chmod(p, (zi.external_attr >> 16) & 0o777 or 0o644)
        n = check_tree(os.path.join(tmp, "tar"), tag, tars[0], breaches)
        n += check_tree(os.path.join(tmp, "whl"), tag, wheels[0], breaches)
    print("dist-check: %d ELF files, wheel tag manylinux_%d_%d: %s" % (n, tag[0], tag[1], "ok" if not breaches else "%d breaches" % len(breaches)))
    return breaches


def self_test(dist):
    """Each way of breaking the release must be caught."""
    ok = True
    wheel = [f for f in os.listdir(dist) if f.endswith(".whl")][0]
    tar = [f for f in os.listdir(dist) if f.endswith(".tar.gz")][0]
    name = tar[: -len("-linux-%s.tar.gz" % ARCH)]
    breaks = [
        ("an uncarried library", ["patchelf", "--add-needed", "libuv.so.1", "bin/probing"], "NEEDs libuv.so.1"),
        ("an absolute run path", ["patchelf", "--set-rpath", "/usr/lib/x86_64-linux-gnu", "lib/probing/probing-cli.so"], "run path '/usr/lib"),
        ("libpython", ["patchelf", "--add-needed", "libpython3.11.so.1.0", "lib/probing/libprobing-3.11.so"], "NEEDs libpython3.11"),
        ("a missing probe", ["rm", "lib/probing/libprobing-3.15.so"], "no libprobing-3.15.so"),
        ("a glibc above the tag", None, "above the wheel's manylinux_2_17"),
    ]
    for what, cmd, expect in breaks:
        with tempfile.TemporaryDirectory(prefix="probing-dist-self-") as tmp:
            stage = os.path.join(tmp, "stage")
            with tarfile.open(os.path.join(dist, tar)) as t:
                t.extractall(stage)
            newwheel = wheel
            if cmd:
                subprocess.run(cmd[:-1] + [os.path.join(stage, name, cmd[-1])], check=True)
            else:
                newwheel = re.sub(r"manylinux_\d+_\d+", "manylinux_2_17", wheel)
            out = os.path.join(tmp, "dist")
            os.makedirs(out)
            with tarfile.open(os.path.join(out, tar), "w") as t:  # uncompressed: quicker; read alike
                t.add(os.path.join(stage, name), arcname=name)
            shutil.copyfile(os.path.join(dist, wheel), os.path.join(out, newwheel))
            b = check(out)
            caught = any(expect in x for x in b)
            print("dist-check --self-test: %s: %s" % (what, "caught" if caught else "MISSED"))
            if not caught:
                print("  breaches were: %s" % b)
                ok = False
    return ok


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        dist = args[1] if len(args) > 1 else os.path.join(TOP, "build", "dist")
        sys.exit(0 if self_test(dist) else 1)
    dist = args[0] if args else os.path.join(TOP, "build", "dist")
    if not os.path.isdir(dist):
        sys.stderr.write("probing: error: dist-check: no %s: run 'make dist' first\n" % dist)
        sys.exit(1)
    breaches = check(dist)
    for b in breaches:
        sys.stderr.write("probing: error: dist-check: %s\n" % b)
    sys.exit(1 if breaches else 0)


if __name__ == "__main__":
    main()
