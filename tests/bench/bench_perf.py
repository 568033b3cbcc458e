# SPDX-License-Identifier: MIT
"""make bench, sampler part: the target's slowdown under perf --cc (CPU mode), as ratios of
medians against the same workload unprofiled, both measured in this invocation, alternating
runs (never a timed assertion). Two workloads (tests/bench/perf_work.py, C code from
samples/perf_hot.c built here with cc): one thread of Python + C work, and the same total work
over 64 threads, at 100 Hz (goal <= 1.01), then 64 threads at 1000 Hz, the rate of short, sharp
profiles (goal <= 1.05, missed samples under 5%), with the default clock (CPU timers at rates
up to half the kernel's tick rate, perf events above where the kernel allows them) and again with
the other: 64 threads at 100 Hz with perf events (`--clock events`), at 1000 Hz with CPU timers
(`--clock timers`), whose expirations the kernel merges at its tick. Also printed: the clock each row ran with, samples taken, missed and lost, and the sampler's own CPU
time (its drain thread and signal handlers) from the `perf --stop` summary, and that time per
sample split between the handlers and the drain thread (goal: at most 30 us per sample): over
the whole run, and in the steady state (the sampler's CPU between a `probing/perf` status read
a third into the run and the stop, over the samples taken meanwhile: the cost of one more
sample, without the start-up costs paid once per run or per thread, such as reading symbol
tables, naming threads and the first touch of a new thread's sample ring).
Rows on the events clock also measure, by turns with the others, the kernel's floor: the same
workload with no probe, each worker opening the perf event the sampler would give it
(tests/bench/perf_floor.c), bare and then with a signal to a handler that only counts; and
every row prints the process's context switches, on which the event's cost depends (the kernel
stops and starts each thread's event timer at every switch). perf --cc over the floor is the
probe's own part.
Usage: bench_perf.py BUILD_DIR [PYTHON]; BENCH_RUNS (default 5) runs of each."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import CLI, ROOT, python, runs, sock_path  # noqa: E402
from dapclient import DAP  # noqa: E402

RUNS = runs(5)
UNITS = int(os.environ.get("BENCH_PERF_UNITS", "3840"))
MID_S = 0.5  # seconds into the timed part (about a third of it) for the first status read


class FloorRefused(Exception):
    """The kernel refused the floor's perf event (perf_work.py's one line)."""


def build_floor(d):
    so = os.path.join(d, "libperf_floor.so")
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", so,
                    os.path.join(ROOT, "tests", "bench", "perf_floor.c")], check=True)
    return so


def build_lib(d):
    so = os.path.join(d, "libperf_hot.so")
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-o", so,
                    os.path.join(ROOT, "samples", "perf_hot.c")], check=True)
    return so


def one_run(so, nthreads, profiled, rate, clock, floor=None):
    """(elapsed s, process CPU s, sampler stats or None, signals counted, context switches).
    floor: (perf_floor.so, with_signal):
    no probe, each worker opens the event the sampler would (perf_floor.c)."""
    env = dict(os.environ)
    if floor:
        env.update(PERF_FLOOR_LIB=floor[0], PERF_FLOOR_NS=str(10**9 // rate),
                   PERF_FLOOR_SIGNAL="1" if floor[1] else "0")
    p = subprocess.Popen([python(), os.path.join(ROOT, "tests", "bench", "perf_work.py"), so,
                          str(nthreads), str(UNITS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE if floor else
                         subprocess.DEVNULL, text=True, start_new_session=True, env=env)
    try:
        line = p.stdout.readline()
        if floor and not line:
            raise FloorRefused(p.stderr.read().strip() or "perf_work.py exited")
        assert line.startswith("ready "), line
        pid = json.loads(line[6:])["pid"]
        if profiled:
            subprocess.run([CLI, "-p", str(pid), "perf", "--cc", "--rate", str(rate), "--clock",
                            clock], check=True, capture_output=True)
        p.stdin.write("go\n")
        p.stdin.flush()
        mid = end = None
        if profiled:
            # A third into the run (the timers are armed 0.3 s after "go"), and at its end.
            time.sleep(0.3 + MID_S)
            mid = perf_status(pid)
        m = re.match(r"elapsed (\S+) cpu (\S+) switches (\d+)(?: signals (\d+))?",
                     p.stdout.readline())
        stats = None
        if profiled:
            end = perf_status(pid)
            out = subprocess.run([CLI, "-p", str(pid), "perf", "--stop"], check=True,
                                 capture_output=True, text=True).stdout
            s = re.search(r"perf --cc: (\d+) samples of (\d+) threads .*?; (\d+) missed, "
                          r"(\d+) lost; sampler CPU (\S+) s(?: \(handler (\d+) us, drain (\d+) "
                          r"us per sample\))?", out)
            stats = [int(s.group(1)), int(s.group(2)), int(s.group(3)), int(s.group(4)),
                     float(s.group(5)), int(s.group(6) or -1), int(s.group(7) or -1)]
            n = end["samples"] - mid["samples"]
            stats += [1e6 * (end["handlerCpuSeconds"] - mid["handlerCpuSeconds"]) / n if n > 0
                      else -1,
                      1e6 * (end["drainCpuSeconds"] - mid["drainCpuSeconds"]) / n if n > 0
                      else -1]
            stats.append(end.get("clock", "?"))
        return (float(m.group(1)), float(m.group(2)), stats, int(m.group(4) or 0),
                int(m.group(3)))
    finally:
        p.kill()
        p.wait()


def perf_status(pid):
    """The probing/perf status body (samples, handlerCpuSeconds, drainCpuSeconds, ...)."""
    c = DAP.unix(sock_path(pid))
    try:
        c.request("initialize", {"adapterID": "probing", "clientID": "bench"})
        c.request("attach", {})
        r = c.request("probing/perf", {"action": "status"})
        assert r.get("success"), r
        return r["body"]
    finally:
        c.close()


def main():
    exe = python()
    ver = subprocess.run([exe, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True).stdout.strip()
    print("perf --cc, CPython %s, %d runs each (median), %d work units" % (ver, RUNS, UNITS))
    with tempfile.TemporaryDirectory(prefix="bench_perf-") as d:
        so = build_lib(d)
        floor_so = build_floor(d)
        for name, nthreads, rate, goal, clock in (
                ("1 thread, Python + C", 1, 100, 1.01, "auto"),
                ("64 threads, Python + C", 64, 100, 1.01, "auto"),
                ("64 threads, 100 Hz, events", 64, 100, 1.01, "events"),
                ("64 threads at 1000 Hz", 64, 1000, 1.05, "auto"),
                ("64 threads, 1000 Hz, timers", 64, 1000, 1.05, "timers")):
            base, prof, stats = [], [], []
            # The kernel's part alone (events clock rows): the event, then the event and its
            # signal, by turns with the others.
            bare, signalled, floor_why = [], [], "" if clock != "timers" else "timers"
            for _ in range(RUNS):
                base.append(one_run(so, nthreads, False, rate, clock))
                prof.append(one_run(so, nthreads, True, rate, clock))
                stats.append(prof[-1][2])
                if not floor_why and prof[-1][2][9] != "events":
                    floor_why = "the sampler ran on CPU timers"
                if not floor_why:
                    try:
                        bare.append(one_run(so, nthreads, False, rate, clock, (floor_so, False)))
                        signalled.append(one_run(so, nthreads, False, rate, clock,
                                                 (floor_so, True)))
                    except FloorRefused as e:
                        floor_why = str(e)
            b = statistics.median(r[0] for r in base)
            pr = statistics.median(r[0] for r in prof)
            bc = statistics.median(r[1] for r in base)
            pc = statistics.median(r[1] for r in prof)
            samples = statistics.median(s[0] for s in stats)
            threads = statistics.median(s[1] for s in stats)
            missed = statistics.median(s[2] for s in stats)
            lost = statistics.median(s[3] for s in stats)
            own = statistics.median(s[4] for s in stats)
            hus = statistics.median(s[5] for s in stats)
            dus = statistics.median(s[6] for s in stats)
            print("%-28s %d Hz: unprofiled %.3f s, profiled %.3f s: slowdown %.3f (goal <= %.2f: "
                  "%s); process CPU %.3f -> %.3f s (%.3f)" % (
                      name, rate, b, pr, pr / b, goal, "met" if pr / b <= goal else "NOT met",
                      bc, pc, pc / bc))
            clocks = sorted(set(s[9] for s in stats))
            share = 100 * missed / max(1, samples + missed)
            print("%-28s per run: %d samples of %d threads, %d missed (%.1f%%%s), %d lost, "
                  "sampler CPU %.3f s (%.2f%% of the run, %.0f us per sample); clock %s; "
                  "context switches %d (unprofiled %d)" % (
                      "", samples, threads, missed, share,
                      "" if rate < 1000 else
                      ", goal < 5%%: %s" % ("met" if share < 5 else "NOT met"),
                      lost, own, 100 * own / pr, 1e6 * own / max(1, samples), "/".join(clocks),
                      statistics.median(r[4] for r in prof),
                      statistics.median(r[4] for r in base)))
            if floor_why and floor_why != "timers":
                print("%-28s the kernel's floor: not measured (%s)" % ("", floor_why))
            elif not floor_why and bare:
                fb = statistics.median(r[1] for r in bare)
                fs = statistics.median(r[1] for r in signalled)
                print("%-28s the kernel's floor, no probe (a task-clock event per thread at %d Hz):"
                      " process CPU %.3f s (%.3f; %d switches), with a signal each to a handler "
                      "that counts %.3f s (%.3f; %d switches, %d signals); perf --cc over it "
                      "%.3f" % ("", rate, fb, fb / bc, statistics.median(r[4] for r in bare), fs,
                                fs / bc, statistics.median(r[4] for r in signalled),
                                statistics.median(r[3] for r in signalled), pc / fs))
            if hus >= 0:
                print("%-28s sampler CPU per sample over the run: handler %d us, drain %d us "
                      "(%d us)" % ("", hus, dus, hus + dus))
                shus = statistics.median(s[7] for s in stats)
                sdus = statistics.median(s[8] for s in stats)
                print("%-28s sampler CPU per sample, steady state: handler %.0f us, drain %.0f us"
                      " (goal: <= 30 us in all: %s)" % (
                          "", shus, sdus, "met" if shus + sdus <= 30 else "NOT met"))


if __name__ == "__main__":
    main()
