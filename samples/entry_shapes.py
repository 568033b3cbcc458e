# SPDX-License-Identifier: MIT
"""Debugger target (tests/e2e/test_entry_hooks.py): one function of each shape a line
breakpoint can sit in, all called from the main loop about every 20 ms, which prints
"tick N" after each round. On CPython 3.11 the probe serves breakpoints in plain functions,
decorated ones, methods, static and class methods, properties and cached functions by hooking
their entry (probe/debugger/hooks_entry.c); a nested function, a generator, a function whose
code object something else holds, and a module not imported yet need its frame-evaluation gate.
SIGUSR1 makes the loop import entry_late.py and call it from then on. Prints "ready {json}"
first. Lines by "# BP: name" markers."""
import functools
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def plain(n):
    return n + 1  # BP: plain


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@deco
def decorated(n):
    return n * 2  # BP: decorated


class Shape:
    def method(self, n):
        return n - 1  # BP: method

    @staticmethod
    def static(n):
        return n + 3  # BP: static

    @classmethod
    def klass(cls, n):
        return n + 4  # BP: klass

    @property
    def prop(self):
        return 5  # BP: prop


@functools.lru_cache(maxsize=0)
def cached(n):
    return n + 8  # BP: cached


def outer(n):
    def inner(m):
        return m + n  # BP: nested
    return inner(n)


def gen(n):
    yield n  # BP: generator


def aliased(n):
    return n + 7  # BP: aliased


ALIAS = aliased.__code__  # a holder of the code object besides the function

late = []


def main():
    signal.signal(signal.SIGUSR1, lambda *a: late.append(1))
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    s = Shape()
    n = 0
    while True:
        total = plain(n) + decorated(n) + s.method(n) + Shape.static(n) + Shape.klass(n)
        total += s.prop + cached(n) + outer(n) + sum(gen(n)) + aliased(n)
        if late:
            import entry_late
            total += entry_late.late(n)
        n += 1
        print("tick %d value=%d" % (n, total), flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
