# SPDX-License-Identifier: MIT
"""Test target: a torch DataLoader with num_workers=2 whose workers block in the dataset's
__getitem__ (the hang `--subprocesses` is for), with other children beside them.
Alone (no RANK in the environment): every item blocks; the process also starts a plain
multiprocessing child (mp_child), a `sleep 1000` child (no Python), a child that exits and is
not reaped (a zombie) and, with FOREIGN=1, a Python child run as `nobody` (setpriv); it prints
"ready {...}" with the children's pids and its main thread waits for the first batch.
As a rank of a torch.distributed job (torchrun, gloo): the items of rank STUCK_RANK (default
the last) block in its two workers and its main thread waits for them; every other rank gets
its first item and waits in all_reduce for the stuck one, its workers idle in _worker_loop.
Each rank prints "ready {...}" once its workers are started."""
import datetime
import json
import multiprocessing
import os
import subprocess
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

BLOCK = True


class Toy(Dataset):
    def __init__(self, block):
        self.block = block

    def __len__(self):
        return 1000

    def __getitem__(self, i):
        while self.block:
            time.sleep(3600)  # BP: getitem
        return torch.tensor([float(i)])


def mp_child():
    while True:
        time.sleep(3600)  # BP: mp_child


def alone():
    kids = {}
    p = multiprocessing.Process(target=mp_child, name="helper", daemon=True)
    p.start()
    kids["mp"] = p.pid
    kids["sleep"] = subprocess.Popen(["sleep", "1000"]).pid
    z = subprocess.Popen(["true"])
    kids["zombie"] = z.pid
    if os.environ.get("FOREIGN"):
        f = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              sys.executable, "-c", "import time; time.sleep(1000)"])
        kids["foreign"] = f.pid
    it = iter(DataLoader(Toy(True), num_workers=2, batch_size=None))
    kids["workers"] = [w.pid for w in it._workers]
    print("ready " + json.dumps({"pid": os.getpid(), "children": kids}), flush=True)
    next(it)  # BP: wait_batch
    return z  # never reached: the zombie's Popen stays referenced, not reaped


def rank():
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=datetime.timedelta(hours=1))
    r, world = dist.get_rank(), dist.get_world_size()
    stuck = int(os.environ.get("STUCK_RANK", world - 1))
    it = iter(DataLoader(Toy(r == stuck), num_workers=2, batch_size=None))
    workers = [w.pid for w in it._workers]
    print("ready " + json.dumps({"rank": r, "pid": os.getpid(), "workers": workers,
                                 "where": "stuck" if r == stuck else "all_reduce"}), flush=True)
    t = next(it)  # BP: rank_batch
    dist.all_reduce(t)  # BP: rank_all_reduce
    return 0


if __name__ == "__main__":
    sys.exit(rank() if "RANK" in os.environ else alone())
