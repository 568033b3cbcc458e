# SPDX-License-Identifier: MIT
# Module whose top-level code parks (imported from a thread by pyrt_target.run_module), so a
# module-level frame is on that thread's stack. Marker lines: "# BP: name".
import pyrt_target

MOD_X = 7
MOD_S = 'module-level'
pyrt_target.GATE.acquire()  # BP: modlevel
pyrt_target.GATE.release()
