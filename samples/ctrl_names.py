# SPDX-License-Identifier: MIT
"""Test target: names that carry terminal control sequences (tests/e2e/test_term_escape.py).

A thread whose Python name, OS name (prctl), function name (code.replace) and file name
(compile) hold ESC sequences (retitle "\\x1b]0;pwned\\x07", clear "\\x1b[2J"), a C1 CSI
("\\u009b") and a newline; the test also gives it such argv and environment values. Prints
"ready {json}" (the names, ASCII-escaped by json) and sleeps in that function."""
import ctypes
import json
import os
import sys
import threading
import time

EVIL = "\x1b]0;pwned\x07\x1b[2J\u009b31m\nx\x7f"
FILE = "/tmp/evil\x1b[2J\u009b.py"

SRC = '''
def sleep_here(started):
    started.set()
    while True:
        time.sleep(3600)  # line 5 of the evil file
'''


def main():
    ns = {"time": time}
    exec(compile(SRC, FILE, "exec"), ns)
    fn = ns["sleep_here"]
    rename = {"co_name": "fn" + EVIL}
    if sys.version_info >= (3, 11):
        rename["co_qualname"] = "fn" + EVIL
    fn.__code__ = fn.__code__.replace(**rename)
    started = threading.Event()
    t = threading.Thread(target=fn, args=(started,), name="thread" + EVIL, daemon=True)
    t.start()
    started.wait()
    # The OS thread name (what --no-inject shows for a thread threading does not know): the
    # main thread's comm, 15 bytes at most.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, ctypes.c_char_p(b"os\x1b]0;pw\x07\x1b[2J"), 0, 0, 0)  # PR_SET_NAME
    print("ready " + json.dumps({"pid": os.getpid(), "evil": EVIL, "file": FILE,
                                 "thread": t.native_id, "func": "fn" + EVIL}), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
