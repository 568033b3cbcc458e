# SPDX-License-Identifier: MIT
"""Test target: a job whose tasks a real SLURM starts (`srun` or `sbatch` + `srun`), plain Python
without MPI: the task whose SLURM_PROCID is STUCK_RANK (default the last) sleeps in
stuck_in_sleep, every other one waits in wait_for_peers (for a peer that never comes: a read on
a pipe no one writes). Each prints "ready {...}" once in place, with its node's host name."""
import json
import os
import socket
import sys
import time


def ready(rank, where):
    print("ready " + json.dumps({"rank": rank, "pid": os.getpid(), "where": where,
                                 "node": socket.gethostname()}), flush=True)


def stuck_in_sleep(rank):
    ready(rank, "stuck")
    while True:
        time.sleep(3600)  # BP: stuck_call


def wait_for_peers(rank):
    r, _ = os.pipe()
    ready(rank, "wait")
    os.read(r, 1)  # BP: wait


def main():
    rank = int(os.environ["SLURM_PROCID"])
    stuck = int(os.environ.get("STUCK_RANK", int(os.environ["SLURM_NTASKS"]) - 1))
    if rank == stuck:
        stuck_in_sleep(rank)
    else:
        wait_for_peers(rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
