# SPDX-License-Identifier: MIT
"""make bench, `probing serve`'s part (docs/http.md), against samples/threads.py with the probe
loaded (figures are medians and ratios, never timed assertions):
  1. GET /api/processes/PID/stacks: latency over keep-alive HTTP (median, p90, p99), requests
     back to back (mostly answered from the dump shared for 500 ms) and spaced 0.55 s apart
     (each a fresh dump through DAP), beside the same dump through the CLI
     (`probing -p PID debug --dump --json`, a fresh process each);
  2. 50 pollers, each GETting the stacks once a second on its own connection (staggered): the
     target's CPU time over a window, as a share of one CPU, beside the same window with no
     poller (both in this run); serve's own CPU in the same window;
  3. a page's first render in headless Chromium (tests/web/bench.js, playwright-core): from
     navigation start to the first data row in the DOM, the process list and the stacks view.
BENCH_RUNS (default 6) scales the repetitions. Usage: bench_serve.py BUILD_DIR [PYTHON]"""
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchlib import CLI, ROOT, python, runs  # noqa: E402

N_LAT = 50 * runs(6)      # stacks requests in 1
N_CLI = 5 * runs(6)       # CLI dumps in 1
N_FRESH = 5 * runs(6)     # spaced requests in 1 (each a fresh dump)
WINDOW = 2.5 * runs(6)    # seconds per window in 2
POLLERS = 50
WEB = os.path.join(ROOT, "tests", "web")
med = statistics.median


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_target(py):
    p = subprocess.Popen([py, os.path.join(ROOT, "samples", "threads.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("PROBING")})
    deadline = time.time() + 30
    while time.time() < deadline:
        line = p.stdout.readline()
        if line.startswith("ready "):
            # keep draining its ticks so it never blocks on a full pipe
            threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
            return p
    raise SystemExit("bench_serve: the target did not start")


def start_serve():
    s = subprocess.Popen([CLI, "serve", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    m = re.match(r"^probing serve: http://127\.0\.0\.1:(\d+)/$", s.stdout.readline().strip())
    if not m:
        raise SystemExit("bench_serve: serve did not start: %s" % s.stderr.read())
    return s, int(m.group(1))


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit("bench_serve: GET %s: %d %s" % (path, r.status, body[:200]))
    return body


def latency(port, pid):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    path = "/api/processes/%d/stacks" % pid
    for _ in range(10):
        get(conn, path)
    ms = []
    for _ in range(N_LAT):
        t0 = time.perf_counter()
        get(conn, path)
        ms.append((time.perf_counter() - t0) * 1000)
    fresh = []
    for _ in range(N_FRESH):
        time.sleep(0.55)
        t0 = time.perf_counter()
        get(conn, path)
        fresh.append((time.perf_counter() - t0) * 1000)
    conn.close()
    cli = []
    for _ in range(N_CLI):
        t0 = time.perf_counter()
        subprocess.run([CLI, "-p", str(pid), "debug", "--dump", "--json"], check=True,
                       capture_output=True)
        cli.append((time.perf_counter() - t0) * 1000)
    return ms, fresh, cli


def window(pid, serve_pid, pollers, port):
    stop = threading.Event()
    count = [0]

    def poll(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        time.sleep(i / pollers)  # staggered over the second
        nxt = time.monotonic()
        while not stop.is_set():
            get(conn, "/api/processes/%d/stacks" % pid)
            count[0] += 1
            nxt += 1.0
            stop.wait(max(0, nxt - time.monotonic()))
        conn.close()

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(pollers)]
    for t in threads:
        t.start()
    time.sleep(1.5)  # every poller connected and in its rhythm
    c0, s0, n0, t0 = cpu_seconds(pid), cpu_seconds(serve_pid), count[0], time.monotonic()
    time.sleep(WINDOW)
    c1, s1, n1, t1 = cpu_seconds(pid), cpu_seconds(serve_pid), count[0], time.monotonic()
    stop.set()
    for t in threads:
        t.join()
    wall = t1 - t0
    return 100 * (c1 - c0) / wall, 100 * (s1 - s0) / wall, (n1 - n0) / wall


def main():
    py = python()
    target = start_target(py)
    serve, port = start_serve()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("POST", "/api/processes/%d/attach" % target.pid, body=b"",
                     headers={"Origin": "http://127.0.0.1:%d" % port})
        r = conn.getresponse()
        if r.status != 200:
            raise SystemExit("bench_serve: attach: %d %s" % (r.status, r.read()))
        r.read()
        conn.close()
        print("probing serve bench: target samples/threads.py on %s, probe loaded, %d CPUs"
              % (py, os.cpu_count()))

        ms, fresh, cli = latency(port, target.pid)
        print("1. GET /api/processes/PID/stacks on one keep-alive connection:")
        print("   back to back (%d, shared dump): median %.2f ms, p90 %.2f ms, p99 %.2f ms" % (
            N_LAT, med(ms), pct(ms, .9), pct(ms, .99)))
        print("   0.55 s apart (%d, a fresh dump each): median %.2f ms, p90 %.2f ms, p99 %.2f ms" % (
            N_FRESH, med(fresh), pct(fresh, .9), pct(fresh, .99)))
        print("   'probing -p PID debug --dump --json' (a fresh CLI each, %d runs): median %.2f ms;"
              " fresh HTTP / CLI = %.2f" % (N_CLI, med(cli), med(fresh) / med(cli)))

        base = [window(target.pid, serve.pid, 0, port) for _ in range(2)]
        busy = [window(target.pid, serve.pid, POLLERS, port) for _ in range(2)]
        print("2. the target's CPU, %% of one CPU over %.0f s windows (two each, alternating):"
              % WINDOW)
        print("   no poller: %s" % ", ".join("%.3f%%" % b[0] for b in base))
        print("   %d pollers at 1/s (%.1f requests/s): %s" % (
            POLLERS, med(b[2] for b in busy), ", ".join("%.3f%%" % b[0] for b in busy)))
        print("   cost of the pollers to the target: %.3f%% of one CPU (medians' difference);"
              " serve itself: %.2f%%" % (med(b[0] for b in busy) - med(b[0] for b in base),
                                         med(b[1] for b in busy)))

        stamp = os.path.join(WEB, "node_modules", ".package-lock.json")
        lock = os.path.join(WEB, "package-lock.json")
        if not os.path.exists(stamp) or os.path.getmtime(lock) > os.path.getmtime(stamp):
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True,
                           capture_output=True)
        r = subprocess.run(["node", os.path.join(WEB, "bench.js"), "http://127.0.0.1:%d/" % port,
                            str(target.pid), str(runs(6))], capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise SystemExit("bench_serve: bench.js failed: %s" % r.stderr[-2000:])
        pages = json.loads(r.stdout)
        print("3. first render in headless Chromium, navigation start to the first data row "
              "(%d fresh pages each):" % runs(6))
        for name, v in pages.items():
            print("   %-9s median %.0f ms (min %.0f, max %.0f); load event median %.0f ms" % (
                name, med(v["render"]), min(v["render"]), max(v["render"]), med(v["load"])))
    finally:
        for p in (serve, target):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


if __name__ == "__main__":
    main()
