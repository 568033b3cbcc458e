# SPDX-License-Identifier: MIT
"""A debugging session for the e2e tests: the raw DAP client plus waiting for events,
breakpoints by '# BP:' marker, stack lines, and the probe's own account of what it has
installed (probing/debugger)."""
import os
import time

from conftest import SAMPLES, bp, probing
from dapclient import DAP


class Debugger:
    def __init__(self, target, sample="debuggee.py", inject=True, configure=True, attach=None):
        if inject:
            probing("-p", target.pid, "inject", check=True)
        self.t = target
        self.sample = sample
        self.path = os.path.join(SAMPLES, sample)
        self.c = DAP.unix(target.sock)
        r = self.c.request("initialize", {"adapterID": "e2e"})
        assert r["success"], r
        self.caps = r["body"]
        r = self.c.request("attach", attach or {})
        assert r["success"], r
        if configure:
            assert self.c.request("configurationDone")["success"]

    def req(self, command, args=None, ok=True, timeout=10):
        r = self.c.request(command, args, timeout=timeout)
        if ok:
            assert r["success"], r
        return r

    def wait_event(self, name, timeout=10, pred=None):
        deadline = time.time() + timeout
        i = 0
        while True:
            for j in range(i, len(self.c.events)):
                e = self.c.events[j]
                if e["event"] == name and (pred is None or pred(e)):
                    del self.c.events[j]
                    return e
            i = len(self.c.events)
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError("no %r event within %ss; events: %r" % (
                    name, timeout, [e["event"] for e in self.c.events]))
            try:
                m = self.c.read(timeout=min(left, 0.5))
            except TimeoutError:
                continue
            if m["type"] == "event":
                self.c.events.append(m)

    def stopped(self, timeout=10):
        return self.wait_event("stopped", timeout)["body"]

    def set_bps(self, *specs):
        """specs: marker names or dicts with 'marker' plus condition/hitCondition/logMessage."""
        bps = []
        for s in specs:
            s = {"marker": s} if isinstance(s, str) else dict(s)
            line = bp(self.sample, s.pop("marker"))
            bps.append(dict(line=line, **s))
        return self.req("setBreakpoints", {"source": {"path": self.path},
                                           "breakpoints": bps})["body"]["breakpoints"]

    def frames(self, tid):
        return self.req("stackTrace", {"threadId": tid})["body"]["stackFrames"]

    def top(self, tid):
        f = self.frames(tid)[0]
        return f["name"], f["line"]

    def line(self, marker):
        return bp(self.sample, marker)

    def state(self):
        return self.req("probing/debugger")["body"]


CLEAN = {"tracedThreads": 0, "monitoringTool": None, "threadingHook": False, "evalFrameHook": False,
         "entryHooks": 0,
         "excepthook": False, "threadingExcepthook": False, "breakpoints": 0}


def assert_clean(target, timeout=10):
    """Nothing of the debugger's is left in the target (asked over a fresh CLI connection)."""
    c = DAP.unix(target.sock)
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    deadline = time.time() + timeout
    while True:
        st = c.request("probing/debugger")["body"]
        got = {k: st.get(k) for k in CLEAN}
        if got == CLEAN and not st["stopped"]:
            break
        assert time.time() < deadline, "debugger state left behind: %r" % st
        time.sleep(0.1)
    c.request("disconnect")


def last_tick(target):
    import re
    ticks = re.findall(r"^tick (\d+)", target.output(), re.M)
    return int(ticks[-1]) if ticks else -1
