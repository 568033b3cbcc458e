# SPDX-License-Identifier: MIT
"""Imported by entry_shapes.py only after SIGUSR1: a breakpoint set here before that is in a
module not imported yet (tests/e2e/test_entry_hooks.py)."""


def late(n):
    return n + 9  # BP: late
