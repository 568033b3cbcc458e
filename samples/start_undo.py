# SPDX-License-Identifier: MIT
"""Test target: loads the probe with ctypes while PROBING_TEST_FAIL_START (in its environment)
makes one step of its start fail, reports what the failed start left (threads, descriptors,
the socket), then calls probing_start() again without the fault and reports that, then ticks.
Prints "state {json}" after each, "ready" last."""
import ctypes
import json
import os
import sys
import time


def state(lib):
    time.sleep(0.3)  # a retired worker thread ends on its own
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass
    return {"threads": len(os.listdir("/proc/self/task")), "fds": fds,
            "socket": lib.probing_socket_path().decode()}


def main():
    before = {"threads": len(os.listdir("/proc/self/task"))}
    print("state " + json.dumps(before), flush=True)
    lib = ctypes.CDLL(sys.argv[1])
    lib.probing_socket_path.restype = ctypes.c_char_p
    print("state " + json.dumps(state(lib)), flush=True)
    os.environ.pop("PROBING_TEST_FAIL_START", None)
    err = ctypes.create_string_buffer(512)
    rc = lib.probing_start(None, None, err, len(err))
    s = state(lib)
    s.update({"rc": rc, "err": err.value.decode()})
    print("state " + json.dumps(s), flush=True)
    print("ready {}", flush=True)
    n = 0
    while True:
        n += 1
        time.sleep(0.2)  # BP: undo_tick


if __name__ == "__main__":
    main()
