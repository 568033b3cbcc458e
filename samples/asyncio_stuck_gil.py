# SPDX-License-Identifier: MIT
"""Test target: asyncio tasks in an event loop of thread "loop", suspended at known lines, while
the main thread then holds the GIL forever in a C call (ctypes.PyDLL keeps it during the call):
the loop thread waits for the GIL, and the tasks can only be read without it (3.14+ keeps them
on per-thread lists). Tasks: "napper" sleeps under two coroutines of ours, "waiter" awaits it,
"dl-a" and "dl-b" await each other, "loop-main" (the loop's main task) gathers them. Prints
"ready {json}" (the loop thread's native id) just before the C call. The tests find lines
through the "# BP: name" markers, never by number."""
import asyncio
import ctypes
import json
import os
import threading

ids = {}
started = threading.Event()


async def nap():
    await asyncio.sleep(3600)  # BP: nap_sleep


async def sleeper():
    await nap()  # BP: sleeper_nap


async def wait_task(t):
    await t  # BP: task_await


async def deadlock(peer):
    while not peer:
        await asyncio.sleep(0.01)
    await peer[0]  # BP: deadlock_await


async def loop_main():
    napper = asyncio.ensure_future(sleeper())
    napper.set_name("napper")
    waiter = asyncio.ensure_future(wait_task(napper))
    waiter.set_name("waiter")
    pa, pb = [], []
    a = asyncio.ensure_future(deadlock(pa))
    a.set_name("dl-a")
    b = asyncio.ensure_future(deadlock(pb))
    b.set_name("dl-b")
    pa.append(b)
    pb.append(a)
    await asyncio.sleep(0.2)
    started.set()
    await asyncio.gather(waiter, a, b)  # BP: main_gather


def run():
    ids["loop"] = threading.get_native_id()
    asyncio.run(loop_main())


threading.Thread(target=run, name="loop", daemon=True).start()
started.wait(10)
libc = ctypes.PyDLL(None)
print("ready " + json.dumps({"pid": os.getpid(), "threads": ids}), flush=True)
libc.pause()  # BP: stuck_call
