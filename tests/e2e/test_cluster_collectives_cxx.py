# SPDX-License-Identifier: MIT
"""Collectives issued from C++ and hangs as they happen (issue 35), on Debian's torch 1.13
(torchrun) and the sid root's torch 2.14 for python3.14, with `perf --comm` started on every rank
before the hang:
- a DistributedDataParallel job (samples/ddp_job.py, 4 ranks) whose rank 3 stops joining before
  its backward: DDP's reducer allreduces its gradient buckets from C++ (no torch.distributed call
  in Python); with `perf --comm --ddp` they are in torch.collectives (the recorder's comm hook),
  and a plain `perf --comm` leaves DDP as it was (no hook, nothing of probing's after --stop),
  with torch's sequence
  number, op, size, dtype, state and the line that called backward(), and `cluster collectives`
  names rank 3 as not entered with its last bucket allreduce;
- a FullyShardedDataParallel job (samples/fsdp_job.py, torch 2.14, 2 ranks) whose rank 1 stops
  before its forward: FSDP's all-gathers and reduce-scatters are recorded, rank 1 named; and the
  same job with nothing armed, from torch's sequence numbers;
- a rank that calls a different collective (samples/cluster_job.py MISMATCH=1: broadcast where
  ranks 0-2 call all_reduce): both sides named, no rank said to be missing."""
import json
import os
import re
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import SAMPLES, bp, probing  # noqa: E402
from test_cluster import JOB, cluster, job_with, ready_lines, start_recorders  # noqa: E402
from test_perf_torch import PY_ID, TORCH_PYTHONS, comm_job, eval_json, query  # noqa: E402

DDP_JOB = os.path.join(SAMPLES, "ddp_job.py")
FSDP_JOB = os.path.join(SAMPLES, "fsdp_job.py")

pytestmark = pytest.mark.skipif(not TORCH_PYTHONS, reason="no interpreter with torch")
TORCH2 = [p for p in TORCH_PYTHONS if "torch1" not in PY_ID[p.values[0]]]


def released(job, gate, n, timeout=120):
    """Makes the gate file, then waits for the n ready lines that follow the gate's."""
    gate.write_text("go")
    deadline = time.time() + timeout
    while time.time() < deadline:
        after = [r for r in ready_lines(open(job.out_path).read()) if r["where"] != "gate"]
        if len(after) >= n:
            return {r["rank"]: r for r in after}
        time.sleep(0.2)
    raise AssertionError("the job did not get in place: %s" % open(job.out_path).read()[-3000:])


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_ddp_bucket_allreduces_recorded_and_hang_named(PY, tmp_path):
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate)}, nproc=4, script=DDP_JOB)
    try:
        assert sorted(r["where"] for r in job.ready) == ["gate"] * 4
        pids = {r["rank"]: r["pid"] for r in job.ready}
        start_recorders(pids.values(), "--ddp")
        after = released(job, gate, 4)
        assert {r: x["where"] for r, x in after.items()} == \
            {0: "backward", 1: "backward", 2: "backward", 3: "stopped"}, after
        time.sleep(1.5)  # a hang is a wait of a second or more
        rows = query(pids[0], "SELECT seq, seq_source, op, pg, group_ranks, sizes, dtype, bytes, "
                     "async, state, file, line, func FROM torch.collectives ORDER BY id")
        # One bucket (the model's 289 parameters) per step, 4 steps: 3 done, the 4th running.
        assert len(rows) == 4, rows
        for r in rows:
            assert (r["seq_source"], r["op"], r["pg"], r["group_ranks"], r["sizes"], r["dtype"],
                    r["bytes"], r["async"], r["file"], r["line"], r["func"]) == \
                ("torch", "all_reduce", "0", "0,1,2,3", "289", "float32", 1156, 1, DDP_JOB,
                 bp("ddp_job.py", "ddp_backward"), "main"), r
        assert [r["state"] for r in rows] == ["done"] * 3 + ["running"], rows
        assert rows[-1]["seq"] == after[0]["seq"], (rows, after)  # torch's number before it
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        assert sorted(out["recording"]) == [0, 1, 2, 3] and out["mismatches"] == [], out
        assert len(out["hangs"]) == 1, out
        h = out["hangs"][0]
        assert (h["pg"], h["op"], h["seq"], h["not_entered"], h["waiting"]) == \
            ("0", "all_reduce", after[3]["seq"], [3], [0, 1, 2]), h
        last = h["last"][0]
        assert (last["rank"], last["op"], last["seq"], last["state"], last["file"],
                last["line"], last["func"]) == \
            (3, "all_reduce", rows[-2]["seq"], "done", DDP_JOB, bp("ddp_job.py", "ddp_backward"),
             "main"), last
        text = cluster("collectives", "--job", name).stdout
        assert re.search(r"^rank 3 has not entered all_reduce #%d of group 0; ranks 0-2 wait in "
                         r"it since \d+ s\n  rank 3's last collective of the group: all_reduce "
                         r"#%d \(done\) at ddp_job.py:%d in main$"
                         % (h["seq"], last["seq"], bp("ddp_job.py", "ddp_backward")), text,
                         re.M), text
    finally:
        job.kill()


# What DDP has in a rank: each module's comm hook as its logger names it ("" for none: the
# reducer's own C++ allreduce) and where DistributedDataParallel.forward's code comes from.
DDP_STATE = ("import gc, json; from torch.nn.parallel import DistributedDataParallel as D; "
             "print(json.dumps({'hooks': [m._get_ddp_logging_data().get('comm_hook', '') "
             "for m in gc.get_objects() if isinstance(m, D)], "
             "'forward': D.forward.__code__.co_filename}))")


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_ddp_is_left_as_it_was_unless_asked(PY, tmp_path):
    """A plain perf --comm changes nothing of DDP (its bucket allreduces are not recorded, the
    start says how to ask, and after --stop DDP has no hook and its own forward); --ddp gives
    the module the recorder's hook, records its allreduces and says at --stop that the hook
    stays (torch takes none back)."""
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate), "STOP_STEP": "-1"}, nproc=2,
                   script=DDP_JOB)
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        p0 = pids[0]
        r = probing("-p", p0, "perf", "--comm", "--ddp", "--stop")
        assert (r.returncode, r.stdout, r.stderr) == (
            2, "", "probing: error: perf --comm: --ddp starts recording, --stop ends it: give one "
            "of them\n"), r
        r = probing("-p", p0, "perf", "--comm", check=True)
        assert re.search(r"^  DistributedDataParallel: bucket allreduces \(issued from C\+\+\) "
                         r"not recorded: add --ddp to record them", r.stdout, re.M), r.stdout
        after = released(job, gate, 2)
        assert {x["where"] for x in after.values()} == {"running"}, after
        time.sleep(1)
        assert query(p0, "SELECT op FROM torch.collectives") == []
        r = probing("-p", p0, "perf", "--comm", "--stop", check=True)
        assert "comm hook" not in r.stdout, r.stdout
        state = eval_json(p0, DDP_STATE)
        assert state["hooks"] == [""] and \
            state["forward"].endswith("torch/nn/parallel/distributed.py"), state
        # Asked: recorded, and said to stay.
        r = probing("-p", p0, "perf", "--comm", "--ddp", check=True)
        assert re.search(r"^  DistributedDataParallel: every module's bucket allreduces, from its "
                         r"next forward \(a comm hook that stays for the module's life; 0 modules "
                         r"so far\)$", r.stdout, re.M), r.stdout
        deadline = time.time() + 60
        while time.time() < deadline and not query(
                p0, "SELECT op FROM torch.collectives WHERE op = 'all_reduce' AND state = 'done'"):
            time.sleep(0.3)
        rows = query(p0, "SELECT op, pg, file, line FROM torch.collectives")
        assert rows and all((x["op"], x["pg"], x["file"], x["line"]) ==
                            ("all_reduce", "0", DDP_JOB, bp("ddp_job.py", "ddp_backward"))
                            for x in rows), rows
        r = probing("-p", p0, "perf", "--comm", "--stop", check=True)
        assert re.search(r"^perf --comm: 1 DistributedDataParallel module\(s\) keep the "
                         r"recorder's comm hook \(started with --ddp; torch takes no hook back\), "
                         r"passing their allreduces through unrecorded$", r.stdout, re.M), r.stdout
        state = eval_json(p0, DDP_STATE)
        assert state["hooks"] == ["ddp_hook"] and \
            state["forward"].endswith("torch/nn/parallel/distributed.py"), state
        # The job trains on through the hook: rank 1 (no hook) and rank 0 (hook) still meet.
        n = len(query(p0, "SELECT id FROM torch.collectives"))
        r = probing("-p", p0, "perf", "--comm", check=True)
        assert re.search(r"^  DistributedDataParallel: the bucket allreduces of the 1 module\(s\) "
                         r"given the recorder's comm hook by an earlier --ddp$", r.stdout,
                         re.M), r.stdout
        deadline = time.time() + 60
        while time.time() < deadline and len(query(p0, "SELECT id FROM torch.collectives")) < 2:
            time.sleep(0.3)
        assert len(query(p0, "SELECT id FROM torch.collectives")) >= 2, n
        probing("-p", p0, "perf", "--comm", "--stop", check=True)
    finally:
        job.kill()


@pytest.mark.parametrize("armed", [True, False], ids=["armed", "unarmed"])
@pytest.mark.parametrize("PY", TORCH2)
def test_fsdp_rank_that_stops_joining_is_named(PY, armed, tmp_path):
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate)}, nproc=2, script=FSDP_JOB)
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        if armed:
            start_recorders(pids.values())
        after = released(job, gate, 2)
        assert {r: x["where"] for r, x in after.items()} == {0: "forward", 1: "stopped"}, after
        time.sleep(1.5)
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        if not armed:
            assert out["recording"] == [] and out["hangs"] == [], out
            b = out["sequence"]["behind"]
            assert [(x["pg"], x["behind"], x["ahead"], x["seq"]) for x in b] == \
                [("0", [1], [0], after[1]["seq"])], b
            text = cluster("collectives", "--job", name).stdout
            assert re.search(r"^rank 1 is behind in group 0 \(ranks 0-1\): it entered %d "
                             r"collectives, rank 0 entered %d$" % (b[0]["seq"], b[0]["ahead_seq"]),
                             text, re.M), text
            return
        rows = query(pids[0], "SELECT seq, seq_source, op, sizes, dtype, state, file, line, func "
                     "FROM torch.collectives ORDER BY id")
        ops = [r["op"] for r in rows]
        # Per step, FSDP's all-gather of the flat parameters (forward; again in backward: on
        # CPU it gathers into a list) and the reduce-scatter of their gradients; the last, rank
        # 0's forward all-gather, waits.
        assert set(ops) == {"all_gather", "reduce_scatter_single"}, rows
        assert ops[-1] == "all_gather" and rows[-1]["state"] == "running", rows
        assert all(r["state"] == "done" for r in rows[:-1]), rows
        assert rows[-1]["seq"] == after[0]["seq"] and rows[-1]["seq_source"] == "torch", rows
        assert (rows[-1]["file"], rows[-1]["line"]) == (FSDP_JOB, bp("fsdp_job.py", "fsdp_forward"))
        assert out["mismatches"] == [] and len(out["hangs"]) == 1, out
        h = out["hangs"][0]
        assert (h["pg"], h["op"], h["seq"], h["not_entered"], h["waiting"]) == \
            ("0", "all_gather", after[1]["seq"], [1], [0]), h
        last = h["last"][0]
        assert (last["rank"], last["state"], last["seq"]) == (1, "done", h["seq"] - 1), last
        text = cluster("collectives", "--job", name).stdout
        assert re.search(r"^rank 1 has not entered all_gather #%d of group 0; rank 0 "
                         r"waits in it since \d+ s$" % h["seq"], text, re.M), text
    finally:
        job.kill()


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_rank_in_a_different_collective_is_named_with_both_sides(PY, tmp_path):
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate), "MISMATCH": "1"}, nproc=4, script=JOB)
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        start_recorders(pids.values())
        after = released(job, gate, 4)
        assert {r: x["where"] for r, x in after.items()} == \
            {0: "all_reduce", 1: "all_reduce", 2: "all_reduce", 3: "broadcast"}, after
        time.sleep(1.5)
        name = job_with(pids[0])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        assert out["hangs"] == [], out  # every rank entered the group's collective
        assert len(out["mismatches"]) == 1, out
        m = out["mismatches"][0]
        assert m["pg"] == "0" and m["group_ranks"] == [0, 1, 2, 3] and m["later"] == 0, m
        sides = [(s["ranks"], s["op"], s["sizes"], s["dtype"], s["state"], s["file"], s["line"],
                  s["func"]) for s in m["sides"]]
        assert sides == [
            ([0, 1, 2], "all_reduce", "4", "float32", "running", JOB,
             bp("cluster_job.py", "all_reduce"), "wait_for_peers"),
            ([3], "broadcast", "4", "float32", "running", JOB,
             bp("cluster_job.py", "mismatch_broadcast"), "other_collective")], m
        seqs = {r: query(pids[r], "SELECT seq FROM torch.collectives ORDER BY id DESC LIMIT 1")[0]
                ["seq"] for r in range(4)}
        assert set(seqs.values()) == {m["seq"]}, (seqs, m)
        text = cluster("collectives", "--job", name).stdout
        assert ("\nmismatch in group 0: ranks 0-2 and rank 3 entered different collectives as "
                "#%d\n  ranks 0-2: all_reduce 4 float32 (running) at cluster_job.py:%d in "
                "wait_for_peers\n  rank 3: broadcast 4 float32 (running) at cluster_job.py:%d in "
                "other_collective\n" % (m["seq"], bp("cluster_job.py", "all_reduce"),
                                        bp("cluster_job.py", "mismatch_broadcast"))) in text, text
        assert "no hang:" not in text, text
        st = cluster("stacks", "--job", name).stdout.splitlines()
        assert st[1] == "mismatch in group 0: ranks 0-2 and rank 3 entered different " \
            "collectives as #%d" % m["seq"], st
        sj = json.loads(cluster("stacks", "--json", "--job", name).stdout)
        assert [x["seq"] for x in sj["mismatches"]] == [m["seq"]], sj
    finally:
        job.kill()


@pytest.mark.parametrize("PY", TORCH_PYTHONS)
def test_dead_rank_is_named_with_the_collective_that_failed(PY, tmp_path):
    """Rank 3's process exits (samples/cluster_job.py DEAD=1): gloo fails the all_reduce of the
    ranks that talk to it (they outlive the error); a rank whose ring neighbour failed keeps
    waiting in it. The report names the collective, the ranks it failed on, rank 3 as having no
    process, and the ranks still waiting as waiting for rank 3; no mismatch."""
    gate = tmp_path / "gate"
    job = comm_job(PY, tmp_path, {"GATE": str(gate), "DEAD": "1"}, nproc=4, script=JOB)
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        start_recorders(pids.values())
        released(job, gate, 1)
        time.sleep(2)
        after = [r for r in ready_lines(open(job.out_path).read()) if r["where"] != "gate"]
        failed = sorted(r["rank"] for r in after if r["where"] == "failed")
        waiting = sorted(set([0, 1, 2]) - set(failed))
        assert failed and all(r["where"] == "failed" for r in after), after
        name = job_with(pids[failed[0]])
        out = json.loads(cluster("collectives", "--json", "--job", name).stdout)
        assert out["mismatches"] == [], out
        rows = query(pids[failed[0]], "SELECT seq, op, state, line FROM torch.collectives "
                     "ORDER BY id")
        assert (rows[-1]["op"], rows[-1]["state"], rows[-1]["line"]) == \
            ("all_reduce", "failed", bp("cluster_job.py", "dead_peer")), rows
        seq = rows[-1]["seq"]
        assert out["failures"] == [{"pg": "0", "group_ranks": [0, 1, 2, 3], "seq": seq,
                                    "op": "all_reduce", "failed": failed, "gone": [3],
                                    "not_read": []}], out
        # Those still waiting wait for rank 3 (not for the ranks whose call failed).
        assert [(h["seq"], h["not_entered"], h["waiting"]) for h in out["hangs"]] == \
            ([(seq, [3], waiting)] if waiting else []), out
        text = cluster("collectives", "--job", name).stdout
        assert re.search(r"^all_reduce #%d of group 0 failed on ranks? [0-9,-]+; rank 3 has no "
                         r"process \(exited or killed\)$" % seq, text, re.M), text
        if waiting:
            assert "\n  rank 3: no process (exited or killed)\n" in text, text
        assert "no hang:" not in text, text
    finally:
        job.kill()
