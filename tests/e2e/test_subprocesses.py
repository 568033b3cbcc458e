# SPDX-License-Identifier: MIT
"""--subprocesses: a target's child processes (DataLoader workers, multiprocessing children)
read from outside and shown under their parent (debug --dump) and their rank (cluster stacks,
cluster dump). samples/dataloader_job.py on Debian's python3 with torch 1.13 and on the sid
root's python3.14 with torch 2.14 (in a container; its DataLoader workers are started by
multiprocessing's forkserver there, so they are grandchildren); a plain multiprocessing child,
a `sleep` (no Python), a zombie and another user's Python child beside them; the bound on the
number of children; children forking and exiting while they are read."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import HOST_PYTHONS, bp, probing, sanitizer_env  # noqa: E402
from test_perf_torch import PY_ID, TORCH_PYTHONS, comm_job  # noqa: E402

pytestmark = pytest.mark.serial  # `cluster list` reads every probed process of the node

SAMPLE = "dataloader_job.py"
GETITEM = bp(SAMPLE, "getitem")
DEBIAN = "/usr/bin/python3"


def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def maps_probe(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "libprobing-" in f.read()
    except FileNotFoundError:
        return False


def top(child):
    main = [t for t in child["threads"] if t["main"]][0]
    return main["frames"][0]


def dump_until(pid, extra, ready, timeout=90):
    """debug --dump --subprocesses --json until ready(out) (workers still starting)."""
    deadline = time.time() + timeout
    out = None
    while time.time() < deadline:
        r = probing("-p", pid, "debug", "--dump", "--subprocesses", "--json", *extra)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        if ready(out):
            return out
        time.sleep(0.5)
    raise AssertionError("children never all in place: %s" % json.dumps(out)[-4000:])


def workers_in_getitem(out, n=2):
    ws = [c for c in out.get("children", []) if (c.get("role") or "").startswith("DataLoader")]
    return len(ws) == n and all(c.get("threads") and top(c)["line"] == GETITEM for c in ws)


@pytest.mark.parametrize("mode", ["inject", "no-inject"])
@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_dump_subprocesses(PY, mode, spawn):
    debian = PY_ID[PY] == "torch1-debian"
    t = spawn(PY, SAMPLE, env={"FOREIGN": "1"} if debian else {})
    kids = t.ready["children"]
    extra = ["--no-inject"] if mode == "no-inject" else []
    out = dump_until(t.pid, extra, workers_in_getitem)
    by_pid = {c["pid"]: c for c in out["children"]}
    family = {t.pid} | set(by_pid)
    for c in out["children"]:
        assert c["ppid"] in family, c  # a descendant, its parent named
    # the two DataLoader workers: role and id from _worker_loop's locals, stuck in __getitem__
    for i, w in enumerate(kids["workers"]):
        c = by_pid[w]
        assert c["role"] == "DataLoader worker %d" % i and c["workerId"] == i, c
        assert c["numWorkers"] == 2
        f = top(c)
        assert f["name"] == "Toy.__getitem__" and f["file"].endswith(SAMPLE), f
        assert all("locals" not in fr for th in c["threads"] for fr in th["frames"])
        if debian:  # forked by the main process (3.14's forkserver forks them there)
            assert c["ppid"] == t.pid
        else:
            assert by_pid[c["ppid"]]["role"] == "multiprocessing forkserver", by_pid[c["ppid"]]
    mp = by_pid[kids["mp"]]
    assert mp["role"] == "multiprocessing child" and top(mp)["line"] == bp(SAMPLE, "mp_child")
    sl = by_pid[kids["sleep"]]
    assert sl["python"] is None and sl["note"] == "runs no Python" and "threads" not in sl
    assert sl["cmdline"] == "sleep 1000" and sl["comm"] == "sleep"
    z = by_pid[kids["zombie"]]
    assert z["state"] == "Z" and "zombie" in z["note"] and "threads" not in z
    if debian:
        fo = by_pid[kids["foreign"]]
        assert fo["note"] == "uid 65534, not the target's uid 0: listed, not read", fo
        assert "threads" not in fo and fo["python"] is None
    # the parent itself as without --subprocesses: its main thread waits for the batch
    main = [th for th in out["threads"] if th["main"]][0]
    assert any(fr["line"] == bp(SAMPLE, "wait_batch") for fr in main["frames"])
    # text: each child under its header, the workers with their role
    text = probing("-p", t.pid, "debug", "--dump", "--subprocesses", *extra, check=True).stdout
    for i, w in enumerate(kids["workers"]):
        assert re.search(r"^=== child %d \(parent \d+\): DataLoader worker %d of 2 ===$" % (w, i),
                         text, re.M), text
    assert "Toy.__getitem__ (%s:%d" % (t.script, GETITEM) in text or \
        re.search(r"Toy.__getitem__ \(\S*%s:%d" % (SAMPLE, GETITEM), text), text
    assert re.search(r"^command: sleep 1000\n\(sleep: runs no Python\)$", text, re.M), text
    # no child was injected, none left stopped
    for c in out["children"]:
        assert not maps_probe(c["pid"]), c
        assert state(c["pid"]) != "T", c
    assert maps_probe(t.pid) == (mode == "inject")


def test_subprocesses_only_with_dump_and_local():
    r = probing("-p", os.getpid(), "debug", "--resume", "--subprocesses")
    assert r.returncode == 2 and "--subprocesses/--json only goes with --dump" in r.stderr
    r = probing("-t", "127.0.0.1:1", "debug", "--dump", "--subprocesses")
    assert r.returncode == 2 and "needs a local process" in r.stderr
    r = probing("cluster", "query", "SELECT 1", "--subprocesses")
    assert r.returncode == 2
    assert "--subprocesses only goes with 'cluster stacks' and 'cluster dump'" in r.stderr


FORK_MANY = """
import json, os, subprocess, sys, time
ps = [subprocess.Popen(["sleep", "1000"]) for _ in range(int(sys.argv[1]))]
print("ready " + json.dumps([p.pid for p in ps]), flush=True)
while True:
    time.sleep(3600)
"""

CHURN = """
import os, sys, time
print("ready", flush=True)
n = 0
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    n += 1
    if n % 100 == 0:
        print("forks %d" % n, flush=True)
"""


class Proc:
    def __init__(self, code, *args):
        self.p = subprocess.Popen([DEBIAN, "-c", code, *map(str, args)], stdout=subprocess.PIPE,
                                  text=True, start_new_session=True,
                                  env=dict(os.environ, **sanitizer_env()))
        self.ready = self.p.stdout.readline()
        assert self.ready.startswith("ready"), self.ready

    def kill(self):
        os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait(timeout=10)


def test_children_bounded():
    """At most 64 children are read; the others are counted, and the text says so."""
    p = Proc(FORK_MANY, 70)
    try:
        r = probing("-p", p.p.pid, "debug", "--dump", "--no-inject", "--subprocesses", "--json",
                    check=True)
        out = json.loads(r.stdout)
        assert len(out["children"]) == 64 and out["childrenLeftOut"] == 6
        assert all(c["cmdline"] == "sleep 1000" for c in out["children"])
        text = probing("-p", p.p.pid, "debug", "--dump", "--no-inject", "--subprocesses",
                       check=True).stdout
        assert "64 child processes of %d (more not read: the bound was reached)" % p.p.pid in text
    finally:
        p.kill()


def test_children_forking_and_exiting():
    """A parent that forks a child that exits, over and over: every read answers, the parent
    goes on forking, and no child is ever left stopped."""
    p = Proc(CHURN)
    try:
        for i in range(30):
            mode = ["--no-inject"] if i % 2 else []
            r = probing("-p", p.p.pid, "debug", "--dump", "--subprocesses", "--json", *mode)
            assert r.returncode == 0, r.stderr
            json.loads(r.stdout)["children"]  # noqa: B018 (present, possibly empty)
            stopped = [l for l in subprocess.run(["ps", "-o", "pid=,stat=", "--ppid",
                                                  str(p.p.pid)], capture_output=True,
                                                 text=True).stdout.splitlines() if "T" in l]
            assert not stopped, stopped
        before = p.p.stdout.readline()
        after = p.p.stdout.readline()
        assert before.startswith("forks") and after.startswith("forks") and before != after
    finally:
        p.kill()


def job_with(pid):
    out = json.loads(probing("cluster", "list", "--json", check=True).stdout)
    for j in out["jobs"]:
        if pid in [r["pid"] for r in j["ranks"]]:
            return j["job"]
    raise AssertionError("pid %d is in no job: %s" % (pid, out))


def child_groups(out):
    return [g for g in out["groups"] if g.get("children")]


def loader_groups(out):
    """The groups of DataLoader workers (3.14's forkserver and resource tracker are children
    too, in groups of their own)."""
    return [g for g in child_groups(out)
            if all((p["role"] or "").startswith("DataLoader") for p in g["processes"])]


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_cluster_stacks_subprocesses(PY, tmp_path):
    """Two ranks, each with 2 DataLoader workers: rank 1's workers block in __getitem__, rank 1
    waits for them, rank 0 waits in all_reduce for rank 1. cluster stacks --subprocesses groups
    the workers like ranks: rank 1's two in Toy.__getitem__, rank 0's two idle in _worker_loop;
    the same with --no-inject; cluster dump --subprocesses writes them in each rank's files."""
    job = comm_job(PY, tmp_path, {}, nproc=2, script=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..", "samples", SAMPLE))
    try:
        ranks = {r["rank"]: r for r in job.ready}
        name = job_with(ranks[0]["pid"])
        deadline = time.time() + 90
        out = None
        while time.time() < deadline:
            r = probing("cluster", "stacks", "--job", name, "--subprocesses", "--json",
                        timeout=120)
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            got = {g["frames"][0]["func"]: g for g in loader_groups(out) if g["frames"]}
            # In place: rank 1's workers blocked, rank 0's idle, and rank 0 past `next(it)`
            # (its workers go idle while its main thread still unpickles the item, where its
            # stack is rank 1's: one group of both until it reaches all_reduce).
            own = [g for g in out["groups"] if not g.get("children")]
            if "Toy.__getitem__" in got and len(got["Toy.__getitem__"]["processes"]) == 2 \
                    and sum(len(g["processes"]) for g in loader_groups(out)) == 4 \
                    and len(own) == 2:
                break
            time.sleep(0.5)
        else:
            raise AssertionError("workers not in place: %s" % json.dumps(out)[-4000:])
        stuck = got["Toy.__getitem__"]
        assert stuck["ranks"] == [1] and stuck["frames"][0]["line"] == GETITEM
        assert sorted((p["rank"], p["pid"], p["role"]) for p in stuck["processes"]) == \
            [(1, w, "DataLoader worker %d" % i) for i, w in enumerate(ranks[1]["workers"])]
        idle = [g for g in loader_groups(out) if g is not stuck]
        assert [g["ranks"] for g in idle] == [[0]], idle
        assert sorted(p["pid"] for p in idle[0]["processes"]) == sorted(ranks[0]["workers"])
        assert any(f["func"] == "_worker_loop" for f in idle[0]["frames"])
        assert sorted(g["ranks"] for g in own) == [[0], [1]]
        # text: the ranks' groups, then the children's
        t0 = time.time()
        text = probing("cluster", "stacks", "--job", name, "--subprocesses", check=True).stdout
        elapsed = time.time() - t0
        assert re.search(r"^1 rank: 1, in 2 child processes \(DataLoader workers 0-1\)\n"
                         r"  [> ] Toy.__getitem__ \(\S+:%d\)$" % GETITEM, text, re.M), text
        assert re.search(r"^job \S+: world size 2, 2 ranks answered on 1 of 1 node, 2 groups and "
                         r"\d+ of child processes$", text, re.M), text
        assert text.index("in 2 child processes") > text.index("all_reduce"), text
        print("cluster stacks --subprocesses, 2 ranks x 2 workers: %.2f s" % elapsed)
        # read from outside: the same groups, nothing loaded into the workers either way
        r = probing("cluster", "stacks", "--job", name, "--subprocesses", "--no-inject", "--json",
                    check=True)
        ro = json.loads(r.stdout)
        assert sorted((g["ranks"], len(g["processes"]), g["frames"][0]["func"])
                      for g in child_groups(ro)) == \
            sorted((g["ranks"], len(g["processes"]), g["frames"][0]["func"])
                   for g in child_groups(out))
        for rk in ranks.values():
            for w in rk["workers"]:
                assert not maps_probe(w) and state(w) != "T"
        # cluster dump: the children in each rank's JSON and text
        d = tmp_path / "dump"
        probing("cluster", "dump", "-o", d, "--job", name, "--subprocesses", check=True,
                timeout=120)
        d1 = json.loads((d / "rank-1.json").read_text())
        ws = {c["pid"]: c for c in d1["children"] if (c.get("role") or "").startswith("DataLoader")}
        assert set(ws) == set(ranks[1]["workers"])
        for w in ws.values():
            assert top(w)["name"] == "Toy.__getitem__" and top(w)["locals"] is not None
        t1 = (d / "rank-1.txt").read_text()
        assert re.search(r"=== child %d \(parent \d+\) of rank 1: DataLoader worker 0 ===" %
                         ranks[1]["workers"][0], t1), t1
    finally:
        job.kill()


FORK_ON_GO = """
import os, sys, time
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
if os.fork() == 0:
    while True:
        time.sleep(3600)  # the child: line 8
print("forked", flush=True)
while True:
    time.sleep(3600)
"""


@pytest.mark.parametrize("python", [pytest.param(DEBIAN, id="debian-static")] + [
    pytest.param(p.values[0], id="pyenv-" + p.id) for p in HOST_PYTHONS if p.id != "debian"])
def test_children_after_native(python, tmp_path):
    """On Debian's python3 (the interpreter in the executable) and pyenv's (in libpython, where
    it failed). debug --dump --native makes the probe map the interpreter's file whole to read its
    symbols (a mapping at offset 0 lower than the loaded object); a child forked after
    inherits it. Both the parent (--no-inject) and the child are still read: the object's
    load address is its mapping that the next segment continues, not the lowest one. Before,
    every read from outside failed: 'the interpreter of N is not initialised'."""
    go = tmp_path / "go"
    p = subprocess.Popen([python, "-c", FORK_ON_GO, str(go)], stdout=subprocess.PIPE,
                         text=True, start_new_session=True, env=dict(os.environ, **sanitizer_env()))
    try:
        assert p.stdout.readline().startswith("ready")
        probing("-p", p.pid, "debug", "--dump", "--native", check=True)
        go.write_text("go")
        assert p.stdout.readline().startswith("forked")
        # The child may not have reached its sleep yet (a loaded machine): read until it has.
        deadline = time.time() + 10
        while True:
            r = probing("-p", p.pid, "debug", "--dump", "--no-inject", "--subprocesses",
                        "--json")
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            assert [t["frames"][0]["name"] for t in out["threads"] if t["main"]] == ["<module>"]
            (child,) = out["children"]
            assert "note" not in child, child
            lines = [t["frames"][0]["line"] for t in child["threads"] if t["frames"]]
            if lines == [8] or time.time() > deadline:
                break
            time.sleep(0.1)
        assert lines == [8], child
        r = probing("-p", p.pid, "debug", "--dump", "--subprocesses", "--json", check=True)
        assert json.loads(r.stdout)["children"][0]["threads"][0]["frames"][0]["line"] == 8
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
