# SPDX-License-Identifier: MIT
"""`debug --dump --native` keeps what DWARF said of each native frame between runs
(injector/cli/srccache.c, one file per object under $XDG_CACHE_HOME/probing/srcline): the
second run answers the same file, line and function for every frame without loading the CLI's
private library (libdw) at all (strace: probing-cli.so never opened); a damaged or foreign file
is ignored and rewritten; PROBING_NO_SRCCACHE=1 writes nothing; a cache directory of another
user is not used. Host interpreters (the sid root's objects are read through /proc/PID/root
the same way; its interpreters are stripped)."""
import json
import os
import subprocess

import pytest

from conftest import CLI, HOST_PYTHONS, probing


def native_frames(doc):
    """(module, address) -> (name, file, line) of every native frame of the dump."""
    out = {}
    for t in doc["threads"] + doc.get("nativeThreads", []):
        for f in (t.get("native") or {}).get("frames", []):
            if f.get("kind") == "native" and f.get("module") and f.get("address"):
                out[(f["module"], f["address"])] = (f.get("name"), f.get("file"), f.get("line"))
    return out


def dump(pid, env, tmp_path, tag):
    """One `debug --dump --native --json` under strace: its frames and the files it opened."""
    log = tmp_path / ("strace-%s.txt" % tag)
    e = dict(os.environ)
    e.update(env)
    if "ASAN_OPTIONS" in e:  # make asan: LeakSanitizer cannot run under ptrace (strace)
        e["ASAN_OPTIONS"] += ":detect_leaks=0"
    r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(log), CLI, "-p",
                        str(pid), "debug", "--dump", "--native=all", "--json"], capture_output=True,
                       text=True, timeout=120, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    return native_frames(json.loads(r.stdout)), log.read_text()


def same_answers(a, b):
    common = set(a) & set(b)
    assert len(common) >= 3, (len(a), len(b))
    for k in common:
        assert a[k] == b[k], (k, a[k], b[k])
    return common


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_native_lines_cached_between_runs(python, spawn, tmp_path):
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    cache = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    first, opened1 = dump(t.pid, env, tmp_path, "1")
    assert "probing-cli.so" in opened1  # DWARF read through the private library
    d = cache / "probing" / "srcline"
    files = sorted(d.iterdir())
    assert files and oct(d.stat().st_mode & 0o777) == "0o700"
    for f in files:
        assert oct(f.stat().st_mode & 0o777) == "0o600", f
        head = f.read_text().split("\n", 1)[0]
        assert head.startswith("probing-srcline 1 ") and head.split()[-1].startswith("/"), head
    # Later runs: the same answers; a run whose frames were all seen before (the main thread
    # ticks, so one may catch it elsewhere) never opens the private library (nor libdw).
    seen, quiet = dict(first), 0
    for i in range(6):
        later, opened = dump(t.pid, env, tmp_path, "2-%d" % i)
        common = same_answers(first, later)
        if set(later) <= set(seen):
            quiet += 1
            assert "probing-cli.so" not in opened and "libdw" not in opened, opened[-3000:]
        seen.update(later)
    assert quiet >= 2, quiet
    if python != "/usr/bin/python3":  # pyenv's libpython has DWARF: lines were found and kept
        assert any(first[k][1] and first[k][2] for k in common), first
    # Damaged and foreign files: ignored, DWARF read again, the files rewritten right.
    for i, f in enumerate(files):
        f.write_text("probing-srcline 1 not this object\n0 1 0 0\tx\ty\n" if i % 2 else
                     "\x00\xff garbage")
    third, opened3 = dump(t.pid, env, tmp_path, "3")
    same_answers(first, third)
    assert "probing-cli.so" in opened3
    for f in files:
        head = f.read_text().split("\n", 1)[0]
        assert head.startswith("probing-srcline 1 ") and "not this object" not in head, head
    # PROBING_NO_SRCCACHE=1: nothing read or written.
    other = tmp_path / "other"
    fourth, opened4 = dump(t.pid, {"XDG_CACHE_HOME": str(other), "PROBING_NO_SRCCACHE": "1"},
                           tmp_path, "4")
    same_answers(first, fourth)
    assert not other.exists()
    # A cache directory that is not ours: not used (nothing written into it).
    foreign = tmp_path / "foreign"
    (foreign / "probing" / "srcline").mkdir(parents=True)
    for p in (foreign / "probing", foreign / "probing" / "srcline"):
        os.chown(p, 65534, 65534)
    fifth, _ = dump(t.pid, {"XDG_CACHE_HOME": str(foreign)}, tmp_path, "5")
    same_answers(first, fifth)
    assert list((foreign / "probing" / "srcline").iterdir()) == []
