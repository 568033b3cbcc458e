# SPDX-License-Identifier: MIT
"""debug --dump --tasks against a real aiohttp server (issue 41): Debian's python3-aiohttp on
Debian's /usr/bin/python3 (samples/aiohttp_server.py), sent real HTTP requests whose handlers
stay stuck on an await (two on an asyncio.Event nobody sets, one on a lock another task holds).
The dump names each request's two tasks (aiohttp's connection task awaiting the request's),
the handler's coroutine chain down to our function and line, and what it awaits; the server
still answers afterwards. tools/deps.sh installs python3-aiohttp: without it the test fails
saying so (it is not skipped)."""
import json
import re
import socket
import subprocess
import time

import pytest

from conftest import bp, probing

S = "aiohttp_server.py"
PY = "/usr/bin/python3"


def get(port, path, timeout=10):
    """One HTTP/1.1 request on a new connection; (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path.encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def stuck(port, path):
    """A request whose answer never comes: the open socket (closed by the test)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path.encode())
    return s


def short(f):
    return f["name"].rsplit(".", 1)[-1]


def at(f, name, suffix):
    return short(f) == name and f["file"].endswith(suffix)


@pytest.fixture
def server(spawn):
    r = subprocess.run([PY, "-c", "import aiohttp"], capture_output=True, text=True)
    assert r.returncode == 0, "python3-aiohttp is missing on %s: run 'make deps'" % PY
    t = spawn(PY, S)
    port = t.ready["port"]
    socks = [stuck(port, "/weights/llama"), stuck(port, "/weights/mistral"), stuck(port, "/generate")]
    deadline = time.time() + 20
    while True:
        status, body = get(port, "/health")
        assert status == 200, body
        if json.loads(body) == {"weights": 2, "generate": 1}:
            break
        assert time.time() < deadline, "the stuck requests never reached their handlers: " + body
        time.sleep(0.1)
    yield t, port
    for s in socks:
        s.close()


def test_aiohttp_stuck_handlers_json(server):
    t, port = server
    d = json.loads(probing("-p", t.pid, "debug", "--dump", "--tasks", "--json", check=True).stdout)
    a = d["asyncio"]
    assert a["read"] is True and a["via"] == "gil" and a["cycles"] == [], a
    by_id = {x["id"]: x for x in a["tasks"]}
    pending = [x for x in a["tasks"] if x["state"] == "pending"]
    # Each request: the handler's own task, its chain innermost first down to aiohttp's
    # _handle_request, awaiting the Event's or the Lock's future.
    weights = [x for x in pending if any(short(f) == "weights" for f in x["frames"])]
    generate = [x for x in pending if any(short(f) == "generate" for f in x["frames"])]
    assert len(weights) == 2 and len(generate) == 1, [(x["name"], x["frames"]) for x in pending]
    for h in weights:
        fr = h["frames"]
        assert at(fr[0], "wait", "/asyncio/locks.py"), fr
        assert [(short(f), f["line"]) for f in fr[1:3]] == [
            ("fetch_weights", bp(S, "weights_wait")), ("weights", bp(S, "handler_weights"))], fr
        assert all(f["file"].endswith("/" + S) for f in fr[1:3]), fr
        assert at(fr[3], "_handle", "/aiohttp/web_app.py"), fr
        assert at(fr[-1], "_handle_request", "/aiohttp/web_protocol.py"), fr
        assert h["waiter"]["type"].endswith("Future") and h["awaits"] == [], h
    g = generate[0]["frames"]
    assert at(g[0], "acquire", "/asyncio/locks.py") and at(g[1], "__aenter__", "/asyncio/locks.py"), g
    assert (short(g[2]), g[2]["line"]) == ("generate", bp(S, "handler_lock")), g
    assert at(g[-1], "_handle_request", "/aiohttp/web_protocol.py"), g
    # aiohttp's connection task (RequestHandler.start) awaits each handler's task, both ways.
    for h in weights + generate:
        assert len(h["awaitedBy"]) == 1, h
        conn = by_id[h["awaitedBy"][0]]
        assert len(conn["frames"]) == 1 and at(conn["frames"][0], "start", "/aiohttp/web_protocol.py")
        assert conn["awaits"] == [h["id"]] and conn["waiter"]["id"] == h["id"], conn
        assert re.match(r"^Task-\d+$", h["name"]) and re.match(r"^Task-\d+$", conn["name"])
    # The lock's holder, named by the server, sleeping with it; everything on the main thread.
    owner = [x for x in pending if x["name"] == "gpu-owner"]
    assert len(owner) == 1 and [(short(f), f["line"]) for f in owner[0]["frames"][1:]] == [
        ("own_gpu", bp(S, "owner_sleep"))], owner
    assert {x["threadId"] for x in a["tasks"]} == {t.pid}
    # The server still answers, and printed nothing of ours.
    assert get(port, "/health") == (200, '{"weights": 2, "generate": 1}')
    t.check_output_clean()


def test_aiohttp_stuck_handlers_text(server):
    t, port = server
    out = probing("-p", t.pid, "debug", "--dump", "--tasks", check=True).stdout
    assert re.search(r"^asyncio: \d+ tasks, read with the GIL$", out, re.M), out
    # The connection's task, aiohttp's start(), with the handler's task drawn under it.
    w = (r'^├── \(T\) "(Task-\d+)" pending, awaits task "(Task-\d+)"\n'
         r'│   │  RequestHandler\.start \(.*/aiohttp/web_protocol\.py:\d+\)\n'
         r'│   └── \(T\) "\2" pending, awaits _asyncio\.Future 0x[0-9a-f]+\n'
         r'│ {10}Event\.wait \(.*/asyncio/locks\.py:\d+\)\n'
         r'│ {10}fetch_weights \(.*/%s:%d\)\n'
         r'│ {10}weights \(.*/%s:%d\)\n'
         r'│ {10}Application\._handle \(.*/aiohttp/web_app\.py:\d+\)\n'
         r'│ {10}RequestHandler\._handle_request \(.*/aiohttp/web_protocol\.py:\d+\)$'
         % (S, bp(S, "weights_wait"), S, bp(S, "handler_weights")))
    assert len(re.findall(w, out, re.M)) == 2, out
    assert re.search(r'^└── \(T\) "Task-\d+" pending, awaits task "Task-\d+"\n'
                     r'.*RequestHandler\.start .*\n.*\n'
                     r' {11}Lock\.acquire \(.*/asyncio/locks\.py:\d+\)\n'
                     r' {11}_ContextManagerMixin\.__aenter__ \(.*/asyncio/locks\.py:\d+\)\n'
                     r' {11}generate \(.*/%s:%d\)$' % (S, bp(S, "handler_lock")), out, re.M), out
    assert re.search(r'^├── \(T\) "gpu-owner" pending, awaits _asyncio\.Future 0x[0-9a-f]+\n'
                     r'.*sleep \(.*/asyncio/tasks\.py:\d+\)\n'
                     r'.*own_gpu \(.*/%s:%d\)$' % (S, bp(S, "owner_sleep")), out, re.M), out
    assert get(port, "/health")[0] == 200
    t.check_output_clean()
