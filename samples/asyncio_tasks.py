# SPDX-License-Identifier: MIT
"""Test target: asyncio tasks suspended at known lines, in four event loops (the main thread's
and three threads' of their own).

The main loop's tasks await: a sleep (through a coroutine of ours), a future nobody completes,
another task, a queue, a lock another task holds, each other (a deadlock), run_in_executor, a
gather of two tasks; one task is done and one cancelled. Threads "loop-a" and "loop-b" each run
a loop whose main task awaits a task sleeping there; thread "loop-c" runs a task whose coroutine
blocks in time.sleep() (a running task). Prints "ready {json}" once every task is
in place (the native ids of the threads), then "tick N" from the main task. The tests find
lines through the "# BP: name" markers, never by number."""
import asyncio
import json
import os
import sys
import threading
import time

native = getattr(threading, "get_native_id", lambda: None)
released = threading.Event()  # never set: the executor's job blocks for good
keep = []  # every task stays referenced (asyncio keeps only weak references)


def blocking():
    released.wait()  # BP: executor_wait


async def nap():
    await asyncio.sleep(3600)  # BP: nap_sleep


async def sleeper():
    await nap()  # BP: sleeper_nap


async def wait_future(fut):
    await fut  # BP: future_await


async def wait_task(t):
    await t  # BP: task_await


async def consume(q):
    await q.get()  # BP: queue_get


async def hold(lock, held):
    async with lock:
        held.set()
        await asyncio.sleep(3600)  # BP: lock_hold


async def want(lock, held):
    await held.wait()
    async with lock:  # BP: lock_want
        pass


peers = {}


async def deadlock(other):
    await asyncio.sleep(0)
    await peers[other]  # BP: deadlock_await


async def in_executor():
    await asyncio.get_running_loop().run_in_executor(None, blocking)  # BP: executor_await


async def gatherer(a, b):
    await asyncio.gather(a, b)  # BP: gather_await


async def finish():
    return 1


async def thread_serve():
    await asyncio.sleep(3600)  # BP: thread_sleep


def loop_thread(label, ready, ids):
    async def run():
        asyncio.current_task().set_name(label + "-main")
        t = asyncio.ensure_future(thread_serve())
        t.set_name(label + "-serve")
        ids[label] = native()
        ready.set()
        await t  # BP: thread_await

    asyncio.run(run())


async def busy():
    time.sleep(3600)  # BP: busy_sleep


def blocked_thread(ready, ids):
    async def run():
        asyncio.current_task().set_name("loop-c-busy")
        ids["loop-c"] = native()
        ready.set()
        await busy()  # BP: busy_await

    asyncio.run(run())


async def main():
    asyncio.current_task().set_name("main")
    spawn = asyncio.ensure_future
    loop = asyncio.get_running_loop()

    def named(coro, name):
        t = spawn(coro)
        t.set_name(name)
        keep.append(t)
        return t

    napper = named(sleeper(), "napper")
    named(wait_future(loop.create_future()), "future-waiter")
    named(wait_task(napper), "task-waiter")
    named(consume(asyncio.Queue()), "consumer")
    lock, held = asyncio.Lock(), asyncio.Event()
    named(hold(lock, held), "lock-holder")
    named(want(lock, held), "lock-wanter")
    peers["dl-a"] = named(deadlock("dl-b"), "dl-a")
    peers["dl-b"] = named(deadlock("dl-a"), "dl-b")
    named(in_executor(), "executor")
    g1, g2 = named(nap(), "g1"), named(nap(), "g2")
    named(gatherer(g1, g2), "gatherer")
    done = named(finish(), "finished")
    cancelled = named(nap(), "cancelled")
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await asyncio.sleep(0.05)
    assert done.done() and cancelled.cancelled()

    ids = {}
    for label in ("loop-a", "loop-b", "loop-c"):
        ready = threading.Event()
        threading.Thread(target=loop_thread if label != "loop-c" else blocked_thread,
                         args=(label, ready, ids) if label != "loop-c" else (ready, ids),
                         name=label, daemon=True).start()
        ready.wait(10)
    await asyncio.sleep(0.2)
    print("ready " + json.dumps({"pid": os.getpid(), "main": native(), "threads": ids}),
          flush=True)
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        await asyncio.sleep(0.2)  # BP: main_tick


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
