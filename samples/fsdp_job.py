# SPDX-License-Identifier: MIT
"""Test target: a FullyShardedDataParallel job (torch 2.x; gloo, CPU; a tiny model) whose ranks
are started by the sid root's launcher (or torchrun), in which one rank stops joining: at step
STOP_STEP (default 3) the rank STOP_RANK (default the last) does not run its forward, while the
others run theirs and wait inside FSDP's all-gather of the parameters for it. FSDP issues its
all-gathers and reduce-scatters itself (dist.all_gather_single / reduce_scatter_single on torch
2.14), no call of the job's own. Each rank prints "ready {...}" once in place ("where":
"forward" or "stopped", "seq": its default group's sequence number then). With GATE=FILE each
rank first prints "ready {... "where": "gate"}" once the model is wrapped and waits for FILE."""
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def say(rank, where):
    seq = dist.distributed_c10d._get_default_group()._get_sequence_number_for_group()
    os.write(1, ("ready " + json.dumps({"rank": rank, "pid": os.getpid(), "where": where,
                                        "seq": seq}) + "\n").encode())


def stop_joining(rank):
    say(rank, "stopped")
    while True:
        time.sleep(1)  # BP: fsdp_sleep


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    rank, world = dist.get_rank(), dist.get_world_size()
    stop_rank = int(os.environ.get("STOP_RANK", world - 1))
    stop_step = int(os.environ.get("STOP_STEP", "3"))
    torch.manual_seed(0)
    model = FSDP(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                     torch.nn.Linear(16, 1)), device_id=torch.device("cpu"))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gate = os.environ.get("GATE")
    if gate:
        say(rank, "gate")
        while not os.path.exists(gate):
            time.sleep(0.05)
    step = 0
    while True:
        opt.zero_grad()
        if step == stop_step:
            if rank == stop_rank:
                stop_joining(rank)
            say(rank, "forward")
        loss = model(torch.randn(8, 16)).pow(2).mean()  # BP: fsdp_forward
        loss.backward()  # BP: fsdp_backward
        opt.step()
        step += 1


if __name__ == "__main__":
    sys.exit(main())
