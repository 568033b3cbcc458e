#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/release_dap.py: the debugger over DAP, as `make release-check` drives it against a
target of tools/release_check.sh (run as the same non-root user, with the system's python3 3.9+,
nothing of this tree but this file).

  release_dap.py PID SCRIPT LINE CLI...

CLI... is the install's `probing` command; `CLI -p PID inject --json` gives the socket this
side connects to (`reachable`: through /proc/PID/root for a target in another mount
namespace). Then over DAP: initialize, attach, configurationDone; pause the main thread, the
`stopped` event (reason pause) and a stackTrace holding release_check_marker; continue; a
breakpoint at SCRIPT:LINE (SCRIPT as the target sees it) hit (reason breakpoint, top frame
release_check_tick at LINE); breakpoints cleared, continue, disconnect. Prints one line per
step; exit 1 with one line on the first that fails."""
import json
import socket
import subprocess
import sys
import time


class Fail(Exception):
    pass


class DAP:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(1)
        self.s.connect(path)
        self.buf = b""
        self.seq = 0
        self.events = []

    def read(self, deadline):
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                n = 0
                for line in head.split(b"\r\n"):
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        n = int(v)
                if len(rest) >= n:
                    self.buf = rest[n:]
                    return json.loads(rest[:n].decode())
            if time.time() > deadline:
                raise Fail("no DAP message in time")
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                raise Fail("the probe closed the DAP connection")
            self.buf += chunk

    def request(self, command, arguments=None, timeout=10):
        self.seq += 1
        msg = {"seq": self.seq, "type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        body = json.dumps(msg).encode()
        self.s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.time() + timeout
        while True:
            m = self.read(deadline)
            if m.get("type") == "event":
                self.events.append(m)
            elif m.get("type") == "response" and m.get("request_seq") == self.seq:
                if not m.get("success"):
                    raise Fail("%s refused: %s" % (command, m.get("message")))
                return m.get("body") or {}

    def event(self, name, timeout=10):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("event") == name:
                    del self.events[i]
                    return e.get("body") or {}
            self.events.append(self.read(deadline))


def main():
    if len(sys.argv) < 5:
        print("usage: release_dap.py PID SCRIPT LINE CLI...", file=sys.stderr)
        return 2
    pid, script, line, cli = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    out = subprocess.run(cli + ["-p", pid, "inject", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True)
    if out.returncode != 0:
        raise Fail("inject --json: exit %d: %s" % (out.returncode, out.stdout.strip()))
    sock = json.loads(out.stdout)["reachable"]
    print("socket", sock)
    d = DAP(sock)
    d.request("initialize", {"adapterID": "release-check"})
    d.request("attach", {})
    d.request("configurationDone")
    threads = d.request("threads")["threads"]
    main_t = [t["id"] for t in threads if t.get("name") == "MainThread"] or [threads[0]["id"]]
    tid = main_t[0]
    d.request("pause", {"threadId": tid})
    st = d.event("stopped")
    if st.get("reason") != "pause":
        raise Fail("pause: stopped for %r" % st.get("reason"))
    names = [f["name"] for f in d.request("stackTrace", {"threadId": tid})["stackFrames"]]
    if not any("release_check_marker" in n for n in names):
        raise Fail("pause: no release_check_marker in the stack: %r" % names)
    print("paused: stackTrace", " < ".join(names[:4]))
    d.request("continue", {"threadId": tid})
    bps = d.request("setBreakpoints", {"source": {"path": script},
                                       "breakpoints": [{"line": line}]})["breakpoints"]
    if not bps or not bps[0].get("verified"):
        raise Fail("setBreakpoints %s:%d not verified: %r" % (script, line, bps))
    st = d.event("stopped")
    if st.get("reason") != "breakpoint":
        raise Fail("breakpoint: stopped for %r" % st.get("reason"))
    top = d.request("stackTrace", {"threadId": st.get("threadId", tid)})["stackFrames"][0]
    if "release_check_tick" not in top["name"] or top["line"] != line:
        raise Fail("breakpoint: top frame %s:%s, not release_check_tick:%d"
                   % (top["name"], top["line"], line))
    print("breakpoint hit: %s line %d" % (top["name"], top["line"]))
    d.request("setBreakpoints", {"source": {"path": script}, "breakpoints": []})
    d.request("continue", {"threadId": st.get("threadId", tid)})
    d.request("disconnect")
    print("dap ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Fail, OSError, ValueError, KeyError, IndexError) as e:
        print("probing: error: release-check dap: %s" % e, file=sys.stderr)
        sys.exit(1)
