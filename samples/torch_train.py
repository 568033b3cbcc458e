# SPDX-License-Identifier: MIT
"""Demo target for `probing perf --torch`: a small transformer-style language model (embedding,
two pre-norm blocks of self-attention and MLP, a head) training on random tokens with AdamW and
nn.CrossEntropyLoss, on the CPU. Prints "ready {\"pid\": PID}" once the first step is done, then
"step N" every 50 steps.

Options: --steps N (stop after N steps; default: run until killed), --threads N (torch threads,
default 1), --sleep S (pause after each step), --fake-cuda (stand-ins for torch.cuda's
availability and memory counters, so the CUDA code path of the tracer runs on a CPU-only
machine), --fake-step-hooks (a stand-in for torch 2.x's global optimizer step hooks
(torch.optim.optimizer.register_optimizer_step_post_hook) on torch 1.13), --width N (model
width, default 64), --timing (print "timing STEP WALL_S CPU_S TRACED THREAD_CPU_S" after each step,
for the benchmark: CPU_S is the process's, THREAD_CPU_S this thread's, and TRACED is 1 when a
global module forward hook was set as the step began, as a tracer's in a traced step), --compile BACKEND (train through torch.compile(model, backend=BACKEND): eager or
aot_eager need no C compiler), --late-post-hook FILE (once FILE exists, the job registers a global optimizer step
post hook of its own: after a tracer's, as a job's library may). Used by tests/e2e/test_perf_torch.py and tests/bench/bench_torch.py."""
import argparse
import collections
import os
import sys
import time

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, layers=2, ctx=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def fake_cuda():
    """torch.cuda as the tracer sees it on a GPU machine: available, initialised, and memory
    counters that move (allocated grows by 4 KiB per call, the peaks follow)."""
    state = {"alloc": 1 << 20, "peak": 1 << 20}

    def allocated(device=None):
        state["alloc"] += 4096
        state["peak"] = max(state["peak"], state["alloc"])
        return state["alloc"]

    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    torch.cuda.memory_allocated = allocated
    torch.cuda.max_memory_allocated = lambda device=None: state["peak"]
    torch.cuda.memory_reserved = lambda device=None: 2 * state["peak"]
    torch.cuda.max_memory_reserved = lambda device=None: 3 * state["peak"]


def fake_step_hooks(opt_cls):
    """torch 2.x's global optimizer step post hooks, written for torch 1.13: a registry in
    torch.optim.optimizer and a step wrapper on the optimizer class that calls its hooks."""
    import torch.optim.optimizer as O
    from torch.utils.hooks import RemovableHandle
    hooks = collections.OrderedDict()
    O._global_optimizer_post_hooks = hooks

    def register_optimizer_step_post_hook(hook):
        h = RemovableHandle(hooks)
        hooks[h.id] = hook
        return h

    O.register_optimizer_step_post_hook = register_optimizer_step_post_hook
    step = opt_cls.step

    def stepped(self, *args, **kwargs):
        out = step(self, *args, **kwargs)
        for hook in list(hooks.values()):
            hook(self, args, kwargs)
        return out

    opt_cls.step = stepped


MODEL = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--fake-cuda", action="store_true")
    ap.add_argument("--fake-step-hooks", action="store_true")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--late-post-hook", default=None)
    ap.add_argument("--compile", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.fake_cuda:
        fake_cuda()
    if a.fake_step_hooks:
        fake_step_hooks(torch.optim.AdamW)
    global MODEL
    model = MODEL = TinyTransformer(d=a.width)
    run = torch.compile(model, backend=a.compile) if a.compile else model
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = 0
    t0 = time.perf_counter()
    own_hook = []
    while not a.steps or step < a.steps:
        if a.late_post_hook and not own_hook and os.path.exists(a.late_post_hook):
            import torch.optim.optimizer as O
            own_hook.append(O.register_optimizer_step_post_hook(lambda opt, args, kwargs: None))
        w0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
        traced = a.timing and bool(getattr(nn.modules.module, "_global_forward_hooks", None))
        idx = torch.randint(0, 256, (8, 32))
        target = torch.randint(0, 256, (8, 32))
        logits = run(idx)
        loss = loss_fn(logits.view(-1, 256), target.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if a.timing:
            print("timing %d %.6f %.6f %d %.6f" % (step, time.perf_counter() - w0,
                                                   time.process_time() - c0, traced,
                                                   time.thread_time() - m0), flush=True)
        if step == 1:
            print("ready {\"pid\": %d}" % os.getpid(), flush=True)
        elif step % 50 == 0:
            print("step %d" % step, flush=True)
        if a.sleep:
            time.sleep(a.sleep)
    print("done %d steps in %.3f s" % (step, time.perf_counter() - t0), flush=True)


if __name__ == "__main__":
    sys.exit(main())
