# SPDX-License-Identifier: MIT
"""setBreakpoints and setFunctionBreakpoints when the probe's memory runs out: each of the
probe's allocations while the request is served fails in turn (an LD_PRELOAD shim in the
target, tests/shim/alloc_fault.c); the answer has one Breakpoint per requested one, or is an
error, and the target keeps running."""
import os
import subprocess

import pytest

from conftest import PYTHONS, ROOT
from dbgutil import Debugger


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    so = tmp_path_factory.mktemp("shim") / "alloc_fault.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(so),
                    os.path.join(ROOT, "tests", "shim", "alloc_fault.c"), "-ldl"], check=True)
    return so


def _env(so, arm):
    return {"LD_PRELOAD": str(so), "ALLOC_FAULT_FILE": str(arm)}


# make asan: ASan's runtime is the target's allocator, and must come before the shim, whose
# calloc is then never the one called (0 faults); after it, the shim's first callocs (before
# dlsym answers) are freed by ASan ("not malloc()-ed"). make test runs these.
pytestmark = pytest.mark.skipif(bool(os.environ.get("PROBING_TARGET_PRELOAD")),
                                reason="make asan: the fault shim cannot stand in front of "
                                       "ASan's allocator (make test runs this file)")


REQUESTS = [
    # Breakpoints the program never reaches: it keeps running meanwhile.
    ("setFunctionBreakpoints", lambda d: {"breakpoints": [{"name": "never_called"},
                                                          {"name": "nosuch"}, {}]}),
    ("setBreakpoints", lambda d: {"source": {"path": d.path}, "breakpoints": [
        {"line": d.line("never_called")}, {"line": 1}, {"line": d.line("never_called"),
                                                        "condition": "x ==="}]}),
]


@pytest.mark.parametrize("python", PYTHONS)
@pytest.mark.parametrize("command,args", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_breakpoints_answer_whole_when_memory_runs_out(python, spawn, shim, tmp_path, command,
                                                       args):
    arm = tmp_path / "arm"
    t = spawn(python, "debuggee.py", env=_env(shim, arm))
    d = Debugger(t)
    faults = 0
    for nth in range(1, 40):
        arm.write_text(str(nth))
        r = d.req(command, args(d), ok=False)
        fired = not arm.exists()
        arm.unlink(missing_ok=True)
        if r["success"]:
            assert len(r["body"]["breakpoints"]) == 3, (nth, r)
        else:
            assert "out of memory" in r["message"], (nth, r)
        if not fired:
            break  # the request made fewer than nth allocations: every one was tried
        faults += 1
    assert faults >= 3, faults
    # Nothing armed: all set as asked, and the target is fine.
    r = d.req(command, args(d))
    assert len(r["body"]["breakpoints"]) == 3, r
    d.req("disconnect")
    t.assert_responsive()
    t.check_output_clean()
