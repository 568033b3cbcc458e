# SPDX-License-Identifier: MIT
"""What the bench scripts share: paths, their arguments (BUILD_DIR [PYTHON]), BENCH_RUNS, and
which interpreter the targets run on (the given one, else pyenv's 3.11, else the first found)."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

BUILD = os.path.abspath(sys.argv[1])
CLI = os.path.join(BUILD, "bin", "probing")
PY = sys.argv[2] if len(sys.argv) > 2 else None


def runs(default):
    return int(os.environ.get("BENCH_RUNS", str(default)))


def python():
    if PY:
        return PY
    found = [line.split()[2] for line in subprocess.run(
        [os.path.join(ROOT, "tools", "pythons.sh")], capture_output=True,
        text=True).stdout.splitlines() if line.strip()]
    for exe in found:
        if "python3.11" in exe:
            return exe
    return found[0] if found else "/usr/bin/python3"


class LineReader:
    """Whole lines from a child's stdout descriptor, waiting at most timeout seconds per call;
    exits the bench with `gone` when the child closed it."""

    def __init__(self, fd, gone):
        self.fd, self.gone, self.buf = fd, gone, b""

    def lines(self, timeout):
        import select
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return []
        data = os.read(self.fd, 65536)
        if not data:
            raise SystemExit(self.gone)
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode(errors="replace") for d in done]
