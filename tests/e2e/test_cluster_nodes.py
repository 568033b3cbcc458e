# SPDX-License-Identifier: MIT
"""probing cluster across two "nodes" made by the test as separate machines would be: each its
own network namespace (an address on a bridge the test creates, in a private 10.213.X.0/24 that
lives only inside these namespaces), PID namespace (its own /proc), UTS namespace (its own
hostname) and mount namespace (a private /tmp, an /etc/hosts naming both nodes), with Debian's
sshd listening on that node's address only, key-only, with a throwaway key. A torchrun job of 4
ranks is split 2+2 between them (MASTER_ADDR on node A), rank 3 (node B) stuck in C holding the
GIL; the CLI runs in a third network namespace (the "login node") and reaches the nodes with
ssh; the same with torchrun's c10d rendezvous instead of a fixed MASTER_ADDR. Everything is torn
down afterwards, on failure too; every wait is bounded."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import CLI, sanitizer_env  # noqa: E402
from test_cluster import JOB, TORCHRUN, torchrun_argv  # noqa: E402

pytestmark = pytest.mark.serial  # namespace nodes and `cluster` over the node's jobs

SSHD = "/usr/sbin/sshd"


def run(*argv, check=True, timeout=30):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d): %s%s" % (" ".join(map(str, argv)), r.returncode,
                                                       r.stdout, r.stderr))
    return r


class Nodes:
    """Two nodes (a, b) and a login namespace (c) on one bridge; sshd in each node."""

    def __init__(self):
        tag = os.getpid() % 200 + 20
        self.net = "10.213.%d" % tag
        self.ns = {k: "pbcl%d%s" % (os.getpid(), k) for k in "abc"}
        self.addr = {"a": self.net + ".1", "b": self.net + ".2", "c": self.net + ".254"}
        self.host = {"a": "nodea-%d" % tag, "b": "nodeb-%d" % tag}
        # Outside /tmp: each node mounts its own private /tmp over it.
        self.dir = tempfile.mkdtemp(prefix="probing-cluster-", dir="/var/tmp")
        self.inits = {}
        self.jobs = []

    def setup(self):
        for ns in self.ns.values():
            run("ip", "netns", "add", ns)
        c = self.ns["c"]
        run("ip", "-n", c, "link", "set", "lo", "up")
        run("ip", "-n", c, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", c, "addr", "add", self.addr["c"] + "/24", "dev", "br0")
        run("ip", "-n", c, "link", "set", "br0", "up")
        for k in "ab":
            ns = self.ns[k]
            run("ip", "-n", c, "link", "add", "v" + k, "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            run("ip", "-n", c, "link", "set", "v" + k, "master", "br0", "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "addr", "add", self.addr[k] + "/24", "dev", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")
        d = self.dir
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", d + "/id")
        shutil.copy(d + "/id.pub", d + "/authorized_keys")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        # The nodes know each other's names, as a cluster's DNS would tell them: torchrun's c10d
        # rendezvous hands its ranks node a's host name as MASTER_ADDR. Bound over /etc/hosts
        # in each node's own mount namespace only.
        with open(d + "/hosts", "w") as f:
            f.write("127.0.0.1 localhost\n%s %s\n%s %s\n" % (
                self.addr["a"], self.host["a"], self.addr["b"], self.host["b"]))
        for k in "ab":
            run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", "%s/host_%s" % (d, k))
            with open("%s/sshd_%s.conf" % (d, k), "w") as f:
                f.write("ListenAddress %s\nPort 22\nHostKey %s/host_%s\nPidFile none\n"
                        "AuthorizedKeysFile %s/authorized_keys\nStrictModes no\n"
                        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                        "PermitRootLogin prohibit-password\nAcceptEnv none\n" % (
                            self.addr[k], d, k, d))
            # PID 1 of the node: a shell that names the node, mounts its private /tmp and
            # becomes sshd; --kill-child takes the whole node down when unshare is killed.
            script = ("hostname %s && mount -t tmpfs tmpfs /tmp && mount --bind %s/hosts /etc/hosts"
                      " && exec %s -D -e -f %s/sshd_%s.conf" % (self.host[k], d, SSHD, d, k))
            self.inits[k] = subprocess.Popen(
                ["ip", "netns", "exec", self.ns[k], "unshare", "--pid", "--fork", "--kill-child",
                 "--mount-proc", "--uts", "--mount", "--propagation", "private", "sh", "-c", script],
                stdout=open("%s/sshd_%s.log" % (d, k), "w"), stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        for k in "ab":
            deadline = time.time() + 20
            while True:
                r = subprocess.run(["ip", "netns", "exec", self.ns["c"], *self.ssh_argv(),
                                    "root@" + self.addr[k], "hostname"], capture_output=True,
                                   text=True, timeout=15)
                if r.returncode == 0:
                    assert r.stdout.strip() == self.host[k]
                    break
                assert time.time() < deadline, "sshd of node %s did not answer: %s %s" % (
                    k, r.stderr, open("%s/sshd_%s.log" % (d, k)).read())
                time.sleep(0.2)

    def ssh_argv(self):
        return ["ssh", "-i", self.dir + "/id", "-o", "StrictHostKeyChecking=no", "-o",
                "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                "-o", "LogLevel=ERROR"]

    def pid1(self, k):
        """The host pid of node k's PID 1 (the child of its unshare)."""
        p = self.inits[k].pid
        deadline = time.time() + 10
        while time.time() < deadline:
            kids = open("/proc/%d/task/%d/children" % (p, p)).read().split()
            if kids:
                return int(kids[0])
            time.sleep(0.05)
        raise AssertionError("node %s has no init" % k)

    def start(self, k, argv, out, env):
        """Starts argv inside node k (all its namespaces), as its own session."""
        e = dict(os.environ)
        e["PYTHONUNBUFFERED"] = "1"  # torchrun's tee of the ranks' output (test_cluster.py)
        # make asan: what the node starts (a job's ranks, srun's tasks through slurmd) loads the
        # sanitized probe when asked, so the runtimes go first everywhere
        e.update(sanitizer_env())
        e.update(env)
        p = subprocess.Popen(["nsenter", "-t", str(self.pid1(k)), "-n", "-p", "-m", "-u", "--",
                              *argv], stdout=open(out, "w"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=e)
        self.jobs.append(p)
        return p

    def teardown(self):
        for p in self.jobs + list(self.inits.values()):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for ns in self.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def nodes():
    assert os.path.exists(SSHD), "sshd missing: run 'make deps' (openssh-server)"
    assert os.path.exists(TORCHRUN), "torchrun missing: run 'make deps' (python3-torch)"
    n = Nodes()
    try:
        n.setup()
        yield n
    finally:
        n.teardown()
        left = run("ip", "netns", "list").stdout
        assert not any(ns in left for ns in n.ns.values()), left


def ready_lines(path):
    return [json.loads(m) for m in re.findall(r"ready (\{.*\})", open(path).read())]


def test_stacks_across_two_nodes(nodes, tmp_path):
    port = 29400 + os.getpid() % 500
    env = {"GLOO_SOCKET_IFNAME": "eth0", "STUCK_RANK": "3"}
    outs = {}
    for i, k in enumerate("ab"):
        outs[k] = tmp_path / ("node_%s.out" % k)
        nodes.start(k, torchrun_argv(2, port, ["--nnodes", "2", "--node_rank", str(i),
                                              "--master_addr", nodes.addr["a"]]), outs[k], env)
    deadline = time.time() + 120
    while sum(len(ready_lines(o)) for o in outs.values()) < 4:
        assert time.time() < deadline, "job not ready: %s\n%s" % (
            open(outs["a"]).read()[-2000:], open(outs["b"]).read()[-2000:])
        assert all(p.poll() is None for p in nodes.jobs), "%s\n%s" % (
            open(outs["a"]).read()[-2000:], open(outs["b"]).read()[-2000:])
        time.sleep(0.3)
    on = {k: sorted(r["rank"] for r in ready_lines(outs[k])) for k in "ab"}
    assert on == {"a": [0, 1], "b": [2, 3]}
    pid3 = [r["pid"] for r in ready_lines(outs["b"]) if r["rank"] == 3][0]  # in node b's PID ns

    exec_tmpl = " ".join(nodes.ssh_argv()) + " root@{host}"
    hosts = "%s,%s" % (nodes.addr["a"], nodes.addr["b"])
    cmd = ["ip", "netns", "exec", nodes.ns["c"], CLI, "cluster", "stacks", "--hosts", hosts,
           "--exec", exec_tmpl]
    r = run(*cmd, "--json", timeout=120)
    out = json.loads(r.stdout)
    assert out["world_size"] == 4 and out["missing"] == [] and out["errors"] == [], out
    groups = out["groups"]
    assert [g["ranks"] for g in groups] == [[3], [0, 1, 2]], groups
    assert groups[0]["nodes"] == [nodes.host["b"]] and groups[0]["pid"] == pid3
    assert groups[0]["frames"][0]["func"] == "stuck_in_c"
    assert sorted(groups[1]["nodes"]) == sorted([nodes.host["a"], nodes.host["b"]])
    assert groups[1]["frames"][0]["func"] == "all_reduce"

    text = run(*cmd, timeout=120).stdout
    print("$ probing cluster stacks --hosts %s --exec %r\n%s" % (hosts, exec_tmpl, text))
    assert re.search(r"^job torchrun:\S+@%s:%d: world size 4, 4 ranks answered on 2 of 2 nodes, "
                     r"2 groups$" % (re.escape(nodes.addr["a"]), port), text, re.M), text
    assert re.search(r"^1 rank: 3 \(node %s, pid %d\)\n  > stuck_in_c \(" % (
        nodes.host["b"], pid3), text, re.M), text
    assert re.search(r"^3 ranks: 0-2\n    all_reduce \(", text, re.M), text

    # list across the nodes; and node b gone silent (its sshd stopped): its ranks are missing,
    # and it costs its timeout, no more.
    r = run("ip", "netns", "exec", nodes.ns["c"], CLI, "cluster", "list", "--hosts", hosts,
            "--exec", exec_tmpl, "--json", timeout=60)
    j = json.loads(r.stdout)["jobs"][0]
    assert [(x["rank"], x["node"]) for x in j["ranks"]] == [
        (0, nodes.host["a"]), (1, nodes.host["a"]), (2, nodes.host["b"]), (3, nodes.host["b"])]
    # probing serve on the login node with the same host options: the page's job list and
    # grouped stacks come from both nodes (its API asked from the login node's loopback).
    srv = subprocess.Popen(["ip", "netns", "exec", nodes.ns["c"], CLI, "serve", "--listen",
                            "127.0.0.1:0", "--hosts", hosts, "--exec", exec_tmpl],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    nodes.jobs.append(srv)
    first = srv.stdout.readline()
    m = re.match(r"^probing serve: (http://\S+/)$", first)
    assert m, (first, srv.stderr.read() if srv.poll() is not None else "")
    client = ("import json, sys, urllib.request as u\n"
              "url, body = sys.argv[1], sys.argv[2]\n"
              "h = {'Origin': url.split('/api/')[0], 'Content-Type': 'application/json'}\n"
              "req = u.Request(url, data=body.encode() if body else None, headers=h)\n"
              "print(u.urlopen(req, timeout=120).read().decode())\n")

    def api(path, body=""):
        r = run("ip", "netns", "exec", nodes.ns["c"], "/usr/bin/python3", "-c", client,
                m.group(1) + path.lstrip("/"), body, timeout=150)
        return json.loads(r.stdout)

    jobs = api("/api/jobs")["jobs"]
    assert [(x["rank"], x["node"]) for x in jobs[0]["ranks"]] == [
        (0, nodes.host["a"]), (1, nodes.host["a"]), (2, nodes.host["b"]), (3, nodes.host["b"])]
    st = api("/api/jobs/stacks", json.dumps({"job": jobs[0]["job"]}))
    assert [g["ranks"] for g in st["groups"]] == [[3], [0, 1, 2]], st
    assert st["groups"][0]["nodes"] == [nodes.host["b"]] and st["groups"][0]["pid"] == pid3
    assert st["groups"][0]["frames"][0]["func"] == "stuck_in_c"
    assert st["missing"] == [] and st["errors"] == [], st
    srv.send_signal(signal.SIGTERM)
    assert srv.wait(timeout=20) == 0 and srv.stderr.read() == ""

    run("ip", "netns", "exec", nodes.ns["b"], "ip", "link", "set", "eth0", "down")
    t0 = time.time()
    r = run(*cmd, "--json", "--node-timeout", "4000", timeout=60)
    took = time.time() - t0
    out = json.loads(r.stdout)
    assert out["missing"] == [2, 3]
    assert [g["ranks"] for g in out["groups"]] == [[0, 1]]
    assert [e["node"] for e in out["errors"]] == [nodes.addr["b"]]
    assert took < 4 + 8, took


def test_stacks_across_two_nodes_c10d(nodes, tmp_path):
    """torchrun --nnodes 2 with c10d rendezvous (the store on node a, MASTER_ADDR node a's host
    name chosen by torchrun itself), 2 ranks a node, rank 3 stuck: found through --hosts."""
    port = 29400 + os.getpid() % 500
    env = {"GLOO_SOCKET_IFNAME": "eth0", "STUCK_RANK": "3"}
    rdzv_id = "probing-c10d-%d" % os.getpid()
    outs = {}
    for k in "ab":
        outs[k] = tmp_path / ("node_%s.out" % k)
        nodes.start(k, [TORCHRUN, "--nnodes", "2", "--nproc_per_node", "2", "--redirects", "1",
                        "--tee", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint",
                        "%s:%d" % (nodes.addr["a"], port), "--rdzv_id", rdzv_id, JOB],
                    outs[k], env)
    deadline = time.time() + 120
    while sum(len(ready_lines(o)) for o in outs.values()) < 4:
        assert time.time() < deadline, "job not ready: %s\n%s" % (
            open(outs["a"]).read()[-2000:], open(outs["b"]).read()[-2000:])
        assert all(p.poll() is None for p in nodes.jobs), "%s\n%s" % (
            open(outs["a"]).read()[-2000:], open(outs["b"]).read()[-2000:])
        time.sleep(0.3)
    on = {r["rank"]: k for k in "ab" for r in ready_lines(outs[k])}
    pid3 = [r["pid"] for k in "ab" for r in ready_lines(outs[k]) if r["rank"] == 3][0]
    assert sorted(on) == [0, 1, 2, 3] and sorted(on.values()) == ["a", "a", "b", "b"], on
    exec_tmpl = " ".join(nodes.ssh_argv()) + " root@{host}"
    hosts = "%s,%s" % (nodes.addr["a"], nodes.addr["b"])
    cmd = ["ip", "netns", "exec", nodes.ns["c"], CLI, "cluster", "stacks", "--hosts", hosts,
           "--exec", exec_tmpl]
    out = json.loads(run(*cmd, "--json", timeout=120).stdout)
    assert out["world_size"] == 4 and out["missing"] == [] and out["errors"] == [], out
    assert re.match(r"^torchrun:%s@\S+:\d+$" % re.escape(rdzv_id), out["job"]), out["job"]
    groups = out["groups"]
    assert [g["ranks"] for g in groups] == [[3], [0, 1, 2]], groups
    assert groups[0]["nodes"] == [nodes.host[on[3]]] and groups[0]["pid"] == pid3
    assert groups[0]["frames"][0]["func"] == "stuck_in_c"
    assert sorted(groups[1]["nodes"]) == sorted([nodes.host["a"], nodes.host["b"]])
    assert groups[1]["frames"][0]["func"] == "all_reduce"
    text = run(*cmd, timeout=120).stdout
    print("$ probing cluster stacks --hosts %s --exec %r\n%s" % (hosts, exec_tmpl, text))
    assert re.search(r"^job torchrun:%s@\S+: world size 4, 4 ranks answered on 2 of 2 nodes, "
                     r"2 groups$" % re.escape(rdzv_id), text, re.M), text
    assert re.search(r"^1 rank: 3 \(node %s, pid %d\)\n  > stuck_in_c \(" % (
        nodes.host[on[3]], pid3), text, re.M), text
