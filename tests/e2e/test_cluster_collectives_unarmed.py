# SPDX-License-Identifier: MIT
"""`probing cluster collectives` on a job that is already hung and on which probing never ran
(issue 35, "nothing armed in advance"): a DistributedDataParallel job (samples/ddp_job.py, 4
ranks, gloo on CPU) in which rank 3 stops joining before its backward while ranks 0-2 wait in
DDP's reducer for the gradient allreduce, issued from C++. No recorder ever ran, so there are
no records; the report names rank 3 as behind in group 0 from torch's own sequence numbers,
with where each rank is, and says what it cannot know: a rank holding its GIL is not read.
On Debian's torch 1.13 (torchrun) and the sid root's torch 2.14 for python3.14."""
import json
import os
import re
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import SAMPLES, bp  # noqa: E402
from test_cluster import cluster, job_with, ready_lines  # noqa: E402
from test_perf_torch import PY_ID, TORCH_PYTHONS, comm_job  # noqa: E402

DDP_JOB = os.path.join(SAMPLES, "ddp_job.py")

pytestmark = pytest.mark.skipif(not TORCH_PYTHONS, reason="no interpreter with torch")


def loaded(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libprobing" in f.read()


def start(PY, tmp_path, how, step="3"):
    job = comm_job(PY, tmp_path, {"STOP": how, "STOP_STEP": step}, nproc=4, script=DDP_JOB)
    where = {r["rank"]: r["where"] for r in job.ready}
    assert where == ({0: "backward", 1: "backward", 2: "backward", 3: "stopped"} if step != "-1"
                     else {r: "running" for r in range(4)}), job.ready
    pids = {r["rank"]: r["pid"] for r in job.ready}
    # Nothing armed in advance: no probe in any rank before the question.
    assert not any(loaded(p) for p in pids.values())
    time.sleep(1.5)  # ranks 0-2 are inside backward's allreduce by now
    job.seq = {r["rank"]: r["seq"] for r in job.ready}
    return job, pids


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_unarmed_ddp_hang_names_the_rank_behind(PY, tmp_path):
    torch1 = "torch1" in PY_ID[PY]
    job, pids = start(PY, tmp_path, "sleep")
    try:
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        assert out["recording"] == [] and sorted(out["no_records"]) == [0, 1, 2, 3], out
        assert out["hangs"] == [] and out["errors"] == []
        seq = out["sequence"]
        assert sorted(seq["read"]) == [0, 1, 2, 3] and seq["not_read"] == [], seq
        assert seq["start"] == ("random" if torch1 else "zero")
        assert len(seq["behind"]) == 1, seq
        b = seq["behind"][0]
        assert b["pg"] == "0" and b["group_ranks"] == [0, 1, 2, 3]
        assert b["behind"] == [3] and b["ahead"] == [0, 1, 2]
        assert b["ahead_seq"] - b["seq"] == 1, b
        # Exactly torch's numbers: rank 3's when it stopped; ranks 0-2's before their backward,
        # plus the one allreduce of its single bucket they entered since.
        assert b["seq"] == job.seq[3], (b, job.seq)
        assert job.seq[0] == job.seq[1] == job.seq[2] == b["ahead_seq"] - 1, (b, job.seq)
        if not torch1:
            assert b["seq"] >= 6, b  # from 0: DDP's 3 at construction, then 3 steps or more
        # Where each is: rank 3 in the sample's sleep, ranks 0-2 in backward from main.
        w = {tuple(x["ranks"]): x for x in b["where"]}
        assert set(w) == {(3,), (0, 1, 2)}, b["where"]
        assert w[(3,)]["behind"] is True and w[(0, 1, 2)]["behind"] is False
        assert (w[(3,)]["frame"]["func"], w[(3,)]["frame"]["file"], w[(3,)]["frame"]["line"]) == \
            ("stop_joining", DDP_JOB, bp("ddp_job.py", "ddp_sleep"))
        # torch's autograd: backward (1.13), _engine_run_backward (2.x)
        assert "/torch/autograd/" in w[(0, 1, 2)]["frame"]["file"], w
        assert (w[(0, 1, 2)]["from"]["func"], w[(0, 1, 2)]["from"]["line"]) == \
            ("main", bp("ddp_job.py", "ddp_backward"))
        # The pair group (ranks 0 and 1): rank 3 is not in it; nobody behind there.
        g1 = [g for g in seq["groups"] if g["pg"] == "1"]
        assert len(g1) == 1 and g1[0]["group_ranks"] == [0, 1], seq["groups"]
        assert [s[0] for s in g1[0]["seqs"]] == [0, 1] and g1[0]["not_read"] == []
        assert g1[0]["seqs"][0][1] == g1[0]["seqs"][1][1]
        text = cluster("collectives", "--job", name).stdout
        lines = text.splitlines()
        assert lines[0] == "job %s: world size 4, 4 ranks answered, 0 with records of " \
            "collectives" % name, text
        assert "\ntorch's sequence numbers (per process group, read on every rank under its " \
            "GIL; the recorder was not running):\n" in text, text
        if torch1:
            behind = r"it is at sequence number %d, ranks 0-2 at %d \(1 collective ahead\)" % (
                b["seq"], b["ahead_seq"])
        else:
            behind = r"it entered %d collectives, ranks 0-2 entered %d" % (b["seq"], b["ahead_seq"])
        assert re.search(r"^rank 3 is behind in group 0 \(ranks 0-3\): %s\n"
                         r"  it has not entered the group's collective #%d \(numbered from the "
                         r"group's sequence number before it\)\n"
                         r"  rank 3 is in stop_joining \(ddp_job.py:%d\) from main "
                         r"\(ddp_job.py:\d+\)\n"
                         r"  ranks 0-2 are in \w+ \(torch/autograd/\w+\.py:\d+\) from main "
                         r"\(ddp_job.py:%d\)$" % (behind, b["seq"], bp("ddp_job.py", "ddp_sleep"),
                                                  bp("ddp_job.py", "ddp_backward")), text, re.M), text
        assert re.search(r"^  group 1 \(ranks 0-1, gloo\): none behind: ranks 0-1 at \d+$", text,
                         re.M), text
        assert ("(torch 1.13's gloo numbers a group's collectives from a random start" in text) \
            == torch1, text
    finally:
        job.kill()


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_unarmed_rank_holding_its_gil_is_not_read(PY, tmp_path):
    """Rank 3 stops joining inside a C call that holds its GIL: its sequence numbers cannot be
    read; ranks 0-2 are, level with each other, and the report says rank 3 may be behind and
    why it was not read, and where it is (read without the GIL)."""
    job, pids = start(PY, tmp_path, "c")
    try:
        name = job_with(pids[0])
        t0 = time.time()
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        took = time.time() - t0
        assert took < 15, took
        seq = out["sequence"]
        assert sorted(seq["read"]) == [0, 1, 2], seq
        assert [u["rank"] for u in seq["not_read"]] == [3], seq
        held = r"the GIL is held by thread \d+ .* in stop_joining \(%s:%d\) and was not released " \
            r"within \d+ ms: nothing was run" % (re.escape(DDP_JOB), bp("ddp_job.py", "ddp_stuck_c"))
        assert re.fullmatch(held, seq["not_read"][0]["error"]), seq["not_read"]
        assert seq["behind"] == [], seq
        w = seq["not_read"][0]["where"]
        assert (w["frame"]["func"], w["frame"]["file"], w["frame"]["line"]) == \
            ("stop_joining", DDP_JOB, bp("ddp_job.py", "ddp_stuck_c")), w
        g0 = [g for g in seq["groups"] if g["pg"] == "0"][0]
        assert g0["group_ranks"] == [0, 1, 2, 3] and g0["not_read"] == [3]
        assert len({s[1] for s in g0["seqs"]}) == 1 and [s[0] for s in g0["seqs"]] == [0, 1, 2]
        text = cluster("collectives", "--job", name).stdout
        assert re.search(r"^  group 0 \(ranks 0-3, gloo\): ranks 0-2 at %d, still 1 s later; no "
                         r"number from rank 3 \(not read, below\): if ranks 0-2 wait in a "
                         r"collective, it is behind$" % g0["max"], text, re.M), text
        assert re.search(r"^  rank 3: not read: %s\n    it is in stop_joining \(ddp_job.py:%d\) "
                         r"from main \(ddp_job.py:\d+\)$" % (held, bp("ddp_job.py", "ddp_stuck_c")), text,
                         re.M), text
    finally:
        job.kill()


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_unarmed_job_at_work_is_no_hang(PY, tmp_path):
    """The same job with nobody stopping: ranks read a moment apart may differ by one, but the
    numbers move on between the two reads a second apart: no rank is named behind."""
    job, pids = start(PY, tmp_path, "sleep", step="-1")
    try:
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        seq = out["sequence"]
        assert sorted(seq["read"]) == [0, 1, 2, 3] and seq["behind"] == [], seq
        g0 = [g for g in seq["groups"] if g["pg"] == "0"][0]
        assert g0["moving"] == [0, 1, 2, 3], g0
        text = cluster("collectives", "--job", name).stdout
        assert "\n  group 0 (ranks 0-3, gloo): no hang: ranks 0-3 entered more collectives in " \
            "the 1 s between two reads\n" in text, text
        assert " is behind in group " not in text and " are behind in group " not in text, text
    finally:
        job.kill()


JOB = os.path.join(SAMPLES, "cluster_job.py")


def places_of(group):
    """{ranks: (innermost function, caller's function, caller's line)} of a group's places."""
    return {tuple(p["ranks"]): (p["frame"]["func"], p["from"]["func"], p["from"]["line"])
            for p in group.get("places", [])}


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_unarmed_mismatch_says_what_it_knows(PY, tmp_path):
    """Rank 3 calls broadcast where ranks 0-2 call all_reduce (samples/cluster_job.py
    MISMATCH=1), nothing armed: the numbers are level (every rank entered the same count), so
    nobody is behind; the report shows where each waits, the two places, and says that at the
    same number these are different collectives (a mismatch), and how to see both sides."""
    job = comm_job(PY, tmp_path, {"MISMATCH": "1"}, nproc=4, script=JOB)
    try:
        where = {r["rank"]: r["where"] for r in job.ready}
        assert where == {0: "all_reduce", 1: "all_reduce", 2: "all_reduce", 3: "broadcast"}, where
        pids = {r["rank"]: r["pid"] for r in job.ready}
        assert not any(loaded(p) for p in pids.values())
        time.sleep(1)
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        assert out["recording"] == [] and out["hangs"] == [] and out["mismatches"] == [], out
        seq = out["sequence"]
        assert sorted(seq["read"]) == [0, 1, 2, 3] and seq["behind"] == [] and \
            seq["gone"] == [] and seq["not_read"] == [], seq
        g0 = [g for g in seq["groups"] if g["pg"] == "0"][0]
        assert g0["moving"] == [] and len({s[1] for s in g0["seqs"]}) == 1, g0
        assert places_of(g0) == {
            (0, 1, 2): ("all_reduce", "wait_for_peers", bp("cluster_job.py", "all_reduce")),
            (3,): ("broadcast", "other_collective", bp("cluster_job.py", "mismatch_broadcast"))}, g0
        text = cluster("collectives", "--job", name).stdout
        assert re.search(
            r"^  group 0 \(ranks 0-3, gloo\): none behind: ranks 0-3 at %d\n"
            r"    ranks 0-2 are in all_reduce \(torch/distributed/distributed_c10d.py:\d+\) from "
            r"wait_for_peers \(cluster_job.py:%d\)\n"
            r"    rank 3 is in broadcast \(torch/distributed/distributed_c10d.py:\d+\) from "
            r"other_collective \(cluster_job.py:%d\)\n"
            r"    every member entered as many of the group's collectives, none more in 1 s, and "
            r"they wait in different places: if these are collectives of the group, they are "
            r"different ones \(a mismatch: 'perf --comm' on every rank names each side's op, "
            r"sizes and dtype\)$" % (g0["max"], bp("cluster_job.py", "all_reduce"),
                                    bp("cluster_job.py", "mismatch_broadcast")), text, re.M), text
        assert " is behind in group " not in text and " are behind in group " not in text, text
    finally:
        job.kill()


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_unarmed_dead_rank_says_what_it_knows(PY, tmp_path):
    """Rank 3's process exits (samples/cluster_job.py DEAD=1), nothing armed: gloo fails the
    all_reduce of the ranks that talk to it (they sleep on), a rank whose neighbour failed keeps
    waiting in it. The report names rank 3 as claimed by no process, and where each other rank
    is: those that failed in the sample's sleep, those still waiting in all_reduce."""
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate), "DEAD": "1"}, nproc=4, script=JOB)
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        gate.write_text("go")
        deadline = time.time() + 60
        while time.time() < deadline and "failed" not in open(job.out_path).read():
            time.sleep(0.2)
        time.sleep(2)
        assert not any(loaded(p) for r, p in pids.items() if r != 3)
        text = open(job.out_path).read()
        failed = sorted(r["rank"] for r in ready_lines(text) if r["where"] == "failed")
        waiting = sorted(set([0, 1, 2]) - set(failed))
        assert failed, text
        name = job_with(pids[failed[0]])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        seq = out["sequence"]
        assert sorted(seq["read"]) == [0, 1, 2] and seq["gone"] == [3] and \
            seq["not_read"] == [] and seq["behind"] == [], seq
        g0 = [g for g in seq["groups"] if g["pg"] == "0"][0]
        assert g0["not_read"] == [3] and g0["moving"] == [], g0
        want = {tuple(failed): ("survive", "main", bp("cluster_job.py", "dead_main"))}
        if waiting:
            want[tuple(waiting)] = ("all_reduce", "survive", bp("cluster_job.py", "dead_peer"))
        got = places_of(g0)
        assert got == want, (got, want)
        text = cluster("collectives", "--job", name).stdout
        assert re.search(r"^  group 0 \(ranks 0-3, gloo\): ranks 0-2 at %d, still 1 s later; no "
                         r"number from rank 3 \(not read, below\): if ranks 0-2 wait in a "
                         r"collective, it is behind$" % g0["max"], text, re.M), text
        assert "\n  rank 3: no process of the job claims it (exited or killed)\n" in text, text
        assert "they wait in different places" not in text, text
    finally:
        job.kill()
