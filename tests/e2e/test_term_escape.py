# SPDX-License-Identifier: MIT
"""The target's strings never reach the terminal raw: a target (samples/ctrl_names.py) whose
thread names (threading and OS), function name, file name, argv and environment hold ESC
sequences (retitle, clear), BEL, a C1 CSI (U+009B), a newline and DEL. Every text output of the
CLI that shows them (debug --dump, --native, --no-inject, backtrace, query as table and CSV,
tables, list, cluster list and stacks) shows visible escapes (\\x1b, \\u009b) and no control
byte but its own newlines; --json keeps the exact strings."""
import json
import os
import re
import subprocess

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS

EVIL_ARG = "arg\x1b]0;pwned\x07\x1b[2J\u009b"
ESC_EVIL = r"\x1b]0;pwned\x07\x1b[2J\u009b31m\x0ax\x7f"  # EVIL of the sample, escaped
ESC_FILE = r"/tmp/evil\x1b[2J\u009b.py"


def run(*args):
    """The CLI's stdout and stderr as bytes: the test looks at what a terminal would get."""
    r = subprocess.run([CLI, *[str(a) for a in args]], capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def clean(data, what, own="\n"):
    """data is valid UTF-8 with no C0 control but the output's own line ends (own), no DEL, no
    C1; returns it as text."""
    text = data.decode("utf-8")  # raises on a raw byte that is not UTF-8 (0x9b alone)
    bad = [c for c in text if (ord(c) < 0x20 and c not in own) or 0x7f <= ord(c) <= 0x9f]
    assert not bad, "%s: control characters reach the terminal: %r in %r" % (what, bad[:5],
                                                                            text[:2000])
    return text


def text_of(*args, own="\n"):
    rc, out, err = run(*args)
    what = "probing " + " ".join(map(str, args))
    clean(err, what + " (stderr)")
    assert rc == 0, "%s failed (%d): %r %r" % (what, rc, out, err)
    return clean(out, what, own)


def json_of(*args):
    rc, out, err = run(*args)
    assert rc == 0, (args, out, err)
    return json.loads(out)


@pytest.mark.parametrize("python", PYTHONS)
def test_target_strings_escaped(python, spawn):
    t = spawn(python, "ctrl_names.py", args=[EVIL_ARG])
    evil, tid = t.ready["evil"], t.ready["thread"]

    # Read from outside first (nothing loaded): threading's names, read from memory.
    out = text_of("-p", t.pid, "debug", "--dump", "--no-inject")
    assert "fn" + ESC_EVIL in out and ESC_FILE in out, out
    assert 'Thread %d "thread%s"' % (tid, ESC_EVIL) in out, out

    out = text_of("-p", t.pid, "debug", "--dump")
    assert '"thread%s"' % ESC_EVIL in out, out
    # file:line, and :column on 3.11+
    assert re.search(r"    fn%s \(%s:5(:\d+)?\)" % (re.escape(ESC_EVIL), re.escape(ESC_FILE)),
                     out), out
    d = json_of("-p", t.pid, "debug", "--dump", "--json")
    th = [x for x in d["threads"] if x["id"] == tid][0]
    assert th["name"] == "thread" + evil
    assert th["frames"][0]["name"] == "fn" + evil and th["frames"][0]["file"] == t.ready["file"]

    out = text_of("-p", t.pid, "debug", "--dump", "--native")
    assert "fn" + ESC_EVIL in out and ESC_FILE in out, out

    out = text_of("-p", t.pid, "backtrace", tid)
    assert out.startswith('Thread %d "thread%s"' % (tid, ESC_EVIL)), out
    assert "  #0 fn%s (%s:5)" % (ESC_EVIL, ESC_FILE) in out, out
    text_of("-p", t.pid, "backtrace")
    rc, out, err = run("-p", t.pid, "backtrace", 99999999)  # an error naming the threads
    assert rc == 1 and '%d "thread%s"' % (tid, ESC_EVIL) in clean(err, "backtrace error"), err

    sql = "SELECT name FROM python.threads WHERE thread_id = %d" % tid
    out = text_of("-p", t.pid, "query", sql)  # the table shows a newline as a space
    assert "thread" + ESC_EVIL.replace(r"\x0a", " ") in out, out
    out = text_of("-p", t.pid, "query", sql, "--format", "csv", own="\r\n")  # RFC 4180 lines
    # CSV keeps a newline in its quoted field (RFC 4180), and escapes the rest.
    assert out == 'name\r\n"thread%s"\r\n' % ESC_EVIL.replace(r"\x0a", "\n"), out
    assert json_of("-p", t.pid, "query", sql, "--format", "json") == [{"name": "thread" + evil}]
    # A cell the user's SQL makes from the target's strings, under a column it names so too.
    out = text_of("-p", t.pid, "query", "SELECT char(27) || '[2J' AS \"c" + "\x1b" + "[2J\"")
    assert r"c\x1b[2J" in out and r"\x1b[2J" in out.splitlines()[2], out

    out = text_of("list")
    line = [l for l in out.splitlines() if l.startswith("%-8d " % t.pid)]
    assert line and line[0].endswith(r"arg\x1b]0;pwned\x07\x1b[2J\u009b"), out
    procs = [p for p in json_of("list", "--json") if p["pid"] == t.pid]
    assert procs and procs[0]["command"].endswith(" " + EVIL_ARG)
    t.check_output_clean()


def test_cluster_names_escaped(spawn):
    """cluster list and stacks: the job's name comes from the rank's environment (MASTER_ADDR),
    the frames from its code."""
    port = "5%04d" % (os.getpid() % 10000)
    addr = "h\x1b]0;pwned\x07\u009b"
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": addr, "MASTER_PORT": port}
    t = spawn(HOST_PYTHONS[-1].values[0], "ctrl_names.py", env=env)
    job = "torch:%s:%s" % (addr, port)
    esc_job = r"torch:h\x1b]0;pwned\x07\u009b:" + port
    out = text_of("cluster", "list", "--job", job)
    assert re.search(r"^job %s \(torch\): world size 1, 1 rank found on 1 node, master %s$"
                     % (re.escape(esc_job), re.escape(esc_job[len("torch:"):])),
                     out, re.M), out
    j = [x for x in json_of("cluster", "list", "--job", job, "--json")["jobs"]]
    assert j and j[0]["job"] == job and j[0]["master"] == "%s:%s" % (addr, port)
    out = text_of("cluster", "stacks", "--job", job, "--thread", "all")
    assert out.startswith("job %s: world size 1" % esc_job), out
    assert "fn" + ESC_EVIL in out and ESC_FILE in out and '"thread%s"' % ESC_EVIL in out, out
    out = text_of("cluster", "stacks", "--job", job, "--tree", "--thread", "all")
    assert "fn" + ESC_EVIL in out, out
    s = json_of("cluster", "stacks", "--job", job, "--json")
    assert s["job"] == job
    t.check_output_clean()
