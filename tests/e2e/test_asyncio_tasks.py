# SPDX-License-Identifier: MIT
"""probing -p PID debug --dump --tasks and python.asyncio_tasks (issue 41): every asyncio task of
every event loop of samples/asyncio_tasks.py (three loops: the main thread's and two threads'),
with its state, coroutine chain (function and exact line, innermost first), what it awaits and
who awaits it, the await cycle of two tasks awaiting each other named as a deadlock. On every
CPython the machine has (3.14+ keeps the C tasks on per-thread lists, not in asyncio's WeakSet:
the sid root's)."""
import glob
import json
import os
import re
import resource
import signal

import pytest

import sidroot
from conftest import PYTHONS, bp, probing

S = "asyncio_tasks.py"


def keeps_done(version):
    """3.8-3.13 keep a finished task in asyncio's WeakSet while it is referenced; 3.14+ takes a C
    task off its thread's list when it finishes (asyncio.all_tasks() shows pending ones only),
    so a dump there shows pending tasks only."""
    return tuple(int(x) for x in version.split(".")[:2]) < (3, 14)


def tasks_of(pid):
    r = probing("-p", pid, "debug", "--dump", "--tasks", "--json", check=True)
    d = json.loads(r.stdout)
    a = d["asyncio"]
    assert a["read"] is True and a["via"] == "gil", a
    return d, a, {t["name"]: t for t in a["tasks"]}


def chain(t):
    """(function, line) innermost first; the function's last dotted part (3.11+ qualnames)."""
    return [(f["name"].rsplit(".", 1)[-1], f["line"]) for f in t["frames"]]


def ours(t):
    return [(n, l) for (n, l), f in zip(chain(t), t["frames"]) if f["file"].endswith("/" + S)]


def in_asyncio(f, name, module):
    return f["name"].rsplit(".", 1)[-1] == name and f["file"].endswith("/asyncio/%s.py" % module)


@pytest.mark.parametrize("python", PYTHONS)
def test_tasks_json(python, spawn):
    t = spawn(python, S)
    d, a, by = tasks_of(t.pid)
    ids = {x["id"]: x["name"] for x in a["tasks"]}
    names = set(by)
    expect = {"main", "napper", "future-waiter", "task-waiter", "consumer", "lock-holder",
              "lock-wanter", "dl-a", "dl-b", "executor", "g1", "g2", "gatherer", "finished",
              "cancelled", "loop-a-main", "loop-a-serve", "loop-b-main", "loop-b-serve",
              "loop-c-busy"}
    if not keeps_done(d["python"]):
        expect -= {"finished", "cancelled"}
    assert names == expect, names ^ expect
    # States.
    if keeps_done(d["python"]):
        assert by["finished"]["state"] == "done" and by["finished"]["frames"] == []
        assert by["cancelled"]["state"] == "cancelled" and by["cancelled"]["frames"] == []
    assert all(by[n]["state"] == "pending" for n in expect - {"finished", "cancelled"})
    # All suspended but one, whose coroutine blocks in time.sleep() (in loop-c's thread): its
    # outer coroutine's line; what it awaits runs in the thread's stack, not followed.
    assert [x["name"] for x in a["tasks"] if x["running"]] == ["loop-c-busy"]
    busy = by["loop-c-busy"]
    assert chain(busy) == [("run", bp(S, "busy_await"))] and busy["waiter"] is None
    assert busy["threadId"] == t.ready["threads"]["loop-c"]
    loopc = [x for x in d["threads"] if x["name"] == "loop-c"][0]
    assert (loopc["frames"][0]["name"], loopc["frames"][0]["line"]) == ("busy", bp(S, "busy_sleep"))
    # A sleep under a coroutine of ours, under another: innermost first, exact lines.
    nap = by["napper"]
    assert in_asyncio(nap["frames"][0], "sleep", "tasks"), nap["frames"]
    assert ours(nap) == [("nap", bp(S, "nap_sleep")), ("sleeper", bp(S, "sleeper_nap"))]
    assert nap["coroutine"] == "sleeper"
    assert nap["waiter"]["type"].endswith("Future") and nap["awaits"] == []
    # A future nobody completes.
    fw = by["future-waiter"]
    assert chain(fw) == [("wait_future", bp(S, "future_await"))]
    assert fw["waiter"]["type"].endswith("Future") and fw["awaits"] == []
    # Another task: the edge both ways.
    tw = by["task-waiter"]
    assert chain(tw) == [("wait_task", bp(S, "task_await"))]
    assert [ids[i] for i in tw["awaits"]] == ["napper"]
    assert [ids[i] for i in nap["awaitedBy"]] == ["task-waiter"]
    assert tw["waiter"]["id"] == nap["id"]
    # A queue: Queue.get in asyncio/queues.py, then ours.
    c = by["consumer"]
    assert in_asyncio(c["frames"][0], "get", "queues"), c["frames"]
    assert ours(c) == [("consume", bp(S, "queue_get"))]
    # A lock another task holds: Lock.acquire, __aenter__, then ours; the holder sleeps.
    lw = by["lock-wanter"]
    assert in_asyncio(lw["frames"][0], "acquire", "locks") and \
        in_asyncio(lw["frames"][1], "__aenter__", "locks"), lw["frames"]
    assert ours(lw) == [("want", bp(S, "lock_want"))]
    assert ours(by["lock-holder"]) == [("hold", bp(S, "lock_hold"))]
    # Two tasks awaiting each other: one cycle, both in it.
    da, db = by["dl-a"], by["dl-b"]
    assert chain(da) == chain(db) == [("deadlock", bp(S, "deadlock_await"))]
    assert [ids[i] for i in da["awaits"]] == ["dl-b"] and [ids[i] for i in db["awaits"]] == ["dl-a"]
    assert len(a["cycles"]) == 1 and sorted(ids[i] for i in a["cycles"][0]) == ["dl-a", "dl-b"]
    assert da["cycle"] == db["cycle"] == 1
    assert all(x["cycle"] is None for x in a["tasks"] if x["name"] not in ("dl-a", "dl-b"))
    # run_in_executor: the task waits on the future of the executor's job.
    ex = by["executor"]
    assert chain(ex) == [("in_executor", bp(S, "executor_await"))]
    assert ex["waiter"]["type"].endswith("Future") and ex["awaits"] == []
    # gather: the children are awaited.
    g = by["gatherer"]
    assert chain(g) == [("gatherer", bp(S, "gather_await"))]
    assert g["waiter"]["type"] == "_GatheringFuture"
    assert sorted(ids[i] for i in g["awaits"]) == ["g1", "g2"]
    assert [ids[i] for i in by["g1"]["awaitedBy"]] == ["gatherer"]
    assert ours(by["g1"]) == [("nap", bp(S, "nap_sleep"))]
    # The main task, ticking.
    assert ours(by["main"]) == [("main", bp(S, "main_tick"))]
    # Three loops, each on its own thread: the thread ids are python.threads' (the dump's).
    threads = {x["name"]: x["id"] for x in d["threads"]}
    main_loop = by["main"]["loop"]
    for n in expect - {"loop-a-main", "loop-a-serve", "loop-b-main", "loop-b-serve", "loop-c-busy"}:
        assert by[n]["loop"] == main_loop and by[n]["threadId"] == t.pid == threads["MainThread"], n
    loops = {main_loop}
    for label in ("loop-a", "loop-b"):
        m, s = by[label + "-main"], by[label + "-serve"]
        assert m["loop"] == s["loop"] and m["loop"] not in loops
        loops.add(m["loop"])
        assert m["threadId"] == s["threadId"] == t.ready["threads"][label] == threads[label]
        assert ours(m) == [("run", bp(S, "thread_await"))]
        assert ours(s) == [("thread_serve", bp(S, "thread_sleep"))]
        assert [ids[i] for i in m["awaits"]] == [label + "-serve"]
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_tasks_text_tree(python, spawn):
    t = spawn(python, S)
    out = probing("-p", t.pid, "debug", "--dump", "--tasks", check=True).stdout
    version = re.search(r"^Process \d+, CPython (\S+),", out, re.M).group(1)
    n = 20 if keeps_done(version) else 18
    assert re.search(r"^asyncio: %d tasks, read with the GIL$" % n, out, re.M), out
    assert re.search(r'^deadlock: await cycle: "dl-(a|b)" -> "dl-(b|a)" -> "dl-\1"$', out, re.M), out
    assert re.search(r'^Loop 0x[0-9a-f]+ in thread %d "MainThread"$' % t.pid, out, re.M), out
    for label in ("loop-a", "loop-b", "loop-c"):
        assert re.search(r'^Loop 0x[0-9a-f]+ in thread %d "%s"$' % (t.ready["threads"][label], label),
                         out, re.M), out
    assert re.search(r'^└── \(T\) "loop-c-busy" pending, running\n {7}(\S+\.)?run \(.*/%s:%d\)$'
                     % (S, bp(S, "busy_await")), out, re.M), out
    # The awaited task is drawn under the one awaiting it, its chain innermost first.
    line = bp(S, "task_await")
    m = re.search(r'^(\S*)── \(T\) "task-waiter" pending, awaits task "napper"\n'
                  r'(.*)  wait_task \(.*/%s:%d\)\n'
                  r'.*└── \(T\) "napper" pending, awaits _asyncio\.Future 0x[0-9a-f]+\n'
                  r'.*  sleep \(.*/asyncio/tasks\.py:\d+\)\n'
                  r'.*  nap \(.*/%s:%d\)\n'
                  r'.*  sleeper \(.*/%s:%d\)\n' % (S, line, S, bp(S, "nap_sleep"), S,
                                                  bp(S, "sleeper_nap")), out, re.M)
    assert m, out
    assert re.search(r'\(T\) "dl-(a|b)" pending \(await cycle: see above\)', out), out
    if keeps_done(version):
        assert re.search(r'\(T\) "finished" done\n', out) and \
            re.search(r'\(T\) "cancelled" cancelled\n', out), out
    # The threads' stacks come first, as plain --dump prints them.
    assert out.index('"MainThread"') < out.index("asyncio:")
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_tasks_sql(python, spawn):
    t = spawn(python, S)
    r = probing("-p", t.pid, "query",
                "SELECT a.name, a.state, a.func, a.lineno, a.awaits_type, a.cycle, t.name AS thread "
                "FROM python.asyncio_tasks a JOIN python.threads t USING (thread_id) "
                "ORDER BY a.name", "--format", "json", check=True)
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    version = probing("-p", t.pid, "eval", "import sys; '%d.%d' % sys.version_info[:2]",
                      check=True).stdout.strip().strip("'")
    assert len(rows) == (20 if keeps_done(version) else 18), rows
    assert rows["future-waiter"]["func"] == "wait_future" and \
        rows["future-waiter"]["lineno"] == bp(S, "future_await")
    assert rows["loop-b-serve"]["thread"] == "loop-b" and rows["main"]["thread"] == "MainThread"
    assert rows["dl-a"]["cycle"] == rows["dl-b"]["cycle"] == 1 and rows["napper"]["cycle"] is None
    assert rows["gatherer"]["awaits_type"] == "_GatheringFuture"
    if keeps_done(version):
        assert rows["finished"]["state"] == "done" and rows["finished"]["func"] is None
    r = probing("-p", t.pid, "query",
                "SELECT w.name AS waiter, n.name AS awaited FROM python.asyncio_tasks w "
                "JOIN python.asyncio_tasks n ON n.awaited_by = w.task ORDER BY 1, 2",
                "--format", "json", check=True)
    pairs = [(x["waiter"], x["awaited"]) for x in json.loads(r.stdout)]
    assert ("task-waiter", "napper") in pairs and ("loop-a-main", "loop-a-serve") in pairs, pairs
    r = probing("-p", t.pid, "query", "SELECT stack FROM python.asyncio_tasks WHERE name = 'napper'",
                "--format", "json", check=True)
    stack = json.loads(r.stdout)[0]["stack"].split(";")
    assert stack[1].endswith("/%s:%d)" % (S, bp(S, "nap_sleep"))) and stack[1].startswith("nap ("), stack
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS[:1])
def test_tasks_without_asyncio_and_usage(python, spawn):
    """A program that never imported asyncio has no tasks (nothing is imported for it); --tasks
    goes with --dump only, and with --no-inject only on 3.14+."""
    t = spawn(python)  # threads.py
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--tasks", "--json", check=True).stdout)
    assert d["asyncio"] == {"read": True, "via": "gil", "truncated": False, "tasks": [], "cycles": []}
    r = probing("-p", t.pid, "eval", "import sys; 'asyncio' in sys.modules", check=True)
    assert r.stdout.strip() == "False", r.stdout
    r = probing("-p", t.pid, "debug", "--resume", "--tasks")
    assert r.returncode == 2 and "--tasks/--subprocesses/--json only goes with --dump" in r.stderr, r.stderr
    r = probing("-p", t.pid, "debug", "--dump", "--tasks", "--no-inject")
    if minor(d["python"]) < (3, 14):  # 3.14+: test_tasks_no_inject_and_core
        assert r.returncode == 2 and "--tasks needs CPython 3.14+ without the probe" in r.stderr, \
            r.stderr
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS[:1])
def test_tasks_when_gil_held_forever(python, spawn):
    """The tasks are read with the GIL: when a C call holds it forever, the threads are dumped
    (read without it) and the tasks are not, with the reason, in JSON and text."""
    t = spawn(python, "stuck_gil.py")
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--tasks", "--json", check=True).stdout)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["line"] == bp("stuck_gil.py", "stuck_call")
    a = d["asyncio"]
    assert a["read"] is False and "tasks" not in a, a
    assert a["error"].startswith("the GIL is held by thread %d" % t.pid), a
    assert a["error"].endswith("asyncio tasks are read with the GIL: not read"), a
    out = probing("-p", t.pid, "debug", "--dump", "--tasks", check=True).stdout
    assert re.search(r"^asyncio tasks: not read: the GIL is held by thread %d .*: asyncio tasks "
                     r"are read with the GIL: not read$" % t.pid, out, re.M), out
    r = probing("-p", t.pid, "query", "SELECT count(*) FROM python.asyncio_tasks")
    assert r.returncode == 1 and "python.asyncio_tasks needs the GIL: it is held by thread %d" % t.pid \
        in r.stderr, r.stderr
    assert t.proc.poll() is None
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_tasks_leave_no_references(python, spawn):
    """Reading the tasks keeps nothing of the target's: every task's, coroutine's and loop's
    reference count is back where it was, and so is the number of objects the gc tracks."""
    t = spawn(python, S)
    count = ("import gc, sys; gc.collect(); ts = sorted((x for x in gc.get_objects() "
             "if type(x).__name__ == 'Task'), key=lambda x: x.get_name()); "
             "([(x.get_name(), sys.getrefcount(x), sys.getrefcount(x._coro), "
             "sys.getrefcount(x._loop)) for x in ts], len(gc.get_objects()))")

    def counts():
        return probing("-p", t.pid, "eval", count, check=True).stdout.strip()

    counts()  # the probe's own first-use objects (its helper) are made here
    before = counts()
    for _ in range(3):
        tasks_of(t.pid)
        probing("-p", t.pid, "query", "SELECT count(*) FROM python.asyncio_tasks", check=True)
    after = counts()
    refs0, objs0 = before.rsplit(", ", 1)
    refs1, objs1 = after.rsplit(", ", 1)
    assert "napper" in refs0 and refs1 == refs0, (before, after)
    assert abs(int(objs1.rstrip(")")) - int(objs0.rstrip(")"))) < 20, (before, after)
    t.assert_responsive()
    t.check_output_clean()


def minor(version):
    return tuple(int(x) for x in version.split(".")[:2])


@pytest.mark.parametrize("python", PYTHONS)
def test_tasks_without_the_gil(python, spawn):
    """A loop thread's tasks while the main thread holds the GIL forever in C
    (samples/asyncio_stuck_gil.py): 3.14+ keeps the pending C tasks on per-thread lists, read
    without the GIL ("via": "memory", "read without the GIL"): names, coroutine chains with
    exact lines, who awaits whom from the tasks' awaited_by, the await cycle, the loop's thread;
    before 3.14 they are not read, with the reason."""
    G = "asyncio_stuck_gil.py"
    t = spawn(python, G)
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--tasks", "--json", check=True).stdout)
    main = [x for x in d["threads"] if x["main"]][0]
    assert main["frames"][0]["line"] == bp(G, "stuck_call") and d["gil"]["available"] is False
    a = d["asyncio"]
    out = probing("-p", t.pid, "debug", "--dump", "--tasks", check=True).stdout
    if minor(d["python"]) < (3, 14):
        assert a["read"] is False and a["error"].endswith("asyncio tasks are read with the GIL: "
                                                          "not read"), a
        assert "asyncio tasks: not read: the GIL is held by thread %d" % t.pid in out, out
        return
    assert a["read"] is True and a["via"] == "memory", a
    by = {x["name"]: x for x in a["tasks"]}
    ids = {x["id"]: x["name"] for x in a["tasks"]}
    main_task = [n for n in by if re.match(r"^Task-\d+$", n)]
    assert sorted(by) == sorted(["napper", "waiter", "dl-a", "dl-b"] + main_task) and \
        len(main_task) == 1, sorted(by)
    loop_tid = t.ready["threads"]["loop"]
    assert all(x["state"] == "pending" and not x["running"] and x["threadId"] == loop_tid
               for x in a["tasks"]), a["tasks"]
    assert len({x["loop"] for x in a["tasks"]}) == 1 and a["tasks"][0]["loop"] is not None
    nap = by["napper"]
    assert in_asyncio(nap["frames"][0], "sleep", "tasks"), nap["frames"]
    assert [(f["name"], f["line"]) for f in nap["frames"][1:]] == [
        ("nap", bp(G, "nap_sleep")), ("sleeper", bp(G, "sleeper_nap"))], nap["frames"]
    assert nap["coroutine"] == "sleeper"
    assert [(f["name"], f["line"]) for f in by["waiter"]["frames"]] == [("wait_task", bp(G, "task_await"))]
    assert [ids[i] for i in by["waiter"]["awaits"]] == ["napper"]
    assert [ids[i] for i in nap["awaitedBy"]] == ["waiter"]
    m = by[main_task[0]]
    assert [(f["name"], f["line"]) for f in m["frames"]] == [("loop_main", bp(G, "main_gather"))]
    assert sorted(ids[i] for i in m["awaits"]) == ["dl-a", "dl-b", "waiter"], m
    da, db = by["dl-a"], by["dl-b"]
    assert [ids[i] for i in da["awaits"]] == ["dl-b"] and [ids[i] for i in db["awaits"]] == ["dl-a"]
    assert len(a["cycles"]) == 1 and sorted(ids[i] for i in a["cycles"][0]) == ["dl-a", "dl-b"]
    # The text says how they were read.
    assert re.search(r"^asyncio: 5 tasks, read without the GIL \(pending tasks; a future awaited "
                     r"is not known\)$", out, re.M), out
    assert re.search(r'^deadlock: await cycle: "dl-(a|b)" -> "dl-(b|a)" -> "dl-\1"$', out, re.M), out
    assert re.search(r'^Loop 0x[0-9a-f]+ in thread %d "loop"$' % loop_tid, out, re.M), out
    assert t.proc.poll() is None
    t.check_output_clean()


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in ("3.11", "3.14", "3.15")])
def test_table_without_the_gil(python, spawn):
    """python.asyncio_tasks while the main thread holds the GIL forever in C: on 3.14+ the
    pending tasks come from memory, as the dump's (before: the query failed, "needs the GIL");
    before 3.14 the query still fails in one line naming the GIL's holder."""
    t = spawn(python, "asyncio_stuck_gil.py")
    r = probing("-p", t.pid, "query", "--format", "json", "SELECT name, state, func, lineno FROM "
                "python.asyncio_tasks ORDER BY name", timeout=60)
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--json", check=True).stdout)
    if minor(d["python"]) < (3, 14):
        assert r.returncode != 0 and "python.asyncio_tasks needs the GIL" in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1
        return
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert {"napper", "waiter", "dl-a", "dl-b"} <= set(rows), rows
    assert all(row["state"] == "pending" for row in rows.values()), rows
    assert rows["waiter"]["func"] == "wait_task", rows
    assert rows["waiter"]["lineno"] == bp("asyncio_stuck_gil.py", "task_await"), rows


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in ("3.11", "3.14", "3.15")])
def test_tasks_no_inject_and_core(python, spawn, tmp_path):
    """asyncio tasks read from outside (issue 41): samples/asyncio_stuck_gil.py (a loop thread's
    5 tasks, the main thread holding the GIL forever in C, so that the probe too reads them
    from memory); on 3.14 and 3.15 `debug --dump --no-inject --tasks` (nothing loaded: the
    reader, libprobing-read-3.X.so, with the offsets of _asyncio's .AsyncioDebug from the
    target's file through /proc/PID/root) and `dump --core --tasks` of the kernel's core of the
    same process give the very "asyncio" object the probe gives in-process (names, chains with
    lines, awaits both ways, the cycle, loop and thread), JSON and text, and a program without
    asyncio has no tasks; on 3.11 both are refused in one line, exit 2. Before: --no-inject --tasks was refused on every version
    ("needs the probe loaded") and dump --core had no --tasks."""
    G = "asyncio_stuck_gil.py"
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip("kernel cores go where this machine's core_pattern says (%r), not to the "
                    "target's working directory" % pattern)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    old = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    try:
        t = spawn(python, G, cwd=cwd)
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, old)
    outside = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--tasks", "--json")
    outside_text = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--tasks")
    assert not [l for l in open("/proc/%d/maps" % t.pid) if "libprobing" in l]
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--tasks", "--json", check=True).stdout)
    os.kill(t.pid, signal.SIGABRT)
    assert t.proc.wait(timeout=120) == -signal.SIGABRT
    cores = glob.glob(str(cwd / "core*"))
    assert len(cores) == 1, cores
    root = ["--sysroot", sidroot.root()] if sidroot.is_sid(python) else []
    core = probing("dump", "--core", cores[0], "--tasks", "--json", *root)
    core_text = probing("dump", "--core", cores[0], "--tasks", *root)
    if minor(d["python"]) < (3, 14):
        for r, how in ((outside, "without the probe"), (outside_text, "without the probe"),
                       (core, "in a core"), (core_text, "in a core")):
            assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
            assert r.stderr.count("\n") == 1 and "--tasks needs CPython 3.14+ %s (%s keeps no " \
                "task lists" % (how, ".".join(d["python"].split(".")[:2])) in r.stderr, r.stderr
        return
    a = d["asyncio"]
    assert a["read"] is True and a["via"] == "memory", a
    assert sorted(x["name"] for x in a["tasks"] if not x["name"].startswith("Task-")) == [
        "dl-a", "dl-b", "napper", "waiter"], a["tasks"]
    nap = [x for x in a["tasks"] if x["name"] == "napper"][0]
    assert [(f["name"], f["line"]) for f in nap["frames"][1:]] == [
        ("nap", bp(G, "nap_sleep")), ("sleeper", bp(G, "sleeper_nap"))], nap["frames"]
    for r, text in ((outside, outside_text), (core, core_text)):
        assert r.returncode == 0 and text.returncode == 0, (r.stderr, text.stderr)
        got = json.loads(r.stdout)
        assert got["asyncio"] == a, (got["asyncio"], a)
        # the same tree as the probe's text, after the threads
        out = text.stdout
        assert re.search(r"^asyncio: 5 tasks, read without the GIL \(pending tasks; a future "
                         r"awaited is not known\)$", out, re.M), out
        assert re.search(r'^deadlock: await cycle: "dl-(a|b)" -> "dl-(b|a)" -> "dl-\1"$', out,
                         re.M), out
        assert re.search(r'^Loop 0x[0-9a-f]+ in thread %d "loop"$' % t.ready["threads"]["loop"],
                         out, re.M), out
        assert "sleeper (%s:%d)" % (os.path.join(os.path.dirname(nap["frames"][2]["file"]), G),
                                    bp(G, "sleeper_nap")) in out, out
    # A program that never imported asyncio (its _asyncio module not loaded): no tasks, as the
    # probe says, nothing imported.
    p = spawn(python)  # threads.py
    r = probing("-p", p.pid, "debug", "--dump", "--no-inject", "--tasks", "--json", check=True)
    assert json.loads(r.stdout)["asyncio"] == {"read": True, "via": "memory", "truncated": False,
                                               "tasks": [], "cycles": []}, r.stdout
    assert "\nasyncio: 0 tasks, read without the GIL" in probing(
        "-p", p.pid, "debug", "--dump", "--no-inject", "--tasks", check=True).stdout
    assert not [l for l in open("/proc/%d/maps" % p.pid) if "libprobing" in l or "_asyncio" in l]


@pytest.mark.parametrize("python", [p for p in PYTHONS if p.id in ("3.14", "3.15")])
def test_tasks_no_inject_all_loops(python, spawn):
    """`debug --dump --no-inject --tasks` of samples/asyncio_tasks.py (four loops, the GIL free,
    one task running): the same pending tasks as the probe's read with the GIL, each with the
    same thread, coroutine chain (functions and lines), running flag and the tasks it awaits
    (read from memory: a future awaited is not known there), and no probe loaded. Before: refused
    ("--tasks needs the probe loaded")."""
    t = spawn(python, S)
    r = probing("-p", t.pid, "debug", "--dump", "--no-inject", "--tasks", "--json")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)["asyncio"]
    assert not [l for l in open("/proc/%d/maps" % t.pid) if "libprobing" in l]
    _, a, by = tasks_of(t.pid)
    assert o["read"] is True and o["via"] == "memory", o

    def view(tasks):
        names = {x["id"]: x["name"] for x in tasks}
        return {x["name"]: (x["threadId"], x["running"], x["coroutine"],
                            [(f["name"], f["file"], f["line"]) for f in x["frames"]],
                            sorted(names.get(i, "?") for i in x["awaits"]),
                            sorted(names.get(i, "?") for i in x["awaitedBy"]))
                for x in tasks}
    pending = [x for x in a["tasks"] if x["state"] == "pending"]
    assert len(o["tasks"]) == len(pending) == 18, (len(o["tasks"]), len(pending))
    assert view(o["tasks"]) == view(pending)
    assert [x["name"] for x in o["tasks"] if x["running"]] == ["loop-c-busy"], o["tasks"]
    assert sorted(sorted(x["name"] for x in o["tasks"] if x["id"] in c) for c in o["cycles"]) == \
        [["dl-a", "dl-b"]], o["cycles"]
    t.assert_responsive()
