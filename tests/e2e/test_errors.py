# SPDX-License-Identifier: MIT
"""Bad input: each case gives one clear line on stderr ("probing: error: ..."), a non-zero exit,
and leaves the target alive and responsive with nothing of ours in its output."""
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import CLI, HOST_PYTHONS, ROOT, SAMPLES, Target, dump_json, probing

PY = HOST_PYTHONS[-2].values[0]  # a pyenv CPython we have a build for


def one_error_line(r, *needles):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probing: error: "), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def free_pid():
    pid = 4_000_000
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


def test_no_such_pid():
    pid = free_pid()
    one_error_line(probing("-p", pid, "debug", "--dump"), "no process %d" % pid)


def test_usage_errors_exit_2():
    for args in (["debug", "--dump"], ["-p", "abc", "inject"], ["frobnicate"], [],
                 ["-p", "1", "debug"], ["-p", "1", "inject", "--bogus"]):
        r = probing(*args)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert "probing: error:" in r.stderr or "usage:" in r.stderr, (args, r.stderr)


def test_query_format_errors_wherever_the_option_stands():
    """query reads --format before or after the SQL, as -f, --format X or --format=X: a bad
    value says so the same way in each place, before anything reaches a target."""
    pid = str(free_pid())
    bad = "query: --format 'xml': expected table, json or csv"
    for args in (["-f", "xml", "SELECT 1"], ["--format=xml", "SELECT 1"],
                 ["SELECT 1", "--format", "xml"], ["SELECT 1", "-f", "xml"],
                 ["SELECT 1", "--format=xml"], ["SELECT 1", "--format", "json", "-f", "xml"]):
        r = probing("-p", pid, "query", *args)
        assert r.returncode == 2 and r.stderr == "probing: error: %s\n" % bad, (args, r.stderr)
    for opt in ("--format", "-f"):
        r = probing("-p", pid, "query", "SELECT 1", opt)
        assert r.returncode == 2 and r.stderr == (
            "probing: error: query: %s needs a value: table, json or csv\n" % opt), r.stderr
    r = probing("-p", pid, "query", "SELECT 1", "SELECT 2")
    assert r.returncode == 2 and "unexpected argument 'SELECT 2'" in r.stderr, r.stderr
    r = probing("-p", pid, "tables", "a", "b")
    assert r.returncode == 2 and r.stderr == (
        "probing: error: tables: unexpected argument 'b'\n"), r.stderr
    r = probing("-p", pid, "tables", "--bogus")
    assert r.returncode == 2 and "tables: unknown option '--bogus'" in r.stderr, r.stderr


def test_non_python_process(tmp_path):
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        one_error_line(probing("-p", p.pid, "inject"), "not a Python process")
        assert p.poll() is None
        with open("/proc/%d/maps" % p.pid) as f:
            assert "libprobing" not in f.read()
    finally:
        p.kill()
        p.wait()


def test_no_probe_build_for_version(spawn, tmp_path):
    """A CPython the libdir has no probe for: one line naming the version, the directory and how
    to build it; nothing loaded. (Versions outside 3.8-3.15 take the same path with another
    message; this machine may have no such interpreter: pyenv's 3.6 and 3.7 are not always
    there.)"""
    t = spawn(PY)
    empty = tmp_path / "libdir"
    empty.mkdir()
    r = probing("-p", t.pid, "inject", env={"PROBING_LIBDIR": str(empty)})
    line = one_error_line(r, "no probe build for CPython 3.")
    assert str(empty) in line and "make PYTHONS=" in line, line
    assert t.maps_count() == 0
    t.assert_responsive()
    t.check_output_clean()


def test_process_already_traced(spawn):
    t = spawn(PY)
    st = subprocess.Popen(["strace", "-qq", "-e", "trace=none", "-p", str(t.pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            with open("/proc/%d/status" % t.pid) as f:
                if "TracerPid:\t0\n" not in f.read():
                    break
            time.sleep(0.02)
        line = one_error_line(probing("-p", t.pid, "inject"), "already traced", str(st.pid))
        assert "strace" in line
    finally:
        st.send_signal(signal.SIGINT)
        st.wait(timeout=10)
    t.assert_responsive()
    # Once the tracer is gone, injection works.
    probing("-p", t.pid, "inject", check=True)
    t.check_output_clean()


def test_stopped_process(spawn):
    t = spawn(PY)
    os.kill(t.pid, signal.SIGSTOP)
    time.sleep(0.1)
    one_error_line(probing("-p", t.pid, "inject"), "is stopped", "kill -CONT %d" % t.pid)
    with open("/proc/%d/stat" % t.pid) as f:
        assert f.read().split(")")[1].split()[0] == "T", "left stopped as it was"
    os.kill(t.pid, signal.SIGCONT)
    t.assert_responsive()
    assert t.maps_count() == 0
    t.check_output_clean()


def test_process_of_another_user(spawn):
    t = spawn(PY)
    r = probing("-p", t.pid, "inject", user="nobody")
    one_error_line(r, str(t.pid))
    assert "another user" in r.stderr or "denied" in r.stderr, r.stderr
    assert t.maps_count() == 0
    # With the probe loaded (by root), nobody still cannot reach its socket.
    probing("-p", t.pid, "inject", check=True)
    r = probing("-p", t.pid, "debug", "--dump", user="nobody")
    one_error_line(r, str(t.pid))
    assert "another user" in r.stderr or "denied" in r.stderr, r.stderr
    t.assert_responsive()
    t.check_output_clean()


def test_process_exits_during_injection(spawn, tmp_path):
    shim = tmp_path / "ptrace_fault.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim),
                    os.path.join(ROOT, "tests", "shim", "ptrace_fault.c"), "-ldl"], check=True)
    t = spawn(PY)
    r = probing("-p", t.pid, "inject", env={
        "LD_PRELOAD": str(shim), "PTRACE_FAULT_KILL_AT_SETREGS": "1",
        # under make asan the CLI is sanitized: the shim may come before the ASan runtime
        "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"})
    one_error_line(r, "exited during injection")
    t.proc.wait(timeout=10)
    assert t.proc.returncode == -signal.SIGKILL


def test_free_threaded_build_refused(spawn, tmp_path):
    """A free-threaded CPython (3.13t/3.14t: no Debian package, so tests/shim/fake_ft_python.c
    carries the two symbols probing reads) gets one clear line and is never touched."""
    exe = tmp_path / "python3.14t"
    subprocess.run(["cc", "-O2", "-rdynamic", "-o", str(exe),
                    os.path.join(ROOT, "tests", "shim", "fake_ft_python.c")], check=True)
    t = spawn(str(exe))
    for cmd in (("inject",), ("debug", "--dump")):
        line = one_error_line(probing("-p", t.pid, *cmd), "free-threaded CPython 3.14",
                              "not supported yet", str(exe))
        assert "no probe build" not in line
    assert t.maps_count() == 0
    assert t.proc.poll() is None
    with open("/proc/%d/status" % t.pid) as f:
        assert "TracerPid:\t0" in f.read()


def test_supported_version_without_build(spawn, tmp_path):
    t = spawn(PY)
    empty = tmp_path / "nolibs"
    empty.mkdir()
    minor = "3.%s" % HOST_PYTHONS[-2].id.split(".")[1]
    line = one_error_line(probing("-p", t.pid, "inject", env={"PROBING_LIBDIR": str(empty)}),
                          "no probe build for CPython %s" % minor, "make PYTHONS=%s" % minor)
    assert str(empty) in line
    assert t.maps_count() == 0
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("scope", [None, "1", "2", "3"])
def test_yama_ptrace_scope_denied(spawn, tmp_path, scope):
    """Attaching refused (EPERM from PTRACE_SEIZE, through tests/shim/ptrace_fault.c), and for
    --no-inject reading refused (EPERM from process_vm_readv), where the kernel has Yama: one line naming kernel.yama.ptrace_scope, its value and what to do. This
    kernel has no Yama: the CLI runs in a private mount namespace with a tmpfs over
    /proc/sys/kernel holding yama/ptrace_scope (None: no Yama, the plain advice)."""
    shim = tmp_path / "ptrace_fault.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim),
                    os.path.join(ROOT, "tests", "shim", "ptrace_fault.c"), "-ldl"], check=True)
    t = spawn(PY)
    fake = "" if scope is None else (
        "mount -t tmpfs probing-test /proc/sys/kernel && mkdir /proc/sys/kernel/yama && "
        "echo %s > /proc/sys/kernel/yama/ptrace_scope && " % scope)
    env = dict(os.environ, LD_PRELOAD=str(shim), PTRACE_FAULT_SEIZE_ERRNO="1",
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
    # --no-inject reads with process_vm_readv, which Yama refuses as it refuses attaching
    for cmd in (("inject",), ("debug", "--dump"), ("debug", "--dump", "--no-inject")):
        noinject = "--no-inject" in cmd
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            fake + 'exec "$@"', "-", CLI, "-p", str(t.pid), *cmd],
                           capture_output=True, text=True, timeout=60,
                           env=dict(env, PTRACE_FAULT_VM_READ_ERRNO="1") if noinject else env)
        want = ("reading the memory of %d denied" if noinject else "ptrace attach to %d denied") % t.pid
        if scope is None:
            line = one_error_line(r, want, "run as the same user or root")
            assert "ptrace_scope" not in line
        else:
            line = one_error_line(r, want, "by Yama", "kernel.yama.ptrace_scope=%s" % scope,
                                  "PROBING=1")
            if scope == "1":
                assert "only a parent" in line and "sudo sysctl kernel.yama.ptrace_scope=0" in line
            elif scope == "2":
                assert "only root" in line and "as root" in line
            else:
                assert "even as root" in line and "until reboot" in line
    assert t.maps_count() == 0
    t.assert_responsive()
