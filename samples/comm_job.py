# SPDX-License-Identifier: MIT
"""Test target: a torch.distributed job (gloo, CPU) started by torchrun that runs steps of
collectives for ever: per step a little compute (as many matrix products as took COMPUTE_MS at
the start: the same work every step) and COLLECTIVES
all_reduce calls (default 10), and with OPS=1 one of each other call (all_gather, broadcast,
barrier, async all_reduce, send/recv, isend/irecv, batch_isend_irecv of a P2POp of torch's own
isend/irecv held from the start and of one made now, and reduce_scatter, which torch 1.13's gloo
lacks: it fails there; what each point-to-point call received is checked, its wrong values
counted in "p2p_errors"). The rank
STRAGGLER (default none) sleeps DELAY_MS (default 50) before each all_reduce: the straggler of
`probing cluster collectives`. Each rank prints "ready {...}" after its first step and
"step {...}" every REPORT steps (with the mean step time, wall and process CPU, in ms since the
previous report). With UNMATCHED=R and GATE=FILE, once FILE exists (rank 0 looks and tells
the others by a broadcast each step) rank 0 sends to rank R,
which never posts the matching recv (it sleeps): the point-to-point hang of `cluster
collectives`; the other ranks go on."""
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


def p2p(rank, peer, t):
    """send/recv, isend/irecv, batch_isend_irecv between rank and peer (rank even sends first):
    the number of received tensors that do not hold what the peer sent."""
    mine = torch.full_like(t, float(rank + 1))
    got = torch.zeros_like(t)
    errors = 0

    def check():
        nonlocal errors
        errors += int(not bool((got == float(peer + 1)).all()))
        got.zero_()
    if rank % 2 == 0:
        dist.send(mine, peer)  # BP: send
        dist.recv(got, peer)
    else:
        dist.recv(got, peer)  # BP: recv
        dist.send(mine, peer)
    check()
    w = dist.isend(mine, peer) if rank % 2 == 0 else dist.irecv(got, peer)  # BP: isend
    w.wait()
    if rank % 2:
        check()
    # A P2POp of torch's own function held from the start, and one of the current attribute.
    if rank % 2 == 0:
        ops = [dist.P2POp(ISEND, mine, peer), dist.P2POp(dist.irecv, got, peer)]
    else:
        ops = [dist.P2POp(IRECV, got, peer), dist.P2POp(dist.isend, mine, peer)]
    for w in dist.batch_isend_irecv(ops):  # BP: batch
        w.wait()
    check()
    return errors


def other_ops(rank, world, t):
    outs = [torch.zeros_like(t) for _ in range(world)]
    dist.all_gather(outs, t)
    dist.broadcast(t, src=0)
    dist.barrier()
    dist.all_reduce(t, async_op=True).wait()  # BP: async
    peer = rank ^ 1
    errors = p2p(rank, peer, t) if peer < world else 0
    for unsupported in (lambda: dist.reduce_scatter(t, [t] * world),):
        try:
            unsupported()
        except RuntimeError:
            pass
    return errors


def unmatched(rank, peer, t):
    """Rank 0 sends to peer, which never posts the recv."""
    if rank == 0:
        dist.send(t, peer)  # BP: unmatched_send
    elif rank == peer:
        while True:
            time.sleep(0.5)  # BP: never_recv


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    n = int(os.environ.get("COLLECTIVES", "10"))
    straggler = int(os.environ.get("STRAGGLER", "-1"))
    delay = float(os.environ.get("DELAY_MS", "50")) / 1e3
    compute = float(os.environ.get("COMPUTE_MS", "5"))
    ops = os.environ.get("OPS") == "1"
    report = int(os.environ.get("REPORT", "20"))
    unmatched_peer = int(os.environ.get("UNMATCHED", "-1"))
    gate = os.environ.get("GATE")
    t = torch.ones(int(os.environ.get("NUMEL", "1024")))
    a = torch.rand(64, 64) / 64
    iters = calibrate(compute, a)
    step, t0, c0, p2p_errors = 0, time.perf_counter(), time.process_time(), 0
    while True:
        a = spin(iters, a)
        for _ in range(n):
            if rank == straggler:
                time.sleep(delay)
            dist.all_reduce(t)  # BP: all_reduce
            t.div_(world)
        if ops:
            p2p_errors += other_ops(rank, world, t)
        step += 1
        if step == 1:
            say("ready " + json.dumps({"rank": rank, "pid": os.getpid()}))
        if unmatched_peer >= 0 and gate:
            # Rank 0 decides for all: every rank leaves its step loop at the same step.
            go = torch.tensor([int(rank == 0 and os.path.exists(gate))])
            dist.broadcast(go, src=0)
            if go.item():
                unmatched(rank, unmatched_peer, t)
        if step % report == 0:
            now, cpu = time.perf_counter(), time.process_time()
            say("step " + json.dumps({"rank": rank, "step": step, "ms": (now - t0) * 1e3 / report,
                                      "cpu_ms": (cpu - c0) * 1e3 / report,
                                      "p2p_errors": p2p_errors}))
            t0, c0 = now, cpu
    return 0


if __name__ == "__main__":
    sys.exit(main())
