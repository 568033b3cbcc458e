# SPDX-License-Identifier: MIT
"""Injection leaves the target as it was and copes with clients racing to inject.

- Six first-time commands at once on a fresh target: one injects (holding a lock on that pid
  in the CLI's private directory), the others wait for it and use the probe it loaded.
- The hijacked thread's errno: samples/errno_loop.py's main thread (the one the injector takes
  over) sets errno in a C loop and checks it continuously; an injection must not change it.
"""
import os
import re

import pytest

from conftest import OLDEST_HOST, PYTHONS, probing
from kernelcheck import procmap_query


@pytest.mark.parametrize("python", PYTHONS)
def test_injection_keeps_the_hijacked_threads_errno(python, spawn):
    t = spawn(python, "errno_loop.py", args=("4",))
    r = probing("-p", t.pid, "inject", check=True)
    assert t.maps_count() == 1, r.stdout
    m = t.wait_line(r"^ok errno changes (\d+) first (-?\d+)$", timeout=30)
    assert t.proc.wait(timeout=10) == 0
    assert (int(m.group(1)), int(m.group(2))) == (0, 0), (
        "the injection changed the hijacked thread's errno %s time(s), first to %s"
        % (m.group(1), m.group(2)))
    t.check_output_clean()


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in (OLDEST_HOST, "3.12", "debian")])
def test_first_commands_at_once_all_succeed(python, spawn):
    """Six first-time commands at once on each of four fresh targets (VS Code and a script at
    the same time): one injects, the others wait for it and use the probe it loaded."""
    import subprocess
    from conftest import CLI
    failures = []
    for round_ in range(4):
        t = spawn(python, "threads.py")
        procs = [subprocess.Popen([CLI, "-p", str(t.pid), "debug", "--dump", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(6)]
        for p in procs:
            out, err = p.communicate(timeout=90)
            if p.returncode != 0 or '"threads"' not in out:
                failures.append("round %d: exit %d: %s" % (round_, p.returncode, err.strip()))
        assert t.maps_count() == 1
        lock = "/tmp/probing-%d/%d.inject.lock" % (os.geteuid(), t.pid)
        assert not os.path.exists(lock), "lock file left behind"
        t.assert_responsive()
        t.check_output_clean()
        t.kill()
    assert not failures, "%d of 24 commands failed: %s" % (len(failures), failures[:3])


@pytest.mark.parametrize("way", ["query", "text"])
@pytest.mark.parametrize("python", PYTHONS)
def test_inject_reads_the_maps_either_way(python, way, spawn, tmp_path):
    """The injector finds libc, the loader, libpython and a loaded probe among the mappings of
    files with code that the kernel lists through PROCMAP_QUERY where Linux has it (6.11+), and
    in /proc/PID/maps' text otherwise (PROBING_NO_PROCMAP_QUERY=1 takes that way, as an older
    kernel does): either way the probe loads, answers, and a second command finds it loaded.
    strace of the CLI says which way it went."""
    import subprocess
    from conftest import CLI
    query = way == "query"
    if query and not procmap_query():
        pytest.skip("this kernel has no PROCMAP_QUERY (Linux 6.11+): only the text's way")
    t = spawn(python, "threads.py")
    env = dict(os.environ)
    if not query:
        env["PROBING_NO_PROCMAP_QUERY"] = "1"
    log = tmp_path / "strace.log"
    # make asan: LeakSanitizer cannot stop the CLI's threads while strace traces it
    traced = dict(env, ASAN_OPTIONS=env.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=ioctl", "-o", str(log), CLI, "-p",
                        str(t.pid), "inject"], capture_output=True, text=True, env=traced,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("probe loaded in %d " % t.pid), r.stderr
    asked = len(re.findall(r"ioctl\(\d+, _IOC\(_IOC_READ\|_IOC_WRITE, 0x66, 0x11, 0x68\)|"
                           r"PROCMAP_QUERY", log.read_text()))
    assert (asked > 0) == query, log.read_text()
    assert t.maps_count() == 1
    r = subprocess.run([CLI, "-p", str(t.pid), "inject"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0 and "already loaded" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([CLI, "-p", str(t.pid), "debug", "--dump"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0 and '"MainThread"' in r.stdout, r.stdout + r.stderr
    assert t.maps_count() == 1
    t.assert_responsive()
    t.check_output_clean()
