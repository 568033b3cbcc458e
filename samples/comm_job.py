# SPDX-License-Identifier: MIT
"""Test target: a torch.distributed job (gloo, CPU) started by torchrun that runs steps of
collectives for ever: per step a little compute (as many matrix products as took COMPUTE_MS at
the start: the same work every step) and COLLECTIVES
all_reduce calls (default 10), and with OPS=1 one of each other call (all_gather, broadcast,
barrier, async all_reduce, send/recv, isend/irecv, a P2POp of torch's own isend/irecv held
from the start, and reduce_scatter, which torch 1.13's gloo lacks: it fails there). The rank
STRAGGLER (default none) sleeps DELAY_MS (default 50) before each all_reduce: the straggler of
`probing cluster collectives`. Each rank prints "ready {...}" after its first step and
"step {...}" every REPORT steps (with the mean step time, wall and process CPU, in ms since the
previous report)."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

# torch's own isend/irecv, held from before any recorder starts: P2POp must still accept them.
ISEND, IRECV = dist.isend, dist.irecv


def say(line):
    """One write per line: ranks sharing one output (a launcher without torchrun's tee) never
    interleave within a line."""
    os.write(1, (line + "\n").encode())


def spin(n, a):
    for _ in range(n):
        a = (a @ a).tanh()
    return a


def calibrate(ms, a):
    """How many spin iterations take ms now: a fixed amount of work per step from then on."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < ms / 1e3:
        a = spin(10, a)
        n += 10
    return n


def other_ops(rank, world, t):
    outs = [torch.zeros_like(t) for _ in range(world)]
    dist.all_gather(outs, t)
    dist.broadcast(t, src=0)
    dist.barrier()
    dist.all_reduce(t, async_op=True).wait()  # BP: async
    peer = rank ^ 1
    if peer < world:
        if rank % 2 == 0:
            dist.send(t, peer)
            dist.recv(t, peer)
        else:
            dist.recv(t, peer)
            dist.send(t, peer)
        w = dist.isend(t, peer) if rank % 2 == 0 else dist.irecv(t, peer)
        w.wait()
        op = dist.P2POp(ISEND if rank % 2 == 0 else IRECV, t, peer)
        for w in dist.batch_isend_irecv([op]):
            w.wait()
    for unsupported in (lambda: dist.reduce_scatter(t, [t] * world),):
        try:
            unsupported()
        except RuntimeError:
            pass


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    n = int(os.environ.get("COLLECTIVES", "10"))
    straggler = int(os.environ.get("STRAGGLER", "-1"))
    delay = float(os.environ.get("DELAY_MS", "50")) / 1e3
    compute = float(os.environ.get("COMPUTE_MS", "5"))
    ops = os.environ.get("OPS") == "1"
    report = int(os.environ.get("REPORT", "20"))
    t = torch.ones(int(os.environ.get("NUMEL", "1024")))
    a = torch.rand(64, 64) / 64
    iters = calibrate(compute, a)
    step, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        a = spin(iters, a)
        for _ in range(n):
            if rank == straggler:
                time.sleep(delay)
            dist.all_reduce(t)  # BP: all_reduce
            t.div_(world)
        if ops:
            other_ops(rank, world, t)
        step += 1
        if step == 1:
            say("ready " + json.dumps({"rank": rank, "pid": os.getpid()}))
        if step % report == 0:
            now, cpu = time.perf_counter(), time.process_time()
            say("step " + json.dumps({"rank": rank, "step": step, "ms": (now - t0) * 1e3 / report,
                                      "cpu_ms": (cpu - c0) * 1e3 / report}))
            t0, c0 = now, cpu
    return 0


if __name__ == "__main__":
    sys.exit(main())
