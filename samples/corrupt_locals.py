# SPDX-License-Identifier: MIT
"""Test target: memory corruption such as a faulty native extension leaves, in the locals of a
thread 'corrupt' that then sleeps: a float whose type pointer is 0x10, one whose type pointer
points at readable bytes that are no type, a list and a tuple with an element pointer 0x8. The
cyclic GC is off (it would walk the corrupted list itself), and nothing in the program touches
those objects again. The main thread ticks. The probe must show each as
"<invalid object at 0x...>" and leave the process running (docs/cli.md, debug --dump).
Prints "ready {json}" (pid, the thread's native id, the addresses written), then "tick N"."""
import ctypes
import gc
import json
import os
import threading
import time

PTR = ctypes.sizeof(ctypes.c_void_p)
OB_TYPE = PTR                # PyObject: ob_refcnt, then ob_type
OB_ITEM = 3 * PTR            # PyListObject.ob_item
TUPLE_ITEMS = tuple.__basicsize__  # PyTupleObject.ob_item[0] (3.14 has a hash before it)
ready = threading.Event()
info = {}


def set_ptr(addr, value):
    ctypes.c_void_p.from_address(addr).value = value


def corrupt():
    fine = [1, 2, 3]
    bad_type = float("2.5")
    garbage = bytes([0x41]) * 1024
    bad_fake_type = float("3.5")
    bad_item = [10, 20, 30]
    bad_tuple = tuple([40, 50, 60])
    set_ptr(id(bad_type) + OB_TYPE, 0x10)
    # bytes' payload starts after its header; its first bytes read as the "type"'s ob_type.
    set_ptr(id(bad_fake_type) + OB_TYPE, id(garbage) + 64)
    items = ctypes.c_void_p.from_address(id(bad_item) + OB_ITEM).value
    set_ptr(items + PTR, 0x8)
    set_ptr(id(bad_tuple) + TUPLE_ITEMS + PTR, 0x8)
    info.update(bad_type=id(bad_type), bad_fake_type=id(bad_fake_type),
                native=threading.get_native_id())
    ready.set()
    while True:
        time.sleep(3600)  # BP: corrupt_sleep
    return fine, garbage, bad_type, bad_fake_type, bad_item, bad_tuple


def main():
    gc.disable()
    threading.Thread(target=corrupt, name="corrupt", daemon=True).start()
    ready.wait()
    print("ready " + json.dumps(dict(info, pid=os.getpid())), flush=True)
    n = 0
    while True:
        print("tick %d" % n, flush=True)
        n += 1
        time.sleep(0.2)


if __name__ == "__main__":
    main()
