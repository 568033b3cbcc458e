# SPDX-License-Identifier: MIT
"""Targets in container-like roots (tests/e2e/container.py): the Debian sid root's interpreters
under a plain chroot, a pivot_root'ed mount namespace, and that plus a PID namespace."""
import os
import re

import pytest

from conftest import probing
from container import MODES, make_spawner


@pytest.fixture
def cspawn(tmp_path, request):
    spawn, cleanup = make_spawner(tmp_path)
    yield spawn
    cleanup(failed=request.node.rep_call.failed if hasattr(request.node, "rep_call") else True)


@pytest.mark.parametrize("mode", MODES)
def test_launcher_builds_the_root(cspawn, mode):
    """The launcher itself: the target runs sid's python3.13 inside the root (a newer glibc than
    the host's), with a /tmp of its own; with pidns it is pid 1 inside and NSpid maps its host
    pid; the root is never written (the overlay's writes go to a private tmpfs)."""
    t = cspawn(mode, "/usr/bin/python3.13")
    root = "/proc/%d/root" % t.pid
    with open(root + "/etc/debian_version") as f:
        assert "sid" in f.read()
    assert os.listdir(root + "/tmp") == []
    with open("/proc/%d/status" % t.pid) as f:
        nspid = re.search(r"^NSpid:\s+(.*)$", f.read(), re.M).group(1).split()
    if mode == "pidns":
        assert t.ready["pid"] == 1 and nspid == [str(t.pid), "1"]
    else:
        assert t.ready["pid"] == t.pid and nspid == [str(t.pid)]
    with open("/proc/%d/maps" % t.pid) as f:
        assert re.search(r"libc\.so\.6$", f.read(), re.M)
    t.assert_responsive()


@pytest.mark.parametrize("mode", MODES)
def test_probe_loads_in_a_root_without_our_libraries(cspawn, mode):
    """A root with neither libuv (sid's, which torch brings, hidden) nor cJSON (nor the probe):
    the probe built on Debian 12 loads into sid's python3.13 (3.13.x, a newer glibc) and
    answers; it needs nothing but libc, libm and what it carries (issue 17: 'libcjson.so.1:
    cannot open shared object file')."""
    libdir = "/usr/lib/x86_64-linux-gnu/"
    t = cspawn(mode, "/usr/bin/python3.13", hide=[libdir + "libuv.so.1", libdir + "libuv.so.1.0.0"])
    root = "/proc/%d/root" % t.pid
    for lib in ("libuv.so.1", "libcjson.so.1"):
        assert not os.path.exists(root + libdir + lib), lib
    r = probing("-p", t.pid, "eval", "6*7")
    assert r.returncode == 0 and r.stdout.strip() == "42", (r.stdout, r.stderr)
    t.assert_responsive()
    t.check_output_clean()


def test_probe_beside_the_targets_own_libuv(cspawn):
    """A target that runs a libuv of its own (sid's, a newer one than the probe's) keeps running
    it with the probe loaded: the probe's libuv is linked in, its symbols hidden, and no libuv
    file of ours is mapped."""
    t = cspawn("pivot", "/usr/bin/python3.13", sample="uv_user.py")
    version = t.ready["uv_version"]
    r = probing("-p", t.pid, "eval", "uv.uv_version()")
    assert r.returncode == 0 and r.stdout.strip() == str(version), (r.stdout, r.stderr)
    with open("/proc/%d/maps" % t.pid) as f:
        uvs = {l.split()[-1] for l in f if "libuv" in l}
    assert uvs == {"/usr/lib/x86_64-linux-gnu/libuv.so.1.0.0"}, uvs
    t.assert_responsive()
    assert re.findall(r"value=(\d+)", t.output())[-1] == str(version)
    t.check_output_clean()


@pytest.mark.parametrize("mode", MODES)
def test_cli_of_the_targets_user_finds_its_files(cspawn, mode):
    """Run by the target's own user (nobody), the CLI cannot open /proc/N/map_files (that needs
    CAP_SYS_ADMIN) and reads the target's libc by its path from /proc/N/maps: under a plain
    chroot that path is already ours, after pivot_root it is the target's (through
    /proc/N/root); the form whose inode is the mapping's is used (issue 17: 'cannot read
    /proc/N/root/<root>/usr/lib/x86_64-linux-gnu/libc.so.6')."""
    t = cspawn(mode, "/usr/bin/python3.13", uid=65534)
    r = probing("-p", t.pid, "eval", "6*7", user="nobody")
    assert r.returncode == 0 and r.stdout.strip() == "42", (r.stdout, r.stderr)
    t.assert_responsive()
    t.check_output_clean()
