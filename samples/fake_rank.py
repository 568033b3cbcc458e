# SPDX-License-Identifier: MIT
"""Test target: one process of a fake distributed job (the test sets RANK, WORLD_SIZE...): no
torch, it prints "ready {...}" and sleeps in a function, so that many of them are cheap.
  --fork [N]        also fork a child (N children) that sleeps with the same environment (as
                    DataLoader workers do)
  --spawn ENV N     act as a launcher: start N copies of this script with the JSON object ENV
                    added to their environment ("{r}" in a value becomes the copy's index)
  --asyncio         serve on an event loop instead: three requests sleeping in handle(), and on
                    rank 1 a fourth, "stuck-request", awaiting a future nobody completes"""
import asyncio
import json
import os
import subprocess
import sys
import time


def wait_for_work():
    print("ready " + json.dumps({"pid": os.getpid(), "rank": int(os.environ.get("RANK", -1))}),
          flush=True)
    while True:
        time.sleep(3600)  # BP: fake_sleep


async def handle():
    await asyncio.sleep(3600)  # BP: fake_handle


async def stuck(fut):
    await fut  # BP: fake_stuck


async def serve():
    loop = asyncio.get_running_loop()
    tasks = []
    for i in range(3):
        tasks.append(asyncio.ensure_future(handle()))
        tasks[-1].set_name("request-%d" % i)
    if os.environ.get("RANK") == "1":
        tasks.append(asyncio.ensure_future(stuck(loop.create_future())))
        tasks[-1].set_name("stuck-request")
    await asyncio.sleep(0.1)
    print("ready " + json.dumps({"pid": os.getpid(), "rank": int(os.environ.get("RANK", -1))}),
          flush=True)
    await asyncio.gather(*tasks)  # BP: fake_serve


def main():
    args = sys.argv[1:]
    if args[:1] == ["--asyncio"]:
        asyncio.run(serve())
    if args[:1] == ["--fork"]:
        for _ in range(int(args[1]) if args[1:2] and args[1].isdigit() else 1):
            if os.fork() == 0:
                while True:
                    time.sleep(3600)  # BP: fake_child
    elif args[:1] == ["--spawn"]:
        extra, n = json.loads(args[1]), int(args[2])
        for r in range(n):
            env = dict(os.environ)
            env.update({k: v.replace("{r}", str(r)) for k, v in extra.items()})
            subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env)
    wait_for_work()


if __name__ == "__main__":
    main()
