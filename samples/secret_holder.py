# SPDX-License-Identifier: MIT
"""Test target for `probing serve`'s peer check (tests/e2e/test_serve_peer.py): a main thread
holding a secret in a local variable, as a program holds a password it was given.

Usage: secret_holder.py, with the secret in $PROBING_TEST_SECRET (not on the command line,
which every user can read). Prints "ready {json}" (pid), then "tick N" about every 0.2 s."""
import json
import os
import time


def hold(password):
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.2)  # BP: hold


def main():
    password = os.environ["PROBING_TEST_SECRET"]
    print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
    hold(password)


if __name__ == "__main__":
    main()
