# SPDX-License-Identifier: MIT
"""Test target for eval, repl and memory: module globals the tests read and change, objects of
a class of its own, and a list that grows a little every tick (tracemalloc has something to
see). Prints "ready {json}", then "tick N"; whenever the global `message` changes it prints
"ok message=<value>"."""
import json
import os
import threading
import time


class Particle:
    def __init__(self, i):
        self.i = i
        self.pos = [float(i), float(-i)]


particles = [Particle(i) for i in range(5000)]
message = "hello"
counter = 0
growing = []


def grow():
    growing.append(bytearray(1000))  # BP: grow_alloc


def main():
    global counter
    last = None
    native = getattr(threading, "get_native_id", lambda: None)
    print("ready " + json.dumps({"pid": os.getpid(), "main": native()}), flush=True)
    n = 0
    while True:
        if message != last:
            print("ok message=%s" % message, flush=True)
            last = message
        print("tick %d" % n, flush=True)
        counter = n
        n += 1
        grow()
        time.sleep(0.1)  # BP: main_sleep


if __name__ == "__main__":
    main()
