# SPDX-License-Identifier: MIT
"""Test target (needs torch): a frame holding tensors, a Parameter, a list of tensors and a
Tensor subclass whose __torch_function__ would write a file named by argv[1] if the probe ever
ran it (reading .shape of such a tensor calls it)."""
import json
import os
import sys
import time

import torch

MARK = sys.argv[1]


class Spy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with open(MARK, "a") as f:
            f.write("called %s\n" % getattr(func, "__name__", func))
        return super().__torch_function__(func, types, args, kwargs or {})


def hold():
    image = torch.zeros(2, 3, 4)
    labels = torch.arange(5)
    weight = torch.nn.Parameter(torch.ones(7))
    scalar = torch.tensor(1.5, dtype=torch.float64)
    batch = [image, labels]
    spy = torch.zeros(3).as_subclass(Spy)
    if os.path.exists(MARK):
        os.unlink(MARK)  # making spy may call it; only the probe's calls count from here
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    n = 0
    while True:
        print("tick", n, flush=True)
        n += 1
        time.sleep(0.05)  # BP: hold_sleep


hold()
