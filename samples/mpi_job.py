# SPDX-License-Identifier: MIT
"""Test target: an MPI job started by a real `mpirun` (Open MPI, mpi4py), in which one rank
(STUCK_RANK, default 2) sleeps in stuck_in_sleep and never reaches the barrier, while every other
rank waits for it in comm.Barrier. Each rank prints "ready {...}" once it is in place, with its
node's host name. With COLLECTIVE=allreduce the others wait in comm.allreduce instead."""
import json
import os
import socket
import sys
import time

from mpi4py import MPI


def ready(comm, where):
    print("ready " + json.dumps({"rank": comm.Get_rank(), "pid": os.getpid(), "where": where,
                                 "node": socket.gethostname()}), flush=True)


def stuck_in_sleep(comm):
    ready(comm, "stuck")
    while True:
        time.sleep(3600)  # BP: stuck_call


def wait_for_peers(comm):
    if os.environ.get("COLLECTIVE") == "allreduce":
        ready(comm, "allreduce")
        comm.allreduce(1)  # BP: allreduce
    else:
        ready(comm, "barrier")
        comm.Barrier()  # BP: barrier


def main():
    comm = MPI.COMM_WORLD
    stuck = int(os.environ.get("STUCK_RANK", "2"))
    comm.Barrier()  # every rank is up: one collective that completes
    if comm.Get_rank() == stuck:
        stuck_in_sleep(comm)
    else:
        wait_for_peers(comm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
