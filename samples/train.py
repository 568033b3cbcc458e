# SPDX-License-Identifier: MIT
"""Demo target: a toy training job in pure Python (no dependencies). A data-loader thread fills
a queue, the main loop runs forward/backward steps on a tiny model, and a checkpoint thread
wakes now and then. Attach to it with `probing -p PID debug --dump`."""
import math
import os
import queue
import random
import threading
import time


class TinyModel:
    def __init__(self, n):
        self.weights = [random.uniform(-1, 1) for _ in range(n)]

    def forward(self, batch):
        return [math.tanh(sum(w * x for w, x in zip(self.weights, row))) for row in batch]

    def backward(self, batch, out, lr=0.001):
        for row, y in zip(batch, out):
            g = 1.0 - y * y
            for i, x in enumerate(row):
                self.weights[i] -= lr * g * x


def data_loader(q, width):
    while True:
        batch = [[random.random() for _ in range(width)] for _ in range(16)]
        q.put(batch)
        time.sleep(0.02)


def checkpointer(model, every):
    while True:
        time.sleep(every)
        _ = list(model.weights)


def train(steps_per_report=10):
    width = 64
    model = TinyModel(width)
    q = queue.Queue(maxsize=8)
    threading.Thread(target=data_loader, args=(q, width), name="data-loader", daemon=True).start()
    threading.Thread(target=checkpointer, args=(model, 5.0), name="checkpointer", daemon=True).start()
    step = 0
    print("training started, pid %d" % os.getpid(), flush=True)
    while True:
        batch = q.get()
        out = model.forward(batch)
        model.backward(batch, out)
        step += 1
        if step % steps_per_report == 0:
            print("step %d" % step, flush=True)


if __name__ == "__main__":
    train()
