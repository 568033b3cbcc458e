# SPDX-License-Identifier: MIT
"""Test target: starts the probe itself with probing.init(listen=...), then ticks."""
import json
import os
import sys
import time

import probing


def main():
    info = probing.init(listen=sys.argv[1] if len(sys.argv) > 1 else None)
    print("ready " + json.dumps({"pid": os.getpid(), "socket": info.socket,
                                 "address": info.address, "token": info.token}), flush=True)
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.2)  # BP: init_sleep


if __name__ == "__main__":
    main()
