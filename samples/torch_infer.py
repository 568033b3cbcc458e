# SPDX-License-Identifier: MIT
"""Demo target for `probing perf --torch` without an optimizer: the model of torch_train.py in
eval mode answering batches of random tokens under torch.no_grad(), one request every
--sleep seconds (default 0.01). Prints "ready {\"pid\": PID}" after the first request; --timing
prints "timing N WALL_S CPU_S" per request (for the benchmark)."""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import TinyTransformer  # noqa: E402


MODEL = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep", type=float, default=0.01)
    ap.add_argument("--timing", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    global MODEL
    model = MODEL = TinyTransformer().eval()
    n = 0
    while True:
        w0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad():
            idx = torch.randint(0, 256, (4, 32))
            model(idx).argmax(dim=-1)
        n += 1
        if a.timing:
            print("timing %d %.6f %.6f" % (n, time.perf_counter() - w0, time.process_time() - c0),
                  flush=True)
        if n == 1:
            print("ready {\"pid\": %d}" % os.getpid(), flush=True)
        time.sleep(a.sleep)


if __name__ == "__main__":
    sys.exit(main())
