# SPDX-License-Identifier: MIT
"""probing repl through a pseudo-terminal (multi-line input, Ctrl-C interrupting a running
evaluation but not the target, Ctrl-D) and with piped stdin. Every read is bounded."""
import os
import pty
import select
import subprocess
import time

import pytest

from conftest import CLI, PYTHONS, probing


class Pty:
    def __init__(self, args, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(CLI, [CLI, *map(str, args)], env)
        self.buf = ""

    def expect(self, text, timeout=15):
        deadline = time.time() + timeout
        while text not in self.buf:
            left = deadline - time.time()
            assert left > 0, "timed out waiting for %r; got %r" % (text, self.buf[-2000:])
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                assert data, "repl exited; got %r" % self.buf[-2000:]
                self.buf += data.decode(errors="replace")
        at = self.buf.index(text) + len(text)
        seen, self.buf = self.buf[:at], self.buf[at:]
        return seen

    def send(self, s):
        # libedit may flush input typed before it switched the terminal mode: let it settle.
        time.sleep(0.1)
        os.write(self.fd, s.encode())

    def wait(self, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = 0  # reaped: close() must not signal a reused pid
                return os.waitstatus_to_exitcode(status)
            if select.select([self.fd], [], [], 0.05)[0]:
                try:
                    os.read(self.fd, 65536)
                except OSError:
                    time.sleep(0.05)
        os.kill(self.pid, 9)
        raise AssertionError("repl did not exit")

    def close(self):
        """Kills the CLI if it still runs, reaps it, closes the terminal."""
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


@pytest.mark.parametrize("python", PYTHONS)
def test_repl_tty(python, spawn, tmp_path):
    t = spawn(python, "globals.py")
    env = dict(os.environ, TERM="dumb", HOME=str(tmp_path))
    r = Pty(["-p", t.pid, "repl"], env)
    try:
        r.expect("in __main__")
        r.expect(">>> ")
        r.send("def triple(a):\n")
        r.expect("... ")
        r.send("    return a * 3\n")
        r.expect("... ")
        r.send("\n")
        r.expect(">>> ")
        r.send("triple(14)\n")
        assert "42" in r.expect(">>> ")
        r.send("while True: pass\n")
        r.expect("... ")
        r.send("\n")
        time.sleep(1.0)
        t.assert_responsive()  # the evaluation keeps giving the GIL back
        r.send("\x03")
        seen = r.expect(">>> ")
        assert "KeyboardInterrupt" in seen, seen
        r.send("print('after', 6 * 7)\n")
        assert "after 42" in r.expect(">>> ")
        r.send("\x04")
        assert r.wait() == 0
    finally:
        r.close()
    assert os.path.exists(tmp_path / ".probing_history")
    # The target still runs, and the interrupt hit only the evaluation.
    t.assert_responsive()
    assert probing("-p", t.pid, "eval", "triple(2)", check=True).stdout == "6\n"
    probing("-p", t.pid, "eval", "del triple", check=True)
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_repl_piped_stdin(python, spawn):
    t = spawn(python, "globals.py")
    code = ("def twice(a):\n"
            "    return a * 2\n"
            "\n"
            "twice(21)\n"
            "for i in range(2):\n"
            "    print('line', i)\n"
            "\n"
            "1 / 0\n"
            "message\n"
            "del twice\n")
    r = subprocess.run([CLI, "-p", str(t.pid), "repl"], input=code, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "42\nline 0\nline 1\n'hello'\n"
    assert "ZeroDivisionError: division by zero" in r.stderr
    assert ">>>" not in r.stdout
    t.assert_responsive()
    t.check_output_clean()
