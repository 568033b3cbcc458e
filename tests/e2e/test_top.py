# SPDX-License-Identifier: MIT
"""`probing -p PID top` (issue 38), as py-spy top users use it: in a real terminal (tmux, 120x40)
against samples/flamehot.py (its main thread in zlib's deflate under native_share and in
python_share, a thread `spinner` in spin_python): the table refreshes with the functions by
%Own, the key 2 sorts by %Total, t shows the main thread alone, then the spinner alone, then all
again, q quits with status 0, the terminal's settings as before (stty -g) and the sampler top
started stopped. In a pipe: plain tables without escape sequences, SIGINT ends it with the
sampler stopped; a sampler that was running before top is left running. Bad options: one line,
exit 2."""
import os
import re
import shlex
import signal
import subprocess
import time

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS, probing

SAMPLE = "flamehot.py"
ROW = re.compile(r"^\s*(\d+\.\d)%\s+(\d+\.\d)%\s+(\d+\.\d\d)s\s+(\d+\.\d\d)s  (.+)$")


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", "probing-top-test", *args], capture_output=True,
                          text=True, check=check, timeout=30)


def screen(session):
    return tmux("capture-pane", "-p", "-t", session).stdout


def wait_screen(session, pred, what, timeout=30):
    deadline = time.time() + timeout
    text = ""
    while time.time() < deadline:
        text = screen(session)
        if pred(text):
            return text
        time.sleep(0.2)
    raise AssertionError("%s: the screen was:\n%s" % (what, text))


def rows(text):
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out.append((float(m.group(1)), float(m.group(2)), float(m.group(3)),
                        float(m.group(4)), m.group(5)))
    return out


def sampler_running(pid):
    r = probing("-p", pid, "query", "-f", "csv", "SELECT COUNT(*) FROM perf.samples", check=True)
    n1 = int(r.stdout.split()[1])
    time.sleep(0.6)
    r = probing("-p", pid, "query", "-f", "csv", "SELECT COUNT(*) FROM perf.samples", check=True)
    return int(r.stdout.split()[1]) > n1


@pytest.mark.parametrize("python", PYTHONS)
def test_top_in_a_terminal(spawn, python, tmp_path):
    t = spawn(python, SAMPLE)
    main, spinner = t.ready["main"], t.ready["spinner"]
    session = "top%d" % t.pid
    before, after, status = tmp_path / "before", tmp_path / "after", tmp_path / "status"
    # each file written whole, then renamed: the test reads none half-written
    cmd = ("stty -g > %s.tmp; mv %s.tmp %s; %s -p %d top --interval 0.5; rc=$?; "
           "stty -g > %s.tmp; mv %s.tmp %s; echo $rc > %s.tmp; mv %s.tmp %s; sleep 60") % (
        before, before, before, shlex.quote(CLI), t.pid, after, after, after, status, status,
        status)
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "sh -c %s" % shlex.quote(cmd))
    try:
        def full(text):
            return "native_share (" in text and "spin_python (" in text and len(rows(text)) > 4
        text = wait_screen(session, full, "top's table")
        assert "sorted by own" in text and "keys: q quit" in text, text
        r = rows(text)
        assert [x[0] for x in r] == sorted((x[0] for x in r), reverse=True), text
        assert all(0 <= x[0] <= x[1] <= 100 and x[2] <= x[3] + 0.011 for x in r), text
        # the clean view: no CPython-internal frame, no start-up
        for x in r:
            assert not re.match(r"^(_?Py[A-Z_]|\[(lib)?python|_start$|__libc_start)", x[4]), x
        # 2: by %Total; <module> (every main-thread sample) is near the top
        tmux("send-keys", "-t", session, "2")
        text = wait_screen(session, lambda s: "sorted by total" in s and len(rows(s)) > 4,
                           "sorted by total")
        r = rows(text)
        assert [x[1] for x in r] == sorted((x[1] for x in r), reverse=True), text
        # t: the main thread alone (the lower thread id), then the spinner, then all again
        order = sorted([main, spinner])
        for tid in order:
            tmux("send-keys", "-t", session, "t")
            own, other = ("native_share (", "spin_python (") if tid == main else \
                ("spin_python (", "native_share (")
            text = wait_screen(session, lambda s, tid=tid, own=own: "thread %d," % tid in s and
                               own in " ".join(x[4] for x in rows(s)), "thread %d" % tid)
            assert other not in " ".join(x[4] for x in rows(text)), text
        tmux("send-keys", "-t", session, "t")
        wait_screen(session, lambda s: "all threads" in s, "all threads again")
        # q: exit 0, the terminal as it was, the alternate screen left
        tmux("send-keys", "-t", session, "q")
        deadline = time.time() + 15
        while time.time() < deadline and not status.exists():  # written last
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
        assert after.read_text() == before.read_text()
        assert "%Own" not in screen(session)
    finally:
        tmux("kill-session", "-t", session, check=False)
    # the sampler top started is stopped
    r = probing("-p", t.pid, "perf", "--cc", "--stop", check=True)
    assert "was not running" in r.stdout, r.stdout
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_top_in_a_pipe(spawn, python):
    t = spawn(python, SAMPLE)
    p = subprocess.Popen([CLI, "-p", str(t.pid), "top", "--interval", "0.5", "--sort", "total"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == "", err
    assert "\033" not in out
    tables = [b for b in out.split("probing top: ")[1:] if rows(b)]
    assert len(tables) >= 3, out
    assert all("sorted by total" in b for b in tables)
    assert any("native_share (" in b for b in tables), out
    assert "was not running" in probing("-p", t.pid, "perf", "--cc", "--stop", check=True).stdout
    # A sampler running before top is left running after it.
    probing("-p", t.pid, "perf", "--cc", check=True)
    p = subprocess.Popen([CLI, "-p", str(t.pid), "top", "--interval", "0.5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and err == "", err
    assert sampler_running(t.pid)
    probing("-p", t.pid, "perf", "--stop", check=True)
    # a reader that goes away (| head) ends top, the sampler it started stopped
    r = subprocess.run("%s -p %d top --interval 0.3 | head -2" % (shlex.quote(CLI), t.pid),
                       shell=True, capture_output=True, text=True, timeout=30)
    assert r.stdout.startswith("probing top: ")
    time.sleep(0.5)
    assert "was not running" in probing("-p", t.pid, "perf", "--cc", "--stop", check=True).stdout
    for args, msg in ((["--sort", "x"], "top: --sort 'x': expected own, total, owntime or "
                       "totaltime"),
                      (["--interval", "0"], "top: --interval '0': expected 0.2 to 60 seconds"),
                      (["--rate", "5000"], "top: --rate '5000': expected 1 to 1000 samples per "
                       "second"),
                      (["--what"], "top: unknown option '--what': see 'probing top --help'")):
        r = probing("-p", t.pid, "top", *args)
        assert r.returncode == 2 and r.stderr == "probing: error: %s\n" % msg, r.stderr
    assert "usage: probing -p PID top" in probing("top", "--help", check=True).stdout
    t.assert_responsive()
    t.check_output_clean()
