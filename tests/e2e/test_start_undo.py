# SPDX-License-Identifier: MIT
"""A start of the probe that fails part way undoes what it had done (probe/entry.c): with each
step made to fail in turn (PROBING_TEST_FAIL_START: the loop, the server, the GIL worker, the
task thread, the debugger's event queue, the agent thread), the target loaded with ctypes is
left with no thread, descriptor or socket of the probe's, and a later probing_start() starts
it whole: a socket that answers `debug --dump`. Before, a failed step left the loop and the
steps before it live (threads and an epoll descriptor), and the next start initialised the
loop again over them."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, HOST_PYTHONS, ROOT, probing, sanitizer_env

STEPS = ["loop", "server", "worker", "task", "events", "thread"]


def minor(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("python", [p for p in HOST_PYTHONS if p.id in ("3.11", "debian")] or
                         HOST_PYTHONS[:1])
@pytest.mark.parametrize("step", STEPS)
def test_failed_start_undone(python, step):
    lib = os.path.join(BUILD, "lib", "probing", "libprobing-%s.so" % minor(python))
    env = dict(os.environ, PROBING_TEST_FAIL_START=step, **sanitizer_env())
    p = subprocess.Popen([python, os.path.join(ROOT, "samples", "start_undo.py"), lib],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        states = []
        while len(states) < 3:
            line = p.stdout.readline()
            assert line, p.stderr.read()
            if line.startswith("state "):
                states.append(json.loads(line[6:]))
        before, failed, again = states
        # The failed start left nothing of the probe's: no thread, no socket, no epoll or
        # eventfd descriptor (the loop's), no Unix socket.
        assert failed["threads"] == before["threads"], (step, failed)
        assert failed["socket"] == "", failed
        kinds = " ".join(failed["fds"].values())
        for k in ("anon_inode:[eventpoll]", "anon_inode:[eventfd]", "socket:["):
            assert k not in kinds, (step, failed["fds"])
        # probing_start() then starts it whole.
        assert again["rc"] == 0, again
        assert again["socket"] and os.path.exists(again["socket"]), again
        assert again["threads"] > before["threads"]
        r = probing("-p", p.pid, "debug", "--dump", check=True)
        assert "MainThread" in r.stdout or "Thread" in r.stdout, r.stdout
    finally:
        p.kill()
        p.wait()
