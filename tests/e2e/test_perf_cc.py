# SPDX-License-Identifier: MIT
"""perf --cc, the native and Python sampler, on every CPython, through the real CLI against
samples/perf_hot.py (a C function hot_c_spin, compiled by the sample with cc and called through
ctypes from the Python function hot_python_caller):
- the merged stacks put hot_python_caller above (outer to) hot_c_spin, and hot_c_spin has the
  largest self share; --duration prints the summary; the stop's summary splits the sampler's
  CPU time per sample between the signal handlers and the drain thread;
- a deep stack (72 calls, a generator's frame half way) has every frame in order, and on 3.11+
  the handler reads it from one copy of the thread's data stack, not one read per frame (its
  process_vm_readv calls per signal, counted with strace);
- a thread whose stack goes 400 calls deep and back without pause, sampled at 1000 Hz while
  the GIL is held and released in turn: every sample a well-formed stack, the target healthy;
- every busy thread of a multi-threaded target has samples, under its threading name;
- threads that live 120 ms each, four at a time, sampled at 200 Hz: dozens of them sampled (a
  freed thread's slot serves the next), each sample's stack whole (the C function under its
  Python caller);
  perf.samples_by_stack equals the GROUP BY thread_id, stack_id over perf.samples, also when
  perf.max_samples stopped the samples;
- wall mode samples a sleeping thread off-CPU (on_cpu = 0) with its Python stack;
- stop deletes every timer (/proc/PID/timers), closes every perf event (/proc/PID/fd) and
  gives SIGPROF back (SigCgt);
- a SIGPROF handler of the target keeps running during sampling and is its handler after;
- fork() in the target during sampling: children exit 0, the parent goes on; children that
  outlive the parent's stop hold none of its perf events, and the parent takes no SIGPROF
  after the stop;
- the clock: auto takes CPU timers at rates up to half the kernel's tick rate (the default
  100 Hz here), perf events above where the kernel allows them (one per thread, closed at
  stop; at 1000 Hz few samples missed, where CPU timers miss most on a 250 Hz tick);
  `--clock timers` asked; a target whose seccomp filter refuses perf_event_open falls back to
  timers and says why, and `--clock events` there is a one-line error that starts nothing;
  stop leaves alone a descriptor the target reused after closing the sampler's event; under an
  open-file limit of 128 at most 16 events, the other threads on CPU timers; a target and CLI
  of nobody get the clock kernel.perf_event_paranoid allows, named in the summary;
- missed samples on the events clock are reckoned against user time: a thread mostly in the
  kernel adds none;
- a thread that blocks SIGPROF: missed samples are counted, the process stays healthy;
- a thread started by `probing eval` has the main thread's signal mask and is sampled (the
  evaluator runs user code with the target's mask, its own threads block everything otherwise);
- inject -P starts sampling; bad arguments are one-line errors with exit status 2."""
import ast
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS, probing

pytestmark = pytest.mark.serial  # sample counts and missed samples at 100-1000 Hz

SAMPLE = "perf_hot.py"
SIGPROF_BIT = 1 << (27 - 1)
# Sample counts are floors of "sampling happens", not rates: CPU mode samples CPU time, and on
# a loaded machine a busy thread may get a fraction of a core.


def eval_json(pid, code):
    r = probing("-p", pid, "eval", code, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def query(pid, sql):
    """Rows of a query as lists (columns in SELECT order; give them distinct names)."""
    r = probing("-p", pid, "query", "--format", "json", sql, check=True)
    return [list(o.values()) for o in json.loads(r.stdout)]


def sigcgt(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^SigCgt:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)


def prof_timers(pid):
    """POSIX timers of the process that signal SIGPROF (/proc/PID/timers)."""
    with open("/proc/%d/timers" % pid) as f:
        return len(re.findall(r"^signal: 27/", f.read(), re.M))


def perf_fds(pid):
    """The target's open perf events (/proc/PID/fd)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def counts(out):
    m = re.search(r"perf --cc: (\d+) samples .*?; (\d+) missed", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def status(pid):
    return query(pid, "SELECT COUNT(*) AS n, COUNT(DISTINCT thread_id) AS t FROM perf.samples")[0]


@pytest.mark.parametrize("python", PYTHONS)
def test_python_caller_above_c_function(python, spawn):
    t = spawn(python, SAMPLE)
    assert sigcgt(t.pid) & SIGPROF_BIT == 0
    r = probing("-p", t.pid, "perf", "--cc", "--duration", "2", check=True)
    assert r.stderr == ""  # no terminal: no progress line
    m = re.search(r"^perf --cc: (\d+) samples of (\d+) threads in (\d+\.\d) s", r.stdout, re.M)
    assert m and int(m.group(1)) >= 10, r.stdout
    assert 2.0 <= float(m.group(3)) <= 3.0, r.stdout  # --duration 2: the time it sampled
    assert re.search(r"top functions \(self\):\n\s+\d+\.\d%  hot_c_spin\n", r.stdout), r.stdout
    assert "sampling goes on" in r.stdout
    # The summary reads the clean view, as flame graphs do: no start-up, no unnamed
    # interpreter frame, no eval loop among the top functions (self or total).
    top = r.stdout.split("top functions (self):\n", 1)[1]
    for bad in ("_start", "__libc_start_main", "Py_BytesMain", "Py_RunMain", "[python",
                "[libpython", "_PyEval_EvalFrameDefault", "PyEval_EvalCode"):
        assert not re.search(r"%\s+" + re.escape(bad), top), (bad, r.stdout)
    assert sigcgt(t.pid) & SIGPROF_BIT and perf_fds(t.pid) + prof_timers(t.pid) >= 1
    # The main thread's most common stacks: Python caller outer to the C function.
    main = t.pid
    top = query(t.pid, "SELECT st.folded, COUNT(*) AS n FROM perf.samples s JOIN perf.stacks st "
                       "USING (stack_id) WHERE s.thread_id = %d GROUP BY s.stack_id "
                       "ORDER BY n DESC LIMIT 3" % main)
    total = query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_id = %d" % main)[0][0]
    folded, n = top[0]
    frames = folded.split(";")
    callers = [i for i, f in enumerate(frames) if f.startswith("hot_python_caller (")]
    spins = [i for i, f in enumerate(frames) if f == "hot_c_spin"]
    assert callers and spins and callers[0] < spins[0], folded
    assert frames[-1] == "hot_c_spin", folded  # the innermost frame
    assert n >= 0.5 * total, (n, total, top)
    # Self share: hot_c_spin is the innermost frame of the most samples.
    self_rows = query(t.pid, "WITH c AS MATERIALIZED (SELECT stack_id, COUNT(*) AS n FROM "
                             "perf.samples GROUP BY stack_id) SELECT f.name, SUM(c.n) AS n FROM c "
                             "JOIN perf.frames f ON f.stack_id = c.stack_id AND f.depth = 0 "
                             "GROUP BY f.name ORDER BY n DESC")
    assert self_rows[0][0] == "hot_c_spin", self_rows[:5]
    # perf.frames agrees with the folded stack, kinds and columns filled.
    rows = query(t.pid, "SELECT kind, name, func, file, line, address FROM perf.frames WHERE "
                        "stack_id = (SELECT stack_id FROM perf.samples WHERE thread_id = %d "
                        "GROUP BY stack_id ORDER BY COUNT(*) DESC LIMIT 1) ORDER BY depth" % main)
    assert rows[0][:3] == ["native", "hot_c_spin", "hot_c_spin"] and rows[0][5] > 0
    assert rows[0][3].endswith("libperf_hot.so")
    py = [r for r in rows if r[0] == "python"]
    assert py[0][2] == "hot_python_caller" and py[0][3].endswith(SAMPLE) and py[0][4] > 0
    assert py[0][5] is None
    # Stop: summary, every timer gone, SIGPROF back to what it was.
    r = probing("-p", t.pid, "perf", "--cc", "--stop", check=True)
    assert r.stdout.startswith("perf --cc stopped\nperf --cc: "), r.stdout
    # The sampler's CPU time, split per sample between the handlers and the drain thread.
    m = re.search(r"^perf --cc: (\d+) samples .*; sampler CPU (\d+\.\d+) s \(handler (\d+) us, "
                  r"drain (\d+) us per sample\)$", r.stdout, re.M)
    assert m, r.stdout
    n, own, hus, dus = int(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4))
    assert hus > 0 and dus > 0, r.stdout
    assert abs((hus + dus) * n / 1e6 - own) <= n * 1e-6 + 0.001, r.stdout
    assert prof_timers(t.pid) == 0 and perf_fds(t.pid) == 0
    assert sigcgt(t.pid) & SIGPROF_BIT == 0
    n_after = status(t.pid)[0]
    time.sleep(0.3)
    assert status(t.pid)[0] == n_after  # stopped means stopped; data kept
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert "nothing to stop" in r.stdout
    t.assert_responsive()
    t.check_output_clean()


def check_by_stack(pid, threads):
    """perf.samples_by_stack holds what GROUP BY thread_id, stack_id gives over perf.samples;
    returns the samples counted."""
    want = query(pid, "SELECT thread_id, thread_name, stack_id, COUNT(*) AS n, SUM(on_cpu) AS c, "
                      "MIN(ts) AS t0, MAX(ts) AS t1 FROM perf.samples GROUP BY thread_id, stack_id "
                      "ORDER BY 1, 3")
    got = query(pid, "SELECT * FROM perf.samples_by_stack ORDER BY thread_id, stack_id")
    assert got == want and len({r[0] for r in got}) >= threads, (got, want)
    return sum(r[3] for r in got)


def strace_reads(tid, seconds):
    """process_vm_readv calls of thread tid for about seconds, as (local iovecs, remote iovecs)
    of each, and the count of its rt_sigreturn calls (one per signal handled)."""
    with tempfile.NamedTemporaryFile(prefix="strace-", suffix=".txt") as out:
        st = subprocess.Popen(["strace", "-e", "trace=process_vm_readv,rt_sigreturn", "-o",
                               out.name, "-p", str(tid)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        st.send_signal(2)
        st.wait(timeout=30)
        text = open(out.name).read()
    iovs = [(int(m.group(1)), int(m.group(2))) for m in
            re.finditer(r"process_vm_readv\(\d+, \[.*?\], (\d+), \[.*?\], (\d+), 0\)", text)]
    return iovs, text.count("rt_sigreturn(")


@pytest.mark.parametrize("python", PYTHONS)
def test_deep_stack_read_in_one_copy(python, spawn):
    """A thread 72 Python calls deep (a generator's frame half way): every frame in its samples,
    in order. On 3.11+ the handler reads the thread's frames from one copy of its data stack
    (refilled for a deeper stack), not one read per frame: its process_vm_readv calls per
    SIGPROF, counted with strace on that thread alone, stay far below the frame count."""
    t = spawn(python, SAMPLE, args=("--deep", "70"))
    probing("-p", t.pid, "perf", "--cc", check=True)
    tid = t.ready["tids"]["deep"]
    deadline = time.time() + 30
    while time.time() < deadline and query(
            t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_name = 'deep'")[0][0] < 20:
        time.sleep(0.3)
    folded = query(t.pid, "SELECT st.folded, COUNT(*) AS n FROM perf.samples s JOIN perf.stacks "
                          "st USING (stack_id) WHERE s.thread_name = 'deep' GROUP BY s.stack_id "
                          "ORDER BY n DESC LIMIT 1")[0][0]
    py = [f.split(" (")[0] for f in folded.split(";") if " (" in f]
    py = py[py.index("deep_call"):]
    assert py == ["deep_call"] * 36 + ["deep_gen"] + ["deep_call"] * 35 + ["busy_py_loop"], folded
    minor = tuple(eval_json(t.pid, "import sys, json; print(json.dumps(sys.version_info[:2]))"))
    iovs, signals = strace_reads(tid, 2)
    assert signals >= 5, (iovs, signals)
    # The native stack (72 C-level calls of the eval loop deep before 3.11) is read in place:
    # once the drain thread has learnt the thread's stack mapping, a sample makes no copy of it
    # through process_vm_readv (whose window goes page by page: two or more remote iovecs).
    # Before: one or more windows per sample. Now a window is left only for a read outside the
    # stack (a frame-pointer guess at the end of a stack).
    windows = len([r for n, r in iovs if n == 1 and r >= 2])
    assert windows * 4 <= signals, (windows, signals, iovs)
    if minor >= (3, 11):
        # 74 frames each: about 80 reads before; 2-6 now on 3.11-3.14, more on 3.15 (its
        # unwinder re-reads a 3 KB FDE whose rule at the eval loop's pc it cannot cache)
        assert len(iovs) <= 30 * signals, (len(iovs), signals)
    probing("-p", t.pid, "perf", "--stop", check=True)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_stack_churn_at_1000_hz(python, spawn):
    """A thread whose stack goes 400 calls deep and back without pause (on 3.11+ its data stack
    chunks are allocated and freed at every pass: the handler may interrupt it between the
    thread state's stores of a chunk switch, or with the current frame in a chunk just freed),
    sampled at 1000 Hz while the main thread calls C through ctypes (the GIL released): the
    target stays healthy, and every sample of that thread is a well-formed stack: churn_loop
    outermost, then churn_call frames with a churn_gen frame after each run of 50 at most,
    never a frame of another function (a copy read at the wrong place would show one)."""
    t = spawn(python, SAMPLE, args=("--churn",))
    probing("-p", t.pid, "perf", "--cc", "--rate", "1000", check=True)
    deadline = time.time() + 30
    while time.time() < deadline and query(
            t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_name = 'churn'")[0][0] < 1000:
        time.sleep(0.5)
    rows = query(t.pid, "SELECT st.folded, COUNT(*) AS n FROM perf.samples s JOIN perf.stacks "
                        "st USING (stack_id) WHERE s.thread_name = 'churn' GROUP BY s.stack_id")
    probing("-p", t.pid, "perf", "--stop", check=True)
    total = sum(n for _, n in rows)
    assert total >= 1000, total
    deep = empty = 0
    for folded, n in rows:
        py = [f.split(" (")[0] for f in folded.split(";") if " (" in f]
        if not py:  # caught where no frame can be read (a chunk switch): native frames only
            empty += n
            continue
        if "churn_loop" in py:
            py = py[py.index("churn_loop") + 1:]
            if py in (["is_set"], ["Event.is_set"]):  # the loop's test of threading.Event
                continue
        elif len(py) >= 90:  # deeper than a sample keeps (its innermost frames)
            deep += n
        else:  # the walk stopped at a frame it could not read (caught at a chunk switch)
            empty += n
        run = 0
        for f in py:
            assert f in ("churn_call", "churn_gen"), folded
            run = run + 1 if f == "churn_call" else 0
            assert run <= 50, folded
    assert deep > 0, rows  # sampled deep, where older frames lie in earlier chunks
    print("churn samples %d, deep %d, cut or empty %d" % (total, deep, empty))
    assert empty * 20 <= total, (empty, total)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_every_busy_thread_is_sampled(python, spawn):
    t = spawn(python, SAMPLE, args=("--threads", "3"))
    probing("-p", t.pid, "perf", "--cc", "--duration", "3", check=True)
    rows = query(t.pid, "SELECT thread_name, COUNT(*), MIN(on_cpu), MAX(mode) FROM perf.samples "
                        "GROUP BY thread_id ORDER BY 1")
    by = {r[0]: r for r in rows}
    for name in ("MainThread", "busy-0", "busy-1", "busy-2"):
        assert name in by and by[name][1] >= 5, rows  # 4 busy threads on a loaded machine
        assert by[name][2] == 1 and by[name][3] == "cpu"
    # A busy thread's stack has its Python function.
    n = query(t.pid, "SELECT COUNT(*) FROM perf.samples s JOIN perf.stacks st USING (stack_id) "
                     "WHERE s.thread_name = 'busy-1' AND st.folded LIKE '%busy_py_loop (%'")[0][0]
    assert n >= 0.8 * by["busy-1"][1]
    probing("-p", t.pid, "perf", "--stop", check=True)
    check_by_stack(t.pid, 4)
    # With perf.max_samples reached, the counts stop where the samples stop.
    probing("-p", t.pid, "config", "perf.max_samples=1000", check=True)
    probing("-p", t.pid, "perf", "--cc", "--rate", "1000", "--duration", "2", check=True)
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert check_by_stack(t.pid, 1) <= 1000
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_short_lived_threads(python, spawn):
    """Threads that come and go (four alive at a time, 120 ms of C work each, called from
    Python): the sampler takes each new one as it starts, and its slot (ring, rule cache,
    frame window) serves another thread after it ends; every sample of such a thread has the
    whole stack, hot_c_spin innermost under hot_python_caller under short_life."""
    t = spawn(python, SAMPLE, args=("--short", "4"))
    probing("-p", t.pid, "perf", "--cc", "--rate", "200", check=True)
    deadline = time.time() + 40
    while time.time() < deadline and query(
            t.pid, "SELECT COUNT(DISTINCT thread_id) FROM perf.samples "
                   "WHERE thread_name LIKE 'short-%'")[0][0] < 30:
        time.sleep(0.5)
    probing("-p", t.pid, "perf", "--stop", check=True)
    rows = query(t.pid, "SELECT st.folded, COUNT(*) AS n, COUNT(DISTINCT s.thread_id) AS t FROM "
                        "perf.samples s JOIN perf.stacks st USING (stack_id) WHERE "
                        "s.thread_name LIKE 'short-%' GROUP BY s.stack_id")
    threads = query(t.pid, "SELECT COUNT(DISTINCT thread_id) FROM perf.samples "
                           "WHERE thread_name LIKE 'short-%'")[0][0]
    assert threads >= 30, (threads, rows)
    total = sum(r[1] for r in rows)
    whole = 0
    for folded, n, _ in rows:
        frames = folded.split(";")
        py = [i for i, f in enumerate(frames) if f.startswith("short_life (")]
        caller = [i for i, f in enumerate(frames) if f.startswith("hot_python_caller (")]
        if py and caller and py[0] < caller[0] and frames[-1] == "hot_c_spin":
            whole += n
    # A sample may catch a thread starting or ending (in threading's code, not short_life).
    assert whole >= 0.8 * total, (whole, total, sorted(rows, key=lambda r: -r[1])[:5])
    print("short-lived threads sampled %d, samples %d, whole stacks %d" % (threads, total, whole))
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_wall_mode_samples_sleeping_thread(python, spawn):
    t = spawn(python, SAMPLE, args=("--sleeper",))
    r = probing("-p", t.pid, "perf", "--cc", "--mode", "wall", "--rate", "50", "--duration", "1.5",
                check=True)
    assert "(wall mode, 50 Hz)" in r.stdout
    # The sleeper by its stack (only it runs sleepy_wait), not by its name: on a loaded machine
    # the probe may name threads from the OS when the GIL is slow to come. 75 samples are due
    # at 50 Hz over 1.5 s; a machine busy with other jobs delays the drain thread's pokes, so
    # at least 10 (CPU mode would give none: the thread sleeps).
    rows = query(t.pid, "SELECT COUNT(*) AS n, SUM(on_cpu) AS c FROM perf.samples s JOIN perf.stacks st "
                        "USING (stack_id) WHERE st.folded LIKE '%sleepy_wait (%' AND s.mode = 'wall'")
    assert rows[0][0] >= 10 and rows[0][1] <= 0.2 * rows[0][0], rows
    main = query(t.pid, "SELECT COUNT(*) AS n, SUM(on_cpu) AS c FROM perf.samples WHERE thread_id = %d"
                 % t.pid)[0]
    assert main[0] >= 20
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert sigcgt(t.pid) & SIGPROF_BIT == 0
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
@pytest.mark.parametrize("mode", ["cpu", "wall"])
@pytest.mark.parametrize("events", ["events", "no-perf-events"])
def test_sampling_never_cuts_a_wait_short(python, mode, events, spawn):
    """Sampling at 1000 Hz never wakes a thread from a wait it is entering
    (samples/entering_waits.py: two threads alternating 1 ms of Python with a 1 ms nanosleep
    or epoll_wait through ctypes, no retry on EINTR; 40 threads waiting for good): CPU mode's
    perf events count user time only, so an overflow is raised only where the thread runs its
    own code (with the kernel's time counted, as root until stop 60: 10 waits cut in 8 s);
    with perf_event_open refused (a seccomp filter) the CPU timers' signal comes as the
    thread returns to its code; wall mode pokes a running thread by its event allowed one
    overflow, or its one-shot timer (a queued signal until stop 60: 40 cuts in 8 s). 6 s, no
    "cut" line, and the two threads sampled."""
    args = ("no-perf-events",) if events == "no-perf-events" else ()
    t = spawn(python, "entering_waits.py", args=args)
    probing("-p", t.pid, "inject", check=True)
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "1000", "--mode", mode, "--duration", "6",
                check=True)
    n, _ = counts(r.stdout)
    if mode == "cpu":
        assert ("perf-event clock, user time only" if events == "events" else "CPU-timer clock") \
            in r.stdout, r.stdout
    rows = query(t.pid, "SELECT COUNT(*) AS n FROM perf.samples s JOIN perf.stacks st "
                        "USING (stack_id) WHERE st.folded LIKE '%%python_for_a_while%%' AND s.on_cpu = 1")
    probing("-p", t.pid, "perf", "--stop", check=True)
    time.sleep(0.1)
    cut = re.findall(r"^cut .*$", t.output(), re.M)
    assert not cut, "%d waits cut short in 6 s: %r" % (len(cut), cut[:5])
    assert n >= 500 and rows[0][0] >= 100, (r.stdout, rows)
    before = len(re.findall(r"^rounds ", t.output(), re.M))
    time.sleep(1.5)  # the two threads go on (each prints a line every 200 rounds, about 0.4 s)
    assert len(re.findall(r"^rounds ", t.output(), re.M)) > before, t.output()[-300:]
    t.check_output_clean(extra_allowed=r"^(rounds \w+ \d+)$")


@pytest.mark.parametrize("python", PYTHONS)
def test_target_sigprof_handler_chained_and_kept(python, spawn):
    t = spawn(python, SAMPLE, args=("--prof-handler",))
    before = probing("-p", t.pid, "eval", "PROF_HITS[0]", check=True)
    handler = probing("-p", t.pid, "eval", "signal.getsignal(signal.SIGPROF).__name__",
                      check=True).stdout.strip()
    assert "on_prof" in handler
    probing("-p", t.pid, "perf", "--cc", check=True)
    # ITIMER_PROF counts the process's CPU time, which a loaded machine gives out slowly: wait for
    # the hits (bounded) rather than for a fixed wall time.
    deadline = time.time() + 30
    while True:
        during = int(probing("-p", t.pid, "eval", "PROF_HITS[0]", check=True).stdout)
        samples = query(t.pid, "SELECT COUNT(*) FROM perf.samples")[0][0]
        if during >= int(before.stdout) + 20 and samples >= 10:
            break
        assert time.time() < deadline, (before.stdout, during, samples)
        time.sleep(0.3)
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert probing("-p", t.pid, "eval", "signal.getsignal(signal.SIGPROF).__name__",
                   check=True).stdout.strip() == handler
    after = int(probing("-p", t.pid, "eval", "PROF_HITS[0]", check=True).stdout)
    time.sleep(0.5)
    assert int(probing("-p", t.pid, "eval", "PROF_HITS[0]", check=True).stdout) > after
    assert prof_timers(t.pid) == 0 and perf_fds(t.pid) == 0
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_fork_during_sampling(python, spawn):
    t = spawn(python, SAMPLE, args=("--fork",))
    probing("-p", t.pid, "perf", "--cc", "--duration", "2", check=True)
    m = re.findall(r"^ok forks (\d+) bad (\d+)$", t.output(), re.M)
    assert m and int(m[-1][0]) >= 3 and m[-1][1] == "0", t.output()[-300:]
    assert query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_id = %d" % t.pid)[0][0] >= 10
    probing("-p", t.pid, "perf", "--stop", check=True)
    t.assert_responsive()
    m2 = re.findall(r"^ok forks (\d+) bad (\d+)$", t.output(), re.M)
    assert int(m2[-1][0]) > int(m[-1][0]) and m2[-1][1] == "0"
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_fork_children_keep_no_event_of_the_parent(python, spawn):
    """Children forked during sampling (perf-event clock) that live on after the parent's
    stop: none holds a perf event (each is the parent's, on a thread of the parent's: a child
    keeping one would keep it counting after the parent closed its own); after the stop the
    parent runs on with SIGPROF back at its default (terminate) and no event left to fire."""
    t = spawn(python, SAMPLE, args=("--fork", "--fork-linger", "--threads", "1"))
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "500", check=True)
    assert "perf-event clock" in r.stdout, r.stdout
    deadline = time.time() + 10
    while time.time() < deadline and perf_fds(t.pid) < 2:
        time.sleep(0.1)
    assert perf_fds(t.pid) >= 2
    deadline = time.time() + 20
    kids = []
    while time.time() < deadline and len(kids) < 3:
        kids = [int(k) for k in re.findall(r"^ok child (\d+)$", t.output(), re.M)]
        time.sleep(0.2)
    alive = [k for k in kids if os.path.exists("/proc/%d/fd" % k)]
    assert alive, kids
    for k in alive:
        try:
            assert perf_fds(k) == 0, k
        except FileNotFoundError:  # exited meanwhile
            pass
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert perf_fds(t.pid) == 0 and sigcgt(t.pid) & SIGPROF_BIT == 0
    deadline = time.time() + 15  # the children linger 3 s: hundreds of the parent's periods
    while time.time() < deadline and not re.search(r"^ok forks [3-9]", t.output(), re.M):
        time.sleep(0.2)
    t.assert_responsive()
    m = re.findall(r"^ok forks (\d+) bad (\d+)$", t.output(), re.M)
    assert m and int(m[-1][0]) >= 3 and m[-1][1] == "0", t.output()[-300:]
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_perf_event_clock(python, spawn):
    """cpu mode's default clock here (root may count its threads' task clock): one perf event
    per sampled thread, no POSIX timer; at 1000 Hz few samples are missed (the kernel runs the
    events on high-resolution timers; this machine's 250 Hz tick merged three of four CPU-timer
    expirations at 1000 Hz); stop closes every event. `--clock timers` uses POSIX timers and no
    event."""
    t = spawn(python, SAMPLE, args=("--threads", "2"))
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "1000", check=True)
    assert "(cpu mode, perf-event clock, user time only)" in r.stdout and \
        "clock: CPU timers" not in r.stdout
    time.sleep(0.5)
    assert perf_fds(t.pid) >= 3 and prof_timers(t.pid) == 0
    time.sleep(2)
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    n, missed = counts(r.stdout)
    assert "1000 Hz, perf-event clock" in r.stdout
    assert n >= 300 and missed * 10 <= n, r.stdout
    assert perf_fds(t.pid) == 0 and prof_timers(t.pid) == 0
    assert sigcgt(t.pid) & SIGPROF_BIT == 0
    r = probing("-p", t.pid, "perf", "--cc", "--clock", "timers", "--rate", "200", check=True)
    assert "(cpu mode, CPU-timer clock)" in r.stdout and "clock: CPU timers, not" not in r.stdout
    time.sleep(0.5)
    assert perf_fds(t.pid) == 0 and prof_timers(t.pid) >= 3
    time.sleep(1)
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert "200 Hz, CPU-timer clock" in r.stdout and counts(r.stdout)[0] >= 30, r.stdout
    assert prof_timers(t.pid) == 0
    t.assert_responsive()
    t.check_output_clean()


def auto_takes_timers(rate):
    """What the probe's auto clock should take here: CPU timers at most half the tick rate
    (the resolution of CLOCK_MONOTONIC_COARSE, clock id 6) on x86-64 with Linux 5.9+."""
    import platform
    hz = round(1 / time.clock_getres(6))
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    return platform.machine() == "x86_64" and (major, minor) >= (5, 9) and rate * 2 <= hz


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_auto_clock_takes_timers_where_the_tick_serves_the_rate(python, spawn):
    """auto takes CPU timers at rates up to half the kernel's tick rate (no event per thread,
    whose timer the kernel reprograms at each context switch), perf events above; the summary
    names the clock, and no "clock:" note (timers were chosen, not fallen back to). On this
    machine (250 Hz tick, x86-64, 6.x) 100 Hz, the default, is timers and 200 Hz events."""
    hz = round(1 / time.clock_getres(6))
    t = spawn(python, SAMPLE, args=("--threads", "2"))
    for rate in (None, 50, hz // 2, hz // 2 + 1, 1000):
        args = ("--rate", str(rate)) if rate else ()
        r = probing("-p", t.pid, "perf", "--cc", *args, check=True)
        timers = auto_takes_timers(rate or 100)
        assert ("CPU-timer clock" if timers else "perf-event clock, user time only") in \
            r.stdout and "clock:" not in r.stdout, (rate, r.stdout)
        deadline = time.time() + 5
        while time.time() < deadline and (prof_timers(t.pid) if timers else perf_fds(t.pid)) < 3:
            time.sleep(0.05)
        if timers:
            assert prof_timers(t.pid) >= 3 and perf_fds(t.pid) == 0, rate
        else:
            assert perf_fds(t.pid) >= 3 and prof_timers(t.pid) == 0, rate
        time.sleep(0.5)
        r = probing("-p", t.pid, "perf", "--stop", check=True)
        n, missed = counts(r.stdout)
        assert n >= 20 and missed * 10 <= n, (rate, r.stdout)
        assert perf_fds(t.pid) == 0 and prof_timers(t.pid) == 0
    t.assert_responsive()
    t.check_output_clean()


def task_times(pid):
    """{tid: (utime, stime)} of the process's threads, in clock ticks (/proc/PID/task/*/stat)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]), int(fields[12]))
    return out


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_events_clock_reckons_missed_from_user_time(python, spawn):
    """The events clock counts user time only (a period that ends in the kernel is skipped by
    the kernel: no sample cuts a system call short), so missed samples are reckoned against
    each thread's user time: a thread spending most of its CPU time in the kernel (reads from
    /dev/zero) is sampled in its own code and adds no missed sample. Reckoned from the whole
    CPU clock, as before, its kernel time counted as missed: a third of the total here."""
    t = spawn(python, SAMPLE, args=("--syscalls",))
    before = task_times(t.pid)
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "1000", "--duration", "3", check=True)
    after = task_times(t.pid)
    assert "perf-event clock, user time only" in r.stdout, r.stdout
    # The premise: one thread spent at least half of its CPU time in the kernel meanwhile.
    kernel = [(a[1] - before[tid][1], a[0] + a[1] - sum(before[tid]))
              for tid, a in after.items() if tid in before]
    assert any(k * 2 >= c > 20 for k, c in kernel), kernel
    n, missed = counts(r.stdout)
    assert n >= 300 and missed * 20 <= n, r.stdout
    rows = query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_name = 'syscaller'")
    assert rows[0][0] >= 20, rows
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_events_leave_the_hosts_descriptors(python, spawn):
    """Under an open-file limit of 128, at most 16 perf events (an eighth of it): the other
    busy threads are sampled with CPU timers, every thread is sampled, and stop removes
    both."""
    t = spawn(python, SAMPLE, args=("--nofile", "128", "--threads", "20"))
    probing("-p", t.pid, "perf", "--cc", "--rate", "200", check=True)
    deadline = time.time() + 10
    while time.time() < deadline and perf_fds(t.pid) + prof_timers(t.pid) < 21:
        time.sleep(0.1)
    assert perf_fds(t.pid) == 16 and prof_timers(t.pid) >= 5, (perf_fds(t.pid),
                                                               prof_timers(t.pid))
    time.sleep(2)
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert "perf-event clock" in r.stdout
    rows = query(t.pid, "SELECT thread_name, COUNT(*) FROM perf.samples GROUP BY thread_id")
    names = {n for n, c in rows if c >= 1}
    assert {"MainThread"} | {"busy-%d" % i for i in range(20)} <= names, rows
    assert perf_fds(t.pid) == 0 and prof_timers(t.pid) == 0
    t.assert_responsive()
    t.check_output_clean()


def test_perf_event_clock_of_another_user(spawn):
    """A target and a CLI of a user without privileges (nobody): the clock follows
    kernel.perf_event_paranoid, and the summary says which: events (user time only, at any
    level) at 2 or less (this machine: 2), CPU timers with the reason above."""
    logdir = tempfile.mkdtemp(prefix="probing-test-")
    os.chmod(logdir, 0o777)
    try:
        t = spawn("/usr/bin/python3", SAMPLE, args=("--threads", "1"),
                  env={"PROBING_LOG": os.path.join(logdir, "probe.log"), "TMPDIR": logdir},
                  launcher=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        t.log_path = os.path.join(logdir, "probe.log")
        r = probing("-p", t.pid, "perf", "--cc", "--rate", "500", "--duration", "1.5",
                    user="nobody", check=True)
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
        if paranoid <= 2:  # user time only at any level (a sample never cuts a wait short)
            assert "500 Hz, perf-event clock, user time only)" in r.stdout, r.stdout
        else:
            assert "500 Hz, CPU-timer clock)" in r.stdout, r.stdout
            assert ("clock: CPU timers, not perf events (perf_event_open: Permission denied; "
                    "kernel.perf_event_paranoid is %d)" % paranoid) in r.stdout, r.stdout
        assert counts(r.stdout)[0] >= 50, r.stdout
        probing("-p", t.pid, "perf", "--stop", user="nobody", check=True)
        assert perf_fds(t.pid) == 0
        t.assert_responsive()
        t.check_output_clean()
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_stop_leaves_a_reused_descriptor_alone(python, spawn):
    """The target closes the sampler's perf events behind its back (as a library that closes
    every descriptor it did not open would) and opens files that take their numbers: stop
    neither disables nor closes what is no longer its own, and the target keeps its files."""
    t = spawn(python, SAMPLE, args=("--threads", "1"))
    probing("-p", t.pid, "perf", "--cc", "--rate", "200", check=True)
    deadline = time.time() + 10
    while time.time() < deadline and perf_fds(t.pid) < 2:
        time.sleep(0.1)
    assert perf_fds(t.pid) >= 2
    ours = []
    for fd in os.listdir("/proc/%d/fd" % t.pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (t.pid, fd)) == "anon_inode:[perf_event]":
                ours.append(int(fd))
        except OSError:
            pass
    probing("-p", t.pid, "eval", "import builtins, os; [os.close(f) for f in %r]; "
            "builtins.MINE = [os.open('/dev/null', os.O_RDONLY) for f in %r]" % (ours, ours),
            check=True)
    mine = ast.literal_eval(probing("-p", t.pid, "eval", "sorted(MINE)", check=True).stdout)
    assert perf_fds(t.pid) == 0 and mine, mine
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert ast.literal_eval(probing("-p", t.pid, "eval", "[os.readlink('/proc/self/fd/%d' % f) "
                                    "for f in MINE]", check=True).stdout) == ["/dev/null"] * len(mine)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_perf_events_refused(python, spawn):
    """A target whose seccomp filter refuses perf_event_open (as a container's default profile
    does): auto falls back to CPU timers at a rate it would take events for (1000 Hz),
    samples, and says why in one line; `--clock events` is a one-line error (exit 1) that
    leaves nothing installed."""
    t = spawn(python, SAMPLE, args=("--threads", "1", "--no-perf-events"))
    r = probing("-p", t.pid, "perf", "--cc", "--rate", "1000", "--duration", "1.5", check=True)
    assert "(cpu mode, 1000 Hz, CPU-timer clock)" in r.stdout, r.stdout
    assert re.search(r"^clock: CPU timers, not perf events \(perf_event_open: Permission denied; "
                     r"kernel.perf_event_paranoid is -?\d+\): the kernel checks", r.stdout, re.M)
    assert counts(r.stdout)[0] >= 10 and perf_fds(t.pid) == 0 and prof_timers(t.pid) >= 2
    probing("-p", t.pid, "perf", "--stop", check=True)
    r = probing("-p", t.pid, "perf", "--cc", "--clock", "events")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and r.stdout == "", r
    assert r.stderr.startswith('probing: error: perf --cc: the "events" clock: the kernel '
                               "refuses perf events here (perf_event_open: Permission denied;"), \
        r.stderr
    assert 'ask for the "timers" clock' in r.stderr
    assert sigcgt(t.pid) & SIGPROF_BIT == 0 and prof_timers(t.pid) == 0
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert "stopped" not in r.stdout
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_thread_blocking_sigprof_counts_missed(python, spawn):
    t = spawn(python, SAMPLE, args=("--block",))
    r = probing("-p", t.pid, "perf", "--cc", "--duration", "2", check=True)
    m = re.search(r"; (\d+) missed, (\d+) lost;", r.stdout)
    assert m and int(m.group(1)) >= 10, r.stdout
    rows = query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_name = 'blocker'")
    assert rows[0][0] == 0
    assert query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_id = %d" % t.pid)[0][0] >= 10
    t.assert_responsive()
    # Stop with a SIGPROF pending in the blocking thread: flushed, SIG_DFL back, no death.
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert sigcgt(t.pid) & SIGPROF_BIT == 0 and prof_timers(t.pid) == 0
    for tid in os.listdir("/proc/%d/task" % t.pid):
        with open("/proc/%d/task/%s/status" % (t.pid, tid)) as f:
            pnd = int(re.search(r"^SigPnd:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)
        assert pnd & SIGPROF_BIT == 0, tid
    probing("-p", t.pid, "eval", "PROF_HITS", check=True)  # GIL and main loop fine
    t.assert_responsive()
    t.check_output_clean()


def sigblk(pid, tid):
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        return int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)


@pytest.mark.parametrize("python", PYTHONS)
def test_thread_started_by_eval_is_sampled(python, spawn):
    t = spawn(python, SAMPLE)
    own = set(os.listdir("/proc/%d/task" % t.pid))
    probing("-p", t.pid, "eval", "import threading; threading.Thread(target=lambda: all(x < 1 "
            "for x in iter(int, 1)), name='spawned', daemon=True).start()", check=True)
    tid = int(probing("-p", t.pid, "eval", "[t.native_id for t in threading.enumerate() "
                      "if t.name == 'spawned'][0]", check=True).stdout)
    assert sigblk(t.pid, tid) == sigblk(t.pid, t.pid)
    r = probing("-p", t.pid, "perf", "--cc", "--duration", "2", check=True)
    n = query(t.pid, "SELECT COUNT(*) FROM perf.samples WHERE thread_id = %d" % tid)[0][0]
    assert n >= 5, r.stdout
    assert query(t.pid, "SELECT DISTINCT thread_name FROM perf.samples WHERE thread_id = %d"
                 % tid) == [["spawned"]]
    probing("-p", t.pid, "perf", "--stop", check=True)
    # The probe's own threads (the evaluator included) block every signal once it is over.
    ours = set(os.listdir("/proc/%d/task" % t.pid)) - own - {str(tid)}
    assert len(ours) >= 2, ours
    for task in ours:
        unblockable = (1 << 8) | (1 << 18) | (3 << 31)  # SIGKILL, SIGSTOP, glibc's 32 and 33
        assert sigblk(t.pid, int(task)) | unblockable == (1 << 64) - 1, task
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_inject_pprof_and_restart(python, spawn):
    t = spawn(python, SAMPLE)
    r = probing("-p", t.pid, "inject", "-P", check=True)
    assert "sampling every thread at 100 Hz (cpu mode, %s)" % (
        "CPU-timer clock" if auto_takes_timers(100) else "perf-event clock, user time only") in \
        r.stdout, r.stdout
    r = probing("-p", t.pid, "perf", "--cc")
    assert r.returncode == 1 and r.stderr.count("\n") == 1
    assert "already running" in r.stderr and "perf --stop" in r.stderr
    time.sleep(1)
    n1 = status(t.pid)[0]
    assert n1 >= 10
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert r.stdout.startswith("perf --cc stopped\n")
    # A new start clears the last profile.
    probing("-p", t.pid, "perf", "--cc", "--rate", "10", check=True)
    assert status(t.pid)[0] < n1
    probing("-p", t.pid, "perf", "--cc", "--stop", check=True)
    t.assert_responsive()
    t.check_output_clean()


BAD = [
    (["--cc", "--rate", "0"], "--rate '0': expected an integer from 1 to 1000"),
    (["--cc", "--rate", "abc"], "--rate 'abc'"),
    (["--cc", "--rate"], "--rate needs a value"),
    (["--cc", "--duration", "-1"], "--duration '-1': expected seconds"),
    (["--cc", "--mode", "gpu"], "--mode 'gpu': expected cpu or wall"),
    (["--cc", "--frobnicate"], "unknown option '--frobnicate'"),
    (["--cc", "--stop", "--rate", "10"], "--stop takes no other option"),
    (["--cc", "--stop", "--clock", "timers"], "--stop takes no other option"),
    (["--cc", "--clock", "tick"], "--clock 'tick': expected auto, events or timers"),
    (["--cc", "--clock"], "--clock needs a value"),
    (["--cc", "--mode", "wall", "--clock", "events"], "--clock is for cpu mode only"),
]


@pytest.mark.parametrize("args,msg", BAD)
def test_bad_arguments(args, msg):
    r = probing("-p", os.getpid(), "perf", *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("probing: error: perf --cc: ") and msg in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""


def test_help():
    r = probing("perf", "--cc", "--help", check=True)
    for opt in ("--rate HZ", "--duration S", "--mode cpu|wall", "--clock auto|events|timers",
                "--clock C", "--stop"):
        assert opt in r.stdout


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_progress_on_a_terminal_only(python, spawn):
    import pty
    t = spawn(python, SAMPLE)
    master, slave = pty.openpty()
    try:
        p = subprocess.run([CLI, "-p", str(t.pid), "perf", "--cc", "--duration", "1.5"],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert p.returncode == 0
    assert re.search(rb"\rsampling: 1\.0/1\.5 s, \d+ samples", err), err  # progress, then cleared
    assert err.endswith(b"\r"), err
    assert p.stdout.startswith("perf --cc: ")  # the summary on stdout, no progress there
    probing("-p", t.pid, "perf", "--stop", check=True)
    t.check_output_clean()


@pytest.mark.parametrize("args,msg", [
    ([], "perf: say what to profile: --cc"),
    (["--cc", "--torch"], "--cc and --torch are separate commands"),
    (["--bogus"], "perf: unknown option '--bogus'"),
])
def test_perf_command_usage(args, msg):
    r = probing("-p", os.getpid(), "perf", *args)
    assert r.returncode == 2 and r.stderr.startswith("probing: error: ") and msg in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    r = probing("perf", "--help", check=True)
    for opt in ("--cc", "--torch", "--stop", "--rate HZ", "--every N", "--trace FILE"):
        assert opt in r.stdout
