# SPDX-License-Identifier: MIT
"""make bench, memory part: the resident memory (VmRSS) the probe adds to its target, in four
situations: loaded and idle with a client attached; after 1,000 queries; with the sampler
running for a minute (perf --cc, 100 Hz); with perf --torch for 1,000 training steps. Each
figure is a difference between two processes started together from the same sample and doing
the same work, one with the probe and one without (the control), read at the same moment:
the interpreter's own growth cancels out. Goal: at most 10 MB each. The history tables that
could grow are bounded by settings, printed with the figures.
Usage: bench_memory.py BUILD_DIR [PYTHON]; BENCH_MEM_SAMPLER_S (default 60) and
BENCH_MEM_TORCH_STEPS (default 1000) scale the two long ones."""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import CLI, ROOT, python, sock_path  # noqa: E402
from dapclient import DAP  # noqa: E402

GOAL_MB = 10.0
SAMPLER_S = float(os.environ.get("BENCH_MEM_SAMPLER_S", "60"))
TORCH_STEPS = int(os.environ.get("BENCH_MEM_TORCH_STEPS", "1000"))
QUERIES = [
    "SELECT * FROM python.threads",
    "SELECT name, value FROM probing.settings",
    "SELECT func, file, lineno FROM python.backtrace",
    "SELECT type, count, size FROM python.objects ORDER BY size DESC LIMIT 20",
    "SELECT name, file FROM python.modules",
]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


class Pair:
    """The same sample started twice: .probed gets the probe, .control never does."""

    def __init__(self, exe, argv, ready=r"^ready "):
        self.procs = []
        for _ in range(2):
            p = subprocess.Popen([exe, *argv], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 stdin=subprocess.DEVNULL, text=True, start_new_session=True)
            self.procs.append(p)
        for p in self.procs:
            line = p.stdout.readline()
            if not re.match(ready, line):
                raise SystemExit("bench: %s did not start: %r" % (argv[0], line))
            # Its later output (ticks, steps) is read and dropped: a full pipe would stop it.
            threading.Thread(target=p.stdout.read, daemon=True).start()
        self.probed, self.control = self.procs

    def delta_mb(self):
        """RSS of the probed one minus the control's, in MB (both read now)."""
        a, b = rss_kb(self.probed.pid), rss_kb(self.control.pid)
        return (a - b) / 1024.0, a / 1024.0, b / 1024.0

    def cli(self, *args):
        return subprocess.run([CLI, "-p", str(self.probed.pid), *args], check=True,
                              capture_output=True, text=True).stdout

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()


def client(pid):
    d = DAP.unix(sock_path(pid))
    assert d.request("initialize", {"adapterID": "bench"})["success"]
    assert d.request("attach", {"probingClient": "cli"})["success"]
    return d


def settle(pair, seconds=3.0):
    """Waits, then the median of five readings a little apart (RSS moves with the allocator)."""
    time.sleep(seconds)
    reads = []
    for _ in range(5):
        reads.append(pair.delta_mb())
        time.sleep(0.2)
    reads.sort()
    return reads[2]


def report(name, got, note):
    d, a, b = got
    print("  %-38s %+7.1f MB  (probed %.1f MB, control %.1f MB)  goal <= %.0f MB: %s%s" % (
        name, d, a, b, GOAL_MB, "met" if d <= GOAL_MB else "NOT met", note))


def main():
    exe = python()
    print("probing memory bench: the target's VmRSS with the probe minus a control's without, "
          "%s" % exe)
    sample = os.path.join(ROOT, "samples", "threads.py")
    pair = Pair(exe, [sample])
    try:
        time.sleep(1.0)
        before = settle(pair, 0.5)
        pair.cli("inject")
        d = client(pair.probed.pid)
        report("loaded and idle, a client attached", settle(pair),
               "  (before loading: %+.1f MB)" % before[0])
        t0 = time.time()
        for i in range(1000):
            r = d.request("probing/query", {"sql": QUERIES[i % len(QUERIES)]})
            assert r["success"], r
        took = time.time() - t0
        report("after 1,000 queries", settle(pair),
               "  (%d kinds, %.1f s)" % (len(QUERIES), took))
        d.request("disconnect")
        settings = {x["name"]: x["value"] for x in json.loads(pair.cli(
            "query", "-f", "json", "SELECT name, value FROM probing.settings"))}
    finally:
        pair.close()

    pair = Pair(exe, [os.path.join(ROOT, "samples", "callheavy.py")], ready=r"^ready ")
    try:
        time.sleep(1.0)
        pair.cli("perf", "--cc", "--rate", "100")
        time.sleep(SAMPLER_S)
        got = settle(pair, 0)
        out = pair.cli("perf", "--stop")
        m = re.search(r"perf --cc: (\d+) samples of (\d+) threads", out)
        report("perf --cc at 100 Hz for %.0f s" % SAMPLER_S, got,
               "  (%s samples kept; perf.max_samples %s)" % (m.group(1) if m else "?",
                                                            settings.get("perf.max_samples")))
    finally:
        pair.close()

    torch_py = "/usr/bin/python3"
    pair = Pair(torch_py, [os.path.join(ROOT, "samples", "torch_train.py")])
    try:
        # Both warm up for the same steps; then the probed one traces for TORCH_STEPS.
        pair.cli("perf", "--torch")
        start = time.time()
        step0 = torch_step(pair)
        while torch_step(pair) < step0 + TORCH_STEPS:
            if time.time() - start > 30 * 60:
                raise SystemExit("bench: perf --torch did not reach %d steps in 30 min" %
                                 TORCH_STEPS)
            time.sleep(1.0)
        got = settle(pair, 0)
        report("perf --torch for %d steps" % TORCH_STEPS, got,
               "  (history.max_rows %s, history.max_age_s %s)" % (
                   settings.get("history.max_rows"), settings.get("history.max_age_s")))
        pair.cli("perf", "--torch", "--stop")
    finally:
        pair.close()


def torch_step(pair):
    out = subprocess.run([CLI, "-p", str(pair.probed.pid), "query", "-f", "json",
                          "SELECT max(step) AS s FROM python.torch_steps"], check=True,
                         capture_output=True, text=True).stdout
    rows = json.loads(out)
    return int(rows[0]["s"] or 0) if rows else 0


if __name__ == "__main__":
    main()
