# SPDX-License-Identifier: MIT
# A one-rank torch.distributed job on the gloo backend (tests/e2e/test_native_threads.py): the
# process group's C++ threads (ProcessGroupGloo's work loops, gloo's TCP loop) run no Python.
# argv[1]: the FileStore's path. Runs one backward and one all_reduce, prints "ready {...}",
# then "tick N" every 0.2 s.
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
    x = torch.ones(4, requires_grad=True)
    (x * 2).sum().backward()
    dist.all_reduce(torch.ones(4))
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    n = 0
    while True:
        time.sleep(0.2)
        n += 1
        print("tick %d" % n, flush=True)


if __name__ == "__main__":
    main()
