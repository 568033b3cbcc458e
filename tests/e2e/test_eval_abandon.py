# SPDX-License-Identifier: MIT
"""A client that vanishes while its code runs in the target: the probe interrupts that code,
so the worker is free again and the target is not left running someone's runaway loop."""
import signal
import subprocess
import time

import pytest

from conftest import CLI, PYTHONS, probing


@pytest.mark.parametrize("python", PYTHONS)
def test_killed_client_interrupts_its_eval(python, spawn):
    t = spawn(python)
    probing("-p", t.pid, "inject", check=True)
    cli = subprocess.Popen([CLI, "-p", str(t.pid), "eval", "while True: pass"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    assert cli.poll() is None, "the runaway evaluation is running"
    cli.send_signal(signal.SIGKILL)
    cli.wait(timeout=10)
    # The next evaluation gets the worker (eval.timeout_ms is 500 ms by default).
    deadline = time.time() + 10
    while True:
        r = probing("-p", t.pid, "eval", "6 * 7")
        if r.returncode == 0 or time.time() > deadline:
            break
        time.sleep(0.2)
    assert r.returncode == 0 and r.stdout.strip() == "42", r.stderr
    t.assert_responsive()
    t.check_output_clean()
