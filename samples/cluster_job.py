# SPDX-License-Identifier: MIT
"""Test target: a tiny torch.distributed job (gloo, CPU) started by torchrun, in which one rank
(STUCK_RANK, default the last) enters a C function that never returns while holding the GIL
(ctypes.PyDLL keeps the GIL during the call) and every other rank waits for it in all_reduce:
the hang `probing cluster stacks` is for. Each rank prints "ready {...}" once it is in place.
With GATE=PATH each rank first prints "ready {... "where": "gate"}" and waits for that file to
exist (time to start `perf --comm` on every rank), then makes one more all_reduce before the
hang. With MISMATCH=1 too, the stuck rank calls broadcast instead (where the others call
all_reduce), and stays there. With DEAD=1 instead, the stuck rank's process exits (status 0:
torchrun keeps the others), and the others' next all_reduce fails; they catch the error, print
"ready {... "where": "failed"}" and sleep."""
import ctypes
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def stuck_in_c():
    libc = ctypes.PyDLL(None)
    print("ready " + json.dumps({"rank": dist.get_rank(), "pid": os.getpid(), "where": "stuck"}),
          flush=True)
    libc.pause()  # BP: stuck_call


def other_collective(t):
    """MISMATCH=1: the stuck rank calls broadcast where the others call all_reduce (the same
    sequence number of the group): gloo hangs both sides."""
    print("ready " + json.dumps({"rank": dist.get_rank(), "pid": os.getpid(), "where": "broadcast"}),
          flush=True)
    dist.broadcast(t, src=0)  # BP: mismatch_broadcast


def survive(t):
    """DEAD=1: the others' all_reduce fails once the stuck rank's process is gone (gloo); they
    outlive the error (as a job waiting to be restarted would) and sleep."""
    try:
        dist.all_reduce(t)  # BP: dead_peer
        where = "returned"
    except RuntimeError:
        where = "failed"
    print("ready " + json.dumps({"rank": dist.get_rank(), "pid": os.getpid(), "where": where}),
          flush=True)
    while True:
        time.sleep(1)  # BP: survivor_sleep


def wait_for_peers(t):
    print("ready " + json.dumps({"rank": dist.get_rank(), "pid": os.getpid(), "where": "all_reduce"}),
          flush=True)
    dist.all_reduce(t)  # BP: all_reduce


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    stuck = int(os.environ.get("STUCK_RANK", dist.get_world_size() - 1))
    t = torch.ones(4)
    dist.all_reduce(t)  # every rank is up: one collective that completes
    gate = os.environ.get("GATE")
    if gate:
        print("ready " + json.dumps({"rank": dist.get_rank(), "pid": os.getpid(),
                                     "where": "gate"}), flush=True)
        while not os.path.exists(gate):
            time.sleep(0.05)
        dist.all_reduce(t)  # BP: after_gate
    if os.environ.get("DEAD"):
        if dist.get_rank() == stuck:
            os._exit(0)  # BP: dead_exit
        survive(t)  # BP: dead_main
    if dist.get_rank() == stuck:
        if os.environ.get("MISMATCH"):
            other_collective(t)
        stuck_in_c()
    else:
        wait_for_peers(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
