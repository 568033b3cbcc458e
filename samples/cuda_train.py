# SPDX-License-Identifier: MIT
# A small CUDA training job (tests/gpu/check.sh): an MLP trained on random data on the GPU with
# AdamW. Under torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) it joins a gloo
# process group and all-reduces its gradients as CUDA tensors (several ranks can share one GPU).
# CUDA_TRAIN_RECORD=1 records the allocator's history first (torch.cuda.memory's
# _record_memory_history, when this torch has it) so that a memory snapshot carries stack traces.
# Prints "ready {...}" after the first step, "step N" every 50 steps; stops after --seconds S
# (default 600) so that nothing is left running.
import argparse
import json
import os
import time

import torch
import torch.nn as nn


def train_step(model, opt, dev, world):
    x = torch.randn(64, 512, device=dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if world > 1:
        import torch.distributed as dist
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
    opt.step()
    return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("cuda_train.py: no CUDA device (torch %s)" % torch.__version__)
    if os.environ.get("CUDA_TRAIN_RECORD") == "1":
        rec = getattr(torch.cuda.memory, "_record_memory_history", None)
        try:
            if rec:
                rec(max_entries=20000)  # PyTorch 2.1+
        except TypeError:
            rec(True)  # 1.13-2.0: enabled
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=rank, world_size=world)
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(),
                          nn.Linear(2048, 512)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    end = time.time() + a.seconds
    step = 0
    while time.time() < end:
        loss = train_step(model, opt, dev, world)
        step += 1
        if step == 1:
            print("ready " + json.dumps({"pid": os.getpid(), "rank": rank, "world": world,
                                         "device": str(dev), "torch": torch.__version__}),
                  flush=True)
        if step % 50 == 0:
            print("step %d loss %.4f" % (step, loss.item()), flush=True)
        time.sleep(0.005)


if __name__ == "__main__":
    main()
