# SPDX-License-Identifier: MIT
"""make bench, what bounds the debugger's breakpoint gate on CPython 3.8-3.11 (the row "a
breakpoint never hit" of bench_debug.py). On each of pyenv's 3.10, 3.11 and 3.12, in one
process running samples/callheavy.py's work:
1. the cost of a frame-evaluation function (PEP 523) that does nothing but call the default
   one: the least any PEP 523 gate costs (batches alternating with and without it, CPU time,
   median ratio);
2. whether a per-function hook can replace it: a function's vectorcall replaced (and its
   func_version cleared), then called 100,000 times from Python: how many calls reach the hook.
The extension (tests/bench/gate_bounds.c) is built here for each interpreter.
Usage: bench_gate.py BUILD_DIR."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import ROOT  # noqa: E402

INNER = r'''
import statistics, sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import callheavy, gate_bounds as g
units = callheavy.calibrate(0.1)
on, off = [], []
for i in range(int(sys.argv[3])):
    for hook, acc in ((False, off), (True, on)):
        if hook:
            g.eval_install()
        c0 = time.process_time()
        callheavy.batch(units)
        acc.append(time.process_time() - c0)
        if hook:
            g.eval_remove()
calls = 0
def target(x):
    global calls
    calls += 1
    return x + 1
def loop(n):
    s = 0
    for _ in range(n):
        s = target(s)
    return s
g.vc_hook(target)
loop(100000)
print("%s  %.3f  (%.0f ms batches)   %d of %d" % (sys.version.split()[0],
      statistics.median(on) / statistics.median(off), 1000 * statistics.median(off),
      g.vc_count(), calls))
'''


def main():
    try:  # pyenv's own command may be absent where its versions are not
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    except FileNotFoundError:
        root = ""
    root = root or os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    rounds = int(os.environ.get("BENCH_RUNS", "6")) * 5
    print("what bounds the breakpoint gate: %d alternating batches each (CPU time, median)" %
          rounds)
    print("  python   pass-through PEP 523 / none   calls reaching a replaced vectorcall")
    with tempfile.TemporaryDirectory(prefix="bench_gate-") as d:
        for minor in ("3.10", "3.11", "3.12"):
            vers = sorted(v for v in os.listdir(os.path.join(root, "versions"))
                          if v.startswith(minor + ".") and v[len(minor) + 1:].isdigit())
            if not vers:
                print("  %s      not installed" % minor)
                continue
            home = os.path.join(root, "versions", vers[-1])
            exe = os.path.join(home, "bin", "python" + minor)
            inc = os.path.join(home, "include", "python" + minor)
            suffix = subprocess.run([exe, "-c", "import sysconfig; print(sysconfig.get_config_var("
                                     "'EXT_SUFFIX'))"], capture_output=True, text=True,
                                    check=True).stdout.strip()
            out = os.path.join(d, minor)
            os.makedirs(out)
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", inc, "-I",
                            os.path.join(inc, "internal"), "-o",
                            os.path.join(out, "gate_bounds" + suffix),
                            os.path.join(ROOT, "tests", "bench", "gate_bounds.c")], check=True)
            r = subprocess.run(["taskset", "-c", "0", exe, "-c", INNER, out,
                                os.path.join(ROOT, "samples"), str(rounds)],
                               capture_output=True, text=True, check=True)
            print("  " + r.stdout.strip())
    print("  3.11 inlines Python-to-Python calls unless a frame-evaluation function is set, and its"
          " inlined calls never look at a function's vectorcall: on 3.11 the gate cannot cost "
          "less than line 1's figure.")


if __name__ == "__main__":
    main()
