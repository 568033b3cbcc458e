# SPDX-License-Identifier: MIT
"""Test target: a real aiohttp server (Debian's python3-aiohttp) whose request handlers get
stuck on an await, as an inference front end does when a request hangs.

GET /weights/NAME awaits fetch_weights(), which waits on an asyncio.Event nobody sets;
GET /generate waits on an asyncio.Lock that the task "gpu-owner" holds while it sleeps for an
hour; GET /health answers at once with how many requests entered each stuck handler (the test
waits for those before it dumps). The server listens on 127.0.0.1 on a port the kernel picks,
printed in "ready {json}". aiohttp runs each request in a task of its own under the
connection's task (RequestHandler.start awaits it). The tests find lines through the
"# BP: name" markers, never by number."""
import asyncio
import json
import os

from aiohttp import web

entered = {"weights": 0, "generate": 0}


async def fetch_weights(app, name):
    await app["weights_ready"].wait()  # BP: weights_wait
    return name


async def weights(request):
    entered["weights"] += 1
    await fetch_weights(request.app, request.match_info["name"])  # BP: handler_weights
    return web.Response(text="loaded\n")


async def generate(request):
    entered["generate"] += 1
    async with request.app["gpu_lock"]:  # BP: handler_lock
        return web.Response(text="generated\n")


async def health(request):
    return web.json_response(entered)


async def own_gpu(lock, held):
    async with lock:
        held.set()
        await asyncio.sleep(3600)  # BP: owner_sleep


async def main():
    app = web.Application()
    app["weights_ready"] = asyncio.Event()  # never set
    app["gpu_lock"] = asyncio.Lock()
    app.router.add_get("/weights/{name}", weights)
    app.router.add_get("/generate", generate)
    app.router.add_get("/health", health)
    held = asyncio.Event()
    owner = asyncio.ensure_future(own_gpu(app["gpu_lock"], held))
    owner.set_name("gpu-owner")
    await held.wait()
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print("ready " + json.dumps({"pid": os.getpid(), "port": port}), flush=True)
    await asyncio.Event().wait()  # BP: main_wait
    del owner


asyncio.run(main())
