# SPDX-License-Identifier: MIT
"""A small DAP client for tests: Content-Length framing over a Unix or TCP socket, requests
with bounded waits, events collected on the side."""
import json
import socket
import time


class Closed(Exception):
    pass


class DAP:
    def __init__(self, sock):
        self.sock = sock
        self.sock.settimeout(10)
        self.buf = b""
        self.seq = 0
        self.events = []

    @classmethod
    def unix(cls, path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        return cls(s)

    @classmethod
    def tcp(cls, host, port):
        return cls(socket.create_connection((host, port), timeout=10))

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, command, arguments=None):
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        body = json.dumps(msg).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return self.seq

    def read(self, timeout=10):
        deadline = time.time() + timeout
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                n = int([l.split(b":")[1] for l in head.split(b"\r\n")
                         if l.lower().startswith(b"content-length")][0])
                if len(rest) >= n:
                    self.buf = rest[n:]
                    return json.loads(rest[:n])
            if time.time() > deadline:
                raise TimeoutError("no message within %ss" % timeout)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                raise Closed()
            self.buf += chunk

    def request(self, command, arguments=None, timeout=10):
        seq = self.send(command, arguments)
        while True:
            m = self.read(timeout)
            if m["type"] == "event":
                self.events.append(m)
            elif m["type"] == "response" and m["request_seq"] == seq:
                return m

    def closed_within(self, timeout=5):
        """True if the peer closes the connection (reading nothing more) within timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                self.read(timeout=max(0.1, deadline - time.time()))
            except (Closed, ConnectionResetError, BrokenPipeError):
                return True
            except TimeoutError:
                pass
        return False

    def close(self):
        self.sock.close()
