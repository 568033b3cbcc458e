# SPDX-License-Identifier: MIT
"""Test target: a DistributedDataParallel job (gloo, CPU; a tiny model) started by torchrun (or
by the sid root's launcher) in which one rank stops joining: at step STOP_STEP (default 3; -1:
never, every rank says "running" at step 1 and trains on) the
rank STOP_RANK (default the last) does not run its backward, while the others run theirs and
wait inside DDP's reducer for the gradient allreduce it never enters (issued from C++, no
Python call of torch.distributed). STOP=sleep (default) sleeps in Python, the GIL free;
STOP=c enters a C function that never returns holding the GIL (ctypes.PyDLL). Every rank is
also in a second process group of ranks 0 and 1 (one all_reduce there at the start): a group
the last rank is not in. Each rank prints "ready {...}" once in place ("where": "backward" or
"stopped"; "seq": its default group's sequence number then, before the backward). With
GATE=FILE each rank first prints "ready {... "where": "gate"}" once the model is built and waits
for FILE before its first step (to start `perf --comm` on every rank before training).
For tests/bench/bench_comm.py: WIDTH=N (a model of two N-wide layers, batches of 64) and
REPORT=N ("step {...}" every N steps: mean step time, wall and process CPU, in ms)."""
import ctypes
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def say(rank, where):
    """The ready line, with the default group's sequence number as torch has it here (before
    the backward's allreduce): what `cluster collectives` must read."""
    seq = dist.distributed_c10d._get_default_group()._get_sequence_number_for_group()
    os.write(1, ("ready " + json.dumps({"rank": rank, "pid": os.getpid(), "where": where,
                                        "seq": seq}) + "\n").encode())


def stop_joining(rank, how):
    say(rank, "stopped")
    if how == "c":
        ctypes.PyDLL(None).pause()  # BP: ddp_stuck_c
    while True:
        time.sleep(1)  # BP: ddp_sleep


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    rank, world = dist.get_rank(), dist.get_world_size()
    stop_rank = int(os.environ.get("STOP_RANK", world - 1))
    stop_step = int(os.environ.get("STOP_STEP", "3"))
    how = os.environ.get("STOP", "sleep")
    pair = dist.new_group([0, 1])  # every rank calls new_group; only 0 and 1 are in it
    if rank in (0, 1):
        dist.all_reduce(torch.ones(1), group=pair)
    torch.manual_seed(0)
    width = int(os.environ.get("WIDTH", "16"))  # the bench's model: WIDTH=1024
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, width), torch.nn.ReLU(),
                                    torch.nn.Linear(width, width), torch.nn.ReLU(),
                                    torch.nn.Linear(width, 1)) if width != 16 else
                torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1)))
    report = int(os.environ.get("REPORT", "0"))  # REPORT=N: "step {...}" every N steps
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gate = os.environ.get("GATE")
    if gate:  # the model built, no step yet: the test starts the recorder, then makes FILE
        say(rank, "gate")
        while not os.path.exists(gate):
            time.sleep(0.05)
    step = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while True:
        opt.zero_grad()
        loss = model(torch.randn(64 if width != 16 else 8, 16)).pow(2).mean()
        if step == 1 and stop_step < 0:
            say(rank, "running")  # STOP_STEP=-1: nobody stops, the job runs on
        if step == stop_step:
            if rank == stop_rank:
                stop_joining(rank, how)
            say(rank, "backward")
        loss.backward()  # BP: ddp_backward
        opt.step()
        step += 1
        if report and step % report == 0:
            now, cpu = time.perf_counter(), time.process_time()
            os.write(1, ("step " + json.dumps({"rank": rank, "step": step,
                                               "ms": (now - t0) * 1e3 / report,
                                               "cpu_ms": (cpu - c0) * 1e3 / report}) +
                         "\n").encode())
            t0, c0 = now, cpu


if __name__ == "__main__":
    sys.exit(main())
