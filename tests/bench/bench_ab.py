# SPDX-License-Identifier: MIT
"""A/B of two builds in one run, for a refactor's "make bench not slower" (issue 42): the paths
a restructuring of the probe, the server and the CLI can slow down, each measured on both builds
by turns (A, B, A, B...: drift and load fall on both alike), printed as B/A ratios of medians:
  - cold `probing -p PID inject` (a fresh target each time);
  - cold inject + first `debug --dump --json`, and + first `query` (the SQL store's open);
  - on one 16-thread target per build (BENCH_AB_THREADS), over an open DAP connection: `probing/info` (the round
    trip's floor), `probing/dump`, `probing/dump` with native frames merged, `threads` +
    `stackTrace` of every thread, and a `probing/query` over python.threads;
  - the whole CLI: `debug --dump` (also `--native`) and `query` on that target;
  - the CLI's own CPU (getrusage) of a cold `inject`;
  - `cluster stacks` over BENCH_AB_RANKS (default 64; 0: left out) fresh fake ranks of one job
    (samples/fake_rank.py, 2 forks each), its first run: the wall time, the CLI's CPU (getrusage:
    the command and its children) and the ranks' (every thread's schedstat, read 0.2 s after).
Each build serves its own targets (its own probe). Figures, never a timed assertion.
Usage: bench_ab.py BUILD_A BUILD_B [PYTHON] (make a tree's build in a git worktree first:
git worktree add /tmp/a REV && make -C /tmp/a)."""
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import time

if len(sys.argv) < 3:
    raise SystemExit("usage: bench_ab.py BUILD_A BUILD_B [PYTHON]")
A, B = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.argv = [sys.argv[0]] + sys.argv[2:]  # benchlib's BUILD_DIR [PYTHON]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import python, runs, start, stop, timed  # noqa: E402
from dapclient import DAP  # noqa: E402
from bench_cluster import start_fake_job, stop_fake_job  # noqa: E402

RUNS = runs(9)
THREADS = int(os.environ.get("BENCH_AB_THREADS", "16"))  # the dump target's threads
RANKS = int(os.environ.get("BENCH_AB_RANKS", "64"))  # cluster stacks' fake ranks


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def threads_cpu(pids):
    """Seconds of CPU every thread of pids has run (schedstat's first field)."""
    ns = 0
    for p in pids:
        for f in glob.glob("/proc/%d/task/*/schedstat" % p):
            try:
                with open(f) as fh:
                    ns += int(fh.read().split()[0])
            except (OSError, ValueError):
                pass
    return ns / 1e9


def cluster_first(b, i, add):
    """One first `cluster stacks` of RANKS fresh fake ranks with build b's CLI."""
    tag = 30000 + (os.getpid() * 7 + i * 2 + (b == B)) % 20000
    procs = start_fake_job(python(), RANKS, tag, ("--fork", "2"))
    try:
        time.sleep(0.3)  # the forks settled
        pids = [p.pid for p in procs]
        c0, r0 = threads_cpu(pids), children_cpu()
        dt, _ = timed([cli(b), "cluster", "stacks", "--job", "torch:127.0.0.1:%d" % tag,
                       "--json"])
        cpu = children_cpu() - r0
        time.sleep(0.2)
        add(b, "cluster stacks, %d ranks, first run" % RANKS, dt)
        add(b, "  cluster: the CLI's CPU", cpu)
        add(b, "  cluster: the %d ranks' CPU" % RANKS, threads_cpu(pids) - c0)
    finally:
        stop_fake_job(procs)


def cli(build):
    return os.path.join(build, "bin", "probing")


def req(c, command, args=None):
    t0 = time.perf_counter()
    r = c.request(command, args or {})
    dt = time.perf_counter() - t0
    if not r.get("success"):
        raise SystemExit("bench_ab: %s failed: %s" % (command, r.get("message")))
    return dt, r


def stack_all(c):
    t0 = time.perf_counter()
    threads = req(c, "threads")[1]["body"]["threads"]
    for t in threads:
        req(c, "stackTrace", {"threadId": t["id"]})
    return time.perf_counter() - t0


def main():
    t = {b: {} for b in (A, B)}

    def add(b, k, v):
        t[b].setdefault(k, []).append(v)

    # Each row's two measurements side by side, the order swapped every run: the first of a
    # pair was 7-18% faster in the cold rows when A always came first.
    cold = (("inject (cold)", ["inject"]),
            ("inject + first dump (cold)", ["debug", "--dump", "--json"]),
            # the SQL store opens at the first query
            ("inject + first query (cold)", ["query", "SELECT count(*) FROM torch.collectives"]))
    for i in range(RUNS):
        for name, argv in cold:
            for b in ((A, B) if i % 2 == 0 else (B, A)):
                p = start("threads.py")
                r0 = children_cpu()
                add(b, name, timed([cli(b), "-p", str(p.pid), *argv])[0])
                if name == "inject (cold)":
                    add(b, "  inject: the CLI's CPU", children_cpu() - r0)
                stop(p)
    for i in range(RUNS if RANKS > 0 else 0):
        for b in ((A, B) if i % 2 == 0 else (B, A)):
            cluster_first(b, i, add)
    targets = {}
    conns = {}
    try:
        for b in (A, B):
            p = start("many_threads.py", str(THREADS))
            targets[b] = p
            r = subprocess.run([cli(b), "-p", str(p.pid), "inject", "--json"], check=True,
                               capture_output=True, text=True)
            c = DAP.unix(json.loads(r.stdout)["reachable"])
            c.request("initialize", {"adapterID": "probing"})
            c.request("attach", {"probingClient": "cli"})
            conns[b] = c
        for _ in range(max(RUNS * 5, 30)):
            for b in (A, B):
                c = conns[b]
                add(b, "probing/info round trip", req(c, "probing/info")[0])
                add(b, "probing/dump, %d threads" % THREADS, req(c, "probing/dump")[0])
                add(b, "probing/dump native, %d threads" % THREADS,
                    req(c, "probing/dump", {"native": "merged"})[0])
                add(b, "threads + %d stackTrace" % THREADS, stack_all(c))
                add(b, "probing/query python.threads",
                    req(c, "probing/query", {"sql": "SELECT count(*) FROM python.threads"})[0])
        for c in conns.values():
            c.close()
        conns = {}
        for _ in range(RUNS):
            for b in (A, B):
                pid = str(targets[b].pid)
                add(b, "CLI debug --dump", timed([cli(b), "-p", pid, "debug", "--dump"])[0])
                add(b, "CLI debug --dump --native",
                    timed([cli(b), "-p", pid, "debug", "--dump", "--native"])[0])
                add(b, "CLI query", timed([cli(b), "-p", pid, "query",
                                           "SELECT count(*) FROM python.threads"])[0])
    finally:
        for c in conns.values():
            c.close()
        for p in targets.values():
            stop(p)
    print("bench_ab: A = %s, B = %s; CPython %s; medians of %d runs (%d for DAP requests)"
          % (A, B, python(), RUNS, max(RUNS * 5, 30)))
    print("  %-36s %10s %10s %7s" % ("", "A", "B", "B/A"))
    for k in t[A]:
        a, b = statistics.median(t[A][k]), statistics.median(t[B][k])
        print("  %-36s %8.2f ms %7.2f ms %7.3f" % (k, a * 1e3, b * 1e3, b / a))


if __name__ == "__main__":
    main()
