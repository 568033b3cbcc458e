# SPDX-License-Identifier: MIT
"""Test target: an interpreter whose published structure offsets (_PyRuntime.debug_offsets,
CPython 3.13+) no longer match the headers the probe was built from, as a micro release or a
distribution patch that moved a field would. argv[1] says what to change: "version" (the
offsets claim CPython 3.99) or "frame" (_PyInterpreterFrame.previous claims another offset).
Only the published description changes, never the interpreter itself. Prints "ready {json}",
then ticks."""
import ctypes
import json
import os
import struct
import sys
import time

# _Py_DebugOffsets: cookie[8], version, free_threaded, runtime_state{size, finalizing,
# interpreters_head}, interpreter_state{size, ...}: the version is at byte 8, the size of
# interpreter_state's block tells where thread_state and then interpreter_frame begin.
runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
assert ctypes.string_at(runtime, 8) == b"xdebugpy"
what = sys.argv[1] if len(sys.argv) > 1 else "version"
if what == "version":
    ctypes.c_uint64.from_address(runtime + 8).value = 0x03630000
else:
    # The fields of interpreter_state and thread_state (their headers' pycore_debug_offsets.h
    # or pycore_runtime.h), then the frame's size and previous.
    fields = {(3, 13): 13 + 9, (3, 14): 16 + 9, (3, 15): 16 + 17}[sys.version_info[:2]]
    previous = runtime + 8 * (3 + 3 + fields + 1)
    ctypes.c_uint64.from_address(previous).value += 8
print("ready " + json.dumps({"pid": os.getpid()}), flush=True)
n = 0
while True:
    print("tick %d" % n, flush=True)
    n += 1
    time.sleep(0.2)
