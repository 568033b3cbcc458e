# SPDX-License-Identifier: MIT
"""probing cluster on jobs started by the real launchers, not by a fake environment: Open MPI's
`mpirun -np 4` (Debian's openmpi-bin and python3-mpi4py) with rank 2 asleep in stuck_in_sleep
while the others wait in comm.Barrier (samples/mpi_job.py); SLURM (Debian's slurm-wlm and
munge) with slurmctld and one slurmd on each of the two namespace nodes of
tests/e2e/test_cluster_nodes.py, a job started by `srun` and by `sbatch`, and
`probing cluster stacks --slurm` run inside the allocation and from the controller's node, each
node reached through `srun --overlap`. torchrun across the two nodes (static and c10d
rendezvous) is tests/e2e/test_cluster_nodes.py. Each test starts and
stops its own launcher and daemons, on failure too; every wait is bounded."""
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import CLI, SAMPLES, bp, probing, sanitizer_env  # noqa: E402
from test_cluster import DEBIAN, JOB, TORCHRUN, Job  # noqa: E402
from test_cluster_nodes import SSHD, Nodes  # noqa: E402

pytestmark = pytest.mark.serial  # real srun, mpirun and torchrun jobs, and jobs found node-wide

MPIRUN = "/usr/bin/mpirun"
MPI_JOB = os.path.join(SAMPLES, "mpi_job.py")


def cluster(*args, timeout=60, check=True):
    return probing("cluster", *args, timeout=timeout, check=check)


def job_of(pids):
    """The job id `cluster list` gives the processes pids (all in one job)."""
    out = json.loads(cluster("list", "--json").stdout)
    for j in out["jobs"]:
        if {x["pid"] for x in j["ranks"]} & set(pids):
            assert {x["pid"] for x in j["ranks"]} == set(pids), j
            return j
    raise AssertionError("no job holds pids %s: %s" % (sorted(pids), out))


@pytest.fixture
def mpi_job(tmp_path, request):
    if not os.path.exists(MPIRUN):
        pytest.skip("Open MPI missing: run 'make deps' (openmpi-bin, python3-mpi4py)")
    # As root mpirun wants --allow-run-as-root; 4 ranks on this machine's 2 cores want
    # --oversubscribe (which also makes the waiting ranks yield the CPU).
    argv = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "4", DEBIAN, MPI_JOB]
    env = {"COLLECTIVE": "allreduce"} if request.node.callspec.params["inject"] else {}
    job = Job(argv, tmp_path / "mpi.out", env=env, timeout=60)
    yield job
    job.kill()


@pytest.mark.parametrize("inject", [False, True], ids=["no-inject", "inject"])
def test_mpirun_job(mpi_job, inject):
    pids = {r["rank"]: r["pid"] for r in mpi_job.ready}
    assert sorted(pids) == [0, 1, 2, 3]
    assert [r["rank"] for r in mpi_job.ready if r["where"] == "stuck"] == [2]
    where = "allreduce" if inject else "barrier"  # what ranks 0, 1 and 3 wait in
    assert sorted(r["rank"] for r in mpi_job.ready if r["where"] == where) == [0, 1, 3]
    j = job_of(pids.values())
    assert j["launcher"] == "openmpi" and j["world_size"] == 4 and j["missing"] == [], j
    assert {x["rank"]: x["pid"] for x in j["ranks"]} == pids
    assert [x["local_rank"] for x in j["ranks"]] == [0, 1, 2, 3]
    # mpirun itself (the launcher, not Python) is no rank.
    assert mpi_job.proc.pid not in pids.values()
    args = ["stacks", "--job", j["job"]] + ([] if inject else ["--no-inject"])
    out = json.loads(cluster(*args, "--json").stdout)
    assert out["world_size"] == 4 and out["missing"] == [] and out["errors"] == [], out
    groups = out["groups"]
    assert [g["ranks"] for g in groups] == [[2], [0, 1, 3]], groups
    assert groups[0]["pid"] == pids[2]
    assert [f["func"] for f in groups[0]["frames"]] == ["stuck_in_sleep", "main", "<module>"]
    assert groups[0]["frames"][0]["file"] == MPI_JOB
    assert groups[0]["frames"][0]["line"] == bp(MPI_JOB, "stuck_call"), groups[0]
    # comm.Barrier and comm.allreduce are mpi4py's C: the Python frame that called them is on top.
    assert [f["func"] for f in groups[1]["frames"]] == ["wait_for_peers", "main", "<module>"]
    assert groups[1]["frames"][0]["line"] == bp(MPI_JOB, where), groups[1]
    text = cluster(*args).stdout
    print("$ probing cluster %s\n%s" % (" ".join(args), text))
    assert re.search(r"^job openmpi:\S+: world size 4, 4 ranks answered on 1 of 1 node, 2 groups$",
                     text, re.M), text
    assert re.search(r"^1 rank: 2 \(node %s, pid %d\)\n  > stuck_in_sleep \(" % (
        re.escape(socket.gethostname()), pids[2]), text, re.M), text
    assert re.search(r"^3 ranks: 0-1,3\n", text, re.M), text
    for pid in pids.values():
        with open("/proc/%d/maps" % pid) as f:
            assert ("libprobing" in f.read()) == inject



def test_mpirun_two_nodes(tmp_path):
    """mpirun -np 4 with an MPI hostfile (2 slots on each namespace node), the remote orted
    started over ssh (plm_rsh_agent), TCP between the nodes: cluster stacks --hostfile with the
    same hostfile, run on node a where mpirun runs, finds the 4 ranks on both nodes and names
    rank 2 (node b)."""
    if not os.path.exists(MPIRUN):
        pytest.skip("Open MPI missing: run 'make deps' (openmpi-bin, python3-mpi4py)")
    if not os.path.exists(SSHD):
        pytest.skip("sshd missing: run 'make deps' (openssh-server)")
    n = Nodes()
    try:
        n.setup()
        d = n.dir
        hostfile = d + "/hostfile"
        with open(hostfile, "w") as f:
            f.write("# MPI's hostfile, as is\n%s slots=2\n%s slots=2\n" % (n.host["a"], n.host["b"]))
        ssh = " ".join(n.ssh_argv())
        out = d + "/mpi.out"
        proc = n.start("a", [MPIRUN, "--allow-run-as-root", "--hostfile", hostfile, "-np", "4",
                             "--mca", "plm_rsh_agent", ssh, "--mca", "btl", "self,vader,tcp",
                             "--mca", "btl_tcp_if_include", "eth0", "--mca",
                             "oob_tcp_if_include", "eth0",
                             # make asan: node b's ranks, started by orted over ssh, too
                             *[x for k in sanitizer_env() for x in ("-x", k)],
                             DEBIAN, MPI_JOB], out, {})
        deadline = time.time() + 60
        while True:
            text = open(out).read()
            ready = [json.loads(m) for m in re.findall(r"ready (\{[^{}]*\})", text)]
            if len(ready) >= 4:
                break
            assert proc.poll() is None and time.time() < deadline, "job not ready: %s" % text
            time.sleep(0.2)
        assert sorted((r["rank"], r["node"]) for r in ready) == [
            (0, n.host["a"]), (1, n.host["a"]), (2, n.host["b"]), (3, n.host["b"])]
        pid2 = [r["pid"] for r in ready if r["rank"] == 2][0]  # in node b's PID namespace
        cmd = ["nsenter", "-t", str(n.pid1("a")), "-n", "-p", "-m", "-u", "--", CLI, "cluster",
               "stacks", "--hostfile", hostfile, "--exec", ssh + " root@{host}"]
        r = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        assert res["job"].startswith("openmpi:") and res["world_size"] == 4, res
        assert res["missing"] == [] and res["errors"] == [], res
        groups = res["groups"]
        assert [g["ranks"] for g in groups] == [[2], [0, 1, 3]], groups
        assert groups[0]["nodes"] == [n.host["b"]] and groups[0]["pid"] == pid2
        assert groups[0]["frames"][0]["func"] == "stuck_in_sleep"
        assert sorted(groups[1]["nodes"]) == [n.host["a"], n.host["b"]]
        assert groups[1]["frames"][0]["func"] == "wait_for_peers"
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        print("$ probing cluster stacks --hostfile hostfile --exec 'ssh ... root@{host}'\n%s"
              % r.stdout)
        assert re.search(r"^job openmpi:\S+: world size 4, 4 ranks answered on 2 of 2 nodes, "
                         r"2 groups$", r.stdout, re.M), r.stdout
        assert re.search(r"^1 rank: 2 \(node %s, pid %d\)\n  > stuck_in_sleep \(" % (
            re.escape(n.host["b"]), pid2), r.stdout, re.M), r.stdout
    finally:
        n.teardown()

# ---- SLURM: slurmctld and two slurmd on the namespace nodes ----

SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
MUNGED = "/usr/sbin/munged"
SLURM_JOB = os.path.join(SAMPLES, "slurm_job.py")


class Slurm:
    """munged, slurmctld (on node a) and one slurmd per node, configured in the nodes' temporary
    directory (outside /tmp, which each node mounts privately); everything runs in the nodes'
    namespaces and goes with them (Nodes.teardown)."""

    def __init__(self, nodes):
        self.nodes = nodes
        d = self.dir = nodes.dir
        self.conf = d + "/slurm.conf"
        self.env = {"SLURM_CONF": self.conf}
        with open(d + "/munge.key", "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(d + "/munge.key", 0o400)
        for sub in ("ctld", "spool-" + nodes.host["a"], "spool-" + nodes.host["b"]):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        a, b = nodes.host["a"], nodes.host["b"]
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=probing
SlurmctldHost={a}({nodes.addr["a"]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=1
MinJobAge=2
NodeName={a} NodeAddr={nodes.addr["a"]} CPUs=2 State=UNKNOWN
NodeName={b} NodeAddr={nodes.addr["b"]} CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
""")
        # slurmd loads a cgroup plugin whatever the proctrack and task plugins; `ip netns exec`
        # gives each node a fresh /sys without the host's cgroup mounts, so none is guessed.
        with open(d + "/cgroup.conf", "w") as f:
            f.write("CgroupPlugin=cgroup/v1\n")

    def start(self):
        n, d = self.nodes, self.dir
        n.start("a", [MUNGED, "-F", "--force", "--key-file", d + "/munge.key", "--socket",
                      d + "/munge.sock", "--pid-file", d + "/munged.pid", "--log-file",
                      d + "/munged.log", "--seed-file", d + "/munged.seed"], d + "/munged.out", {})
        n.start("a", [SLURMCTLD, "-D", "-i", "-f", self.conf], d + "/slurmctld.out", self.env)
        for k in "ab":
            n.start(k, [SLURMD, "-D", "-f", self.conf], "%s/slurmd_%s.out" % (d, k), self.env)
        deadline = time.time() + 30
        while True:
            r = self.run("a", "sinfo", "-N", "-h", "-o", "%N %t", check=False)
            states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
            if r.returncode == 0 and all(states.get(n.host[k]) == "idle" for k in "ab"):
                return
            assert time.time() < deadline, "SLURM did not come up: %s %s\n%s" % (
                r.stdout, r.stderr, self.logs())
            time.sleep(0.3)

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith((".log", ".out")):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out.append("--- %s\n%s" % (name, f.read()[-1500:]))
        return "\n".join(out)

    def argv(self, k, *argv):
        """argv run inside node k (all its namespaces)."""
        return ["nsenter", "-t", str(self.nodes.pid1(k)), "-n", "-p", "-m", "-u", "--", *argv]

    def run(self, k, *argv, check=True, timeout=30):
        e = dict(os.environ)
        e.update(self.env)
        for v in [v for v in e if v.startswith("SLURM_") and v != "SLURM_CONF"]:
            del e[v]
        r = subprocess.run(self.argv(k, *[str(a) for a in argv]), capture_output=True, text=True,
                           timeout=timeout, env=e)
        if check and r.returncode != 0:
            raise AssertionError("%s failed (%d): %s%s\n%s" % (" ".join(map(str, argv)),
                                 r.returncode, r.stdout, r.stderr, self.logs()))
        return r


@pytest.fixture
def slurm():
    for exe, pkg in ((SLURMCTLD, "slurm-wlm"), (SLURMD, "slurm-wlm"), ("/usr/bin/srun", "slurm-wlm"),
                     (MUNGED, "munge"), (SSHD, "openssh-server")):
        if not os.path.exists(exe):
            pytest.skip("%s missing: run 'make deps' (%s)" % (exe, pkg))
    n = Nodes()
    try:
        n.setup()
        s = Slurm(n)
        s.start()
        yield s
    finally:
        n.teardown()


def slurm_ready(path, want, proc, slurm, timeout=60):
    """The job's 'ready {...}' lines once there are want of them."""
    deadline = time.time() + timeout
    while True:
        text = open(path).read() if os.path.exists(path) else ""
        ready = [json.loads(m) for m in re.findall(r"ready (\{[^{}]*\})", text)]
        if len(ready) >= want:
            return ready
        assert proc is None or proc.poll() is None, "job ended: %s\n%s" % (text, slurm.logs())
        assert time.time() < deadline, "job not ready: %s\n%s" % (text, slurm.logs())
        time.sleep(0.2)


def check_slurm_stacks(slurm, jobid, ready, how, extra=(), job=None):
    """cluster stacks --slurm of job jobid, each node reached through `srun --overlap`, run as how
    says: 'inside' (in a step of the allocation on node a, started as a user gets a shell on a
    node of a running job: srun --jobid J --overlap -w nodeA; SLURM_JOB_NODELIST there names
    node a only) or 'controller' (on node a outside the job, with only SLURM_JOB_ID=J set).
    Returns the text output."""
    n = slurm.nodes
    pids = {r["rank"]: r["pid"] for r in ready}
    on = {r["rank"]: r["node"] for r in ready}
    exe = "srun --overlap --jobid $SLURM_JOB_ID -N1 -n1 -w {host}"
    if how == "inside":
        pre = ["srun", "--jobid", jobid, "--overlap", "-N1", "-n1", "-w", n.host["a"], CLI,
               "cluster", "stacks", "--slurm", "--exec", exe]
    else:
        # Only the job id: --slurm asks squeue for the job's nodes.
        pre = ["env", "SLURM_JOB_ID=" + jobid, CLI, "cluster", "stacks", "--slurm", "--exec", exe]
    pre += list(extra)
    job = job or "slurm:%s.0" % jobid
    out = json.loads(slurm.run("a", *pre, "--json", timeout=60).stdout)
    assert out["job"] == job, out
    assert out["world_size"] == 4 and out["missing"] == [] and out["errors"] == [], out
    groups = out["groups"]
    assert [g["ranks"] for g in groups] == [[3], [0, 1, 2]], groups
    assert groups[0]["pid"] == pids[3] and groups[0]["nodes"] == [on[3]]
    assert [f["func"] for f in groups[0]["frames"]] == ["stuck_in_sleep", "main", "<module>"]
    assert groups[0]["frames"][0]["line"] == bp(SLURM_JOB, "stuck_call")
    assert [f["func"] for f in groups[1]["frames"]] == ["wait_for_peers", "main", "<module>"]
    assert groups[1]["frames"][0]["line"] == bp(SLURM_JOB, "wait")
    assert sorted(groups[1]["nodes"]) == sorted({on[r] for r in (0, 1, 2)})
    text = slurm.run("a", *pre, timeout=60).stdout
    assert re.search(r"^job %s: world size 4, 4 ranks answered on 2 of 2 nodes, 2 groups$"
                     % re.escape(job), text, re.M), text
    assert re.search(r"^1 rank: 3 \(node %s, pid %d\)\n  > stuck_in_sleep \(" % (
        re.escape(on[3]), pids[3]), text, re.M), text
    assert re.search(r"^3 ranks: 0-2\n    wait_for_peers \(", text, re.M), text
    for r in ready:  # the ranks' maps, read on their own node
        k = "a" if r["node"] == n.host["a"] else "b"
        maps = slurm.run(k, "cat", "/proc/%d/maps" % r["pid"]).stdout
        assert ("libprobing" in maps) == ("--no-inject" not in extra), (r, extra)
    return text


@pytest.mark.parametrize("mpi", ["none", "pmi2"])
def test_srun_job(slurm, tmp_path, mpi):
    """srun -N2 -n4: tasks 0-1 on node a, 2-3 on node b, task 3 stuck; cluster list and stacks
    --slurm from a step inside the allocation, and stacks from the controller's node outside it.
    With --mpi=pmi2 SLURM's PMI-2 server starts the tasks (PMI_RANK, PMI_SIZE, PMI_JOBID
    J.STEP, no MPI_LOCALRANKID): a PMI job whose local ranks and nodes come from SLURM."""
    n = slurm.nodes
    out = tmp_path / "srun.out"
    proc = n.start("a", ["srun", "--mpi=" + mpi, "-N2", "-n4", "-J", "probing-srun", DEBIAN,
                         SLURM_JOB], out, slurm.env)
    ready = slurm_ready(out, 4, proc, slurm)
    assert {r["rank"]: r["node"] for r in ready} == {0: n.host["a"], 1: n.host["a"],
                                                     2: n.host["b"], 3: n.host["b"]}
    jobid = slurm.run("a", "squeue", "-h", "-n", "probing-srun", "-o", "%i").stdout.strip()
    assert jobid.isdigit(), jobid
    job = ("pmi:%s.0" if mpi == "pmi2" else "slurm:%s.0") % jobid
    exe = "srun --overlap --jobid $SLURM_JOB_ID -N1 -n1 -w {host}"
    lst = json.loads(slurm.run("a", "srun", "--jobid", jobid, "--overlap", "-N1", "-n1", "-w",
                               n.host["a"], CLI, "cluster", "list", "--slurm", "--exec", exe,
                               "--json", timeout=60).stdout)
    j = [x for x in lst["jobs"] if x["job"] == job]
    assert len(j) == 1 and j[0]["missing"] == [], lst
    assert [(x["rank"], x["local_rank"], x["group_rank"], x["node"], x["pid"])
            for x in j[0]["ranks"]] == [(r["rank"], r["rank"] % 2, r["rank"] // 2, r["node"],
                                         r["pid"]) for r in sorted(ready, key=lambda r: r["rank"])]
    text = check_slurm_stacks(slurm, jobid, ready, "inside", job=job)
    print("$ srun --jobid %s --overlap -N1 -n1 -w %s probing cluster stacks --slurm --exec "
          "'srun --overlap --jobid $SLURM_JOB_ID -N1 -n1 -w {host}'\n%s" % (jobid, n.host["a"], text))
    text = check_slurm_stacks(slurm, jobid, ready, "controller", job=job)
    print("$ SLURM_JOB_ID=%s probing cluster stacks --slurm --exec 'srun --overlap --jobid "
          "$SLURM_JOB_ID -N1 -n1 -w {host}'\n%s" % (jobid, text))


def test_sbatch_job(slurm, tmp_path):
    """sbatch -N2 -n4 of a script whose srun starts the tasks: the batch shell is no rank, the
    step's tasks are; cluster stacks --slurm --no-inject from a step inside the allocation (no
    probe loaded in any task after)."""
    n = slurm.nodes
    out = os.path.join(n.dir, "sbatch.out")  # outside the nodes' private /tmp
    script = os.path.join(n.dir, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\nexec srun %s %s\n" % (DEBIAN, SLURM_JOB))
    r = slurm.run("a", "sbatch", "--parsable", "-N2", "-n4", "-o", out, script)
    jobid = r.stdout.strip().split(";")[0]
    assert jobid.isdigit(), r.stdout
    ready = slurm_ready(out, 4, None, slurm)
    text = check_slurm_stacks(slurm, jobid, ready, "inside", ["--no-inject"])
    print("$ (sbatch) srun --jobid %s --overlap ... probing cluster stacks --slurm --no-inject\n%s"
          % (jobid, text))


def test_srun_torchrun(slurm, tmp_path):
    """The usual way to run torch on SLURM: srun -N2 -n2 starts one torchrun agent a node (each a
    SLURM task, Python, with SLURM_PROCID), c10d rendezvous on node a, 2 ranks a node, rank 3
    stuck in C holding the GIL (samples/cluster_job.py). The agents are not ranks: the job is
    torchrun's, its 4 ranks found on both nodes through --slurm from inside the allocation."""
    n = slurm.nodes
    out = tmp_path / "torchrun.out"
    port = 29400 + os.getpid() % 500
    env = dict(slurm.env, GLOO_SOCKET_IFNAME="eth0", STUCK_RANK="3")
    proc = n.start("a", ["srun", "-N2", "-n2", "-J", "probing-torchrun", TORCHRUN, "--nnodes", "2",
                         "--nproc_per_node", "2", "--redirects", "1", "--tee", "1",
                         "--rdzv_backend", "c10d", "--rdzv_endpoint",
                         "%s:%d" % (n.addr["a"], port), "--rdzv_id", "probing-srun", JOB], out,
                   env)
    deadline = time.time() + 120
    while True:
        text = open(out).read() if os.path.exists(out) else ""
        ready = [json.loads(m) for m in re.findall(r"ready (\{[^{}]*\})", text)]
        if len(ready) >= 4:
            break
        assert proc.poll() is None and time.time() < deadline, "job not ready: %s\n%s" % (
            text[-3000:], slurm.logs())
        time.sleep(0.3)
    pids = {r["rank"]: r["pid"] for r in ready}
    jobid = slurm.run("a", "squeue", "-h", "-n", "probing-torchrun", "-o", "%i").stdout.strip()
    assert jobid.isdigit(), jobid
    exe = "srun --overlap --jobid $SLURM_JOB_ID -N1 -n1 -w {host}"
    pre = ["srun", "--jobid", jobid, "--overlap", "-N1", "-n1", "-w", n.host["a"], CLI,
           "cluster"]
    lst = json.loads(slurm.run("a", *pre, "list", "--slurm", "--exec", exe, "--json",
                               timeout=60).stdout)
    # One job, torchrun's: no slurm:J.0 job of the two agents.
    assert [j["launcher"] for j in lst["jobs"]] == ["torchrun"], lst
    j = lst["jobs"][0]
    assert re.match(r"^torchrun:probing-srun@nodea-\d+:\d+$", j["job"]), j["job"]
    assert j["missing"] == [] and [(x["rank"], x["local_rank"]) for x in j["ranks"]] == [
        (0, 0), (1, 1), (2, 0), (3, 1)], j
    assert {x["rank"]: x["pid"] for x in j["ranks"]} == pids
    assert [x["node"] for x in j["ranks"]] == [n.host["a"]] * 2 + [n.host["b"]] * 2
    out = json.loads(slurm.run("a", *pre, "stacks", "--slurm", "--exec", exe, "--json",
                               timeout=60).stdout)
    assert out["world_size"] == 4 and out["missing"] == [] and out["errors"] == [], out
    groups = out["groups"]
    assert [g["ranks"] for g in groups] == [[3], [0, 1, 2]], groups
    assert groups[0]["nodes"] == [n.host["b"]] and groups[0]["pid"] == pids[3]
    assert groups[0]["frames"][0]["func"] == "stuck_in_c"
    assert groups[1]["frames"][0]["func"] == "all_reduce"
    text = slurm.run("a", *pre, "stacks", "--slurm", "--exec", exe, timeout=60).stdout
    print("$ srun --jobid %s --overlap -N1 -n1 -w %s probing cluster stacks --slurm --exec '%s'\n%s"
          % (jobid, n.host["a"], exe, text))
    assert re.search(r"^1 rank: 3 \(node %s, pid %d\)\n  > stuck_in_c \(" % (
        re.escape(n.host["b"]), pids[3]), text, re.M), text
