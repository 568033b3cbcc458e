# SPDX-License-Identifier: MIT
"""Targets in container-like roots (tests/e2e/container.py): the Debian sid root's interpreters
under a plain chroot, a pivot_root'ed mount namespace, and that plus a PID namespace."""
import json
import os
import re

import pytest

from conftest import BUILD, PYTHONS, dump_json, probing, sock_name
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


def _interpreters():
    """(id, python inside, binds): sid's own 3.13, and the host's pyenv 3.8 and 3.13 and Debian 12's
    python3 bound into the root at their paths; sid's 3.14/3.15 once this build has their probe."""
    out = [pytest.param("/usr/bin/python3.13", (), id="sid-3.13")]
    for v in ("3.14", "3.15"):
        if os.path.exists(os.path.join(BUILD, "lib", "probing", "libprobing-%s.so" % v)):
            out.append(pytest.param("/usr/bin/python" + v, (), id="sid-" + v))
    for p in PYTHONS:  # pyenv's oldest and newest (tools/pythons.sh)
        exe, minor = p.values[0], p.id
        pyenv = os.path.dirname(os.path.dirname(exe))
        if "/.pyenv/" in exe and minor in ("3.8", "3.13"):
            out.append(pytest.param(exe, [(pyenv, None, True)], id="pyenv-" + minor))
    out.append(pytest.param("/usr/bin/python3.11", [("/usr/bin/python3.11", None, True),
                                                    ("/usr/lib/python3.11", None, True)],
                            id="debian"))
    return out


def _ours_in_tmp(tmp):
    """Every path under a /tmp, relative to it."""
    found = []
    for d, dirs, files in os.walk(tmp):
        found += [os.path.relpath(os.path.join(d, n), tmp) for n in dirs + files]
    return sorted(found)


@pytest.mark.parametrize("python,binds", _interpreters())
@pytest.mark.parametrize("mode", MODES)
def test_core_commands_in_a_container(cspawn, mode, python, binds):
    """The core commands on a target in each kind of container, given its host pid: inject,
    debug --dump, eval, query, perf --cc; with the probe loaded, the root's /tmp holds only the
    probe's socket directory and socket (the copies made to load it are gone); a normal exit
    leaves an empty socket directory at most."""
    t = cspawn(mode, python, binds=binds)
    inner = 1 if mode == "pidns" else t.pid
    r = probing("-p", t.pid, "inject", check=True)
    assert "socket /tmp/probing-0/%s" % sock_name(t.pid) in r.stdout, r.stdout
    d = dump_json(t.pid)
    assert d["pid"] == inner
    main = [th for th in d["threads"] if th["main"]]
    assert main and "tick_forever" in [f["name"] for f in main[0]["frames"]], main
    r = probing("-p", t.pid, "eval", "6*7")
    assert r.returncode == 0 and r.stdout.strip() == "42", (r.stdout, r.stderr)
    r = probing("-p", t.pid, "query", "SELECT COUNT(*) AS n FROM python.threads", "-f", "json",
                check=True)
    assert json.loads(r.stdout)[0]["n"] >= 3, r.stdout
    r = probing("-p", t.pid, "perf", "--cc", "--mode", "wall", "--duration", "1", check=True)
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    r = probing("-p", t.pid, "query", "SELECT COUNT(*) AS n FROM perf.samples", "-f", "json",
                check=True)
    assert json.loads(r.stdout)[0]["n"] > 0, r.stdout
    tmp = "/proc/%d/root/tmp" % t.pid
    assert _ours_in_tmp(tmp) == ["probing-0", "probing-0/" + sock_name(t.pid)], _ours_in_tmp(tmp)
    t.assert_responsive()
    t.check_output_clean()
    # A normal exit (SystemExit in the main thread): the probe removes its socket.
    merged_tmp = os.path.join(t.cont.scratch, "merged", "tmp")
    probing("-p", t.pid, "eval", "import ctypes, threading; ctypes.pythonapi.PyThreadState_SetAsyncExc("
            "ctypes.c_ulong(threading.main_thread().ident), ctypes.py_object(SystemExit))",
            check=True)
    assert t.proc.wait(timeout=20) == 0, t.errors()
    if mode == "chroot":  # its /tmp outlives it (the namespaces' go with them)
        assert _ours_in_tmp(merged_tmp) in ([], ["probing-0"]), _ours_in_tmp(merged_tmp)


@pytest.mark.parametrize("python,how", [
    ("/usr/bin/python3.14", "env"), ("/usr/bin/python3.14", "-X"), ("/usr/bin/python3.14", None),
    ("/usr/bin/python3.15", "env"), ("/usr/bin/python3.15", None), ("/usr/bin/python3.13", "env")],
    ids=["3.14-env", "3.14-X", "3.14-allowed", "3.15-env", "3.15-allowed", "3.13-env"])
def test_remote_debug_opt_outs_are_respected(cspawn, python, how):
    """CPython 3.14's PEP 768 opt-outs (PYTHON_DISABLE_REMOTE_DEBUG, -X disable-remote-debug),
    read from the target's interpreter config through _Py_DebugOffsets (3.14's and 3.15's
    layouts): the CLI refuses to inject with one line and leaves the target untouched; a target
    that allows it is not refused, nor is a 3.13 one with the variable set (3.13 has no such
    option)."""
    env = {"PYTHON_DISABLE_REMOTE_DEBUG": "1"} if how == "env" else None
    t = cspawn("pivot", python, env=env, pyargs=("-X", "disable-remote-debug") if how == "-X" else ())
    r = probing("-p", t.pid, "inject")
    v = python[-4:]
    refused = "probing: error: process %d (CPython %s) disabled remote debugging" % (t.pid, v)
    if how and v != "3.13":
        assert r.returncode != 0 and r.stdout == "", (r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(refused), r.stderr
        assert t.maps_count() == 0
    else:
        assert "disabled remote debugging" not in r.stderr, r.stderr
        if os.path.exists(os.path.join(BUILD, "lib", "probing", "libprobing-%s.so" % v)):
            assert r.returncode == 0, r.stderr
            assert t.maps_count() == 1
        else:  # this build has no probe for it: the next check speaks
            assert "no probe build for CPython %s" % v in r.stderr, r.stderr
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("mode", ["pivot", "pidns"])
def test_inject_with_a_noexec_tmp(cspawn, mode):
    """A hardened container mounts /tmp noexec, where the probe's copy cannot be mapped (dlopen:
    'failed to map segment from shared object'): the copy goes to /var/tmp instead, and is gone
    from there once loaded."""
    t = cspawn(mode, "/usr/bin/python3.13", tmp_noexec=True)
    root = "/proc/%d/root" % t.pid
    before = _ours_in_tmp(root + "/var/tmp")
    r = probing("-p", t.pid, "eval", "6*7")
    assert r.returncode == 0 and r.stdout.strip() == "42", (r.stdout, r.stderr)
    assert _ours_in_tmp(root + "/var/tmp") == before
    inner = 1 if mode == "pidns" else t.pid
    assert _ours_in_tmp(root + "/tmp") == ["probing-0", "probing-0/" + sock_name(t.pid)]
    t.assert_responsive()
    t.check_output_clean()
