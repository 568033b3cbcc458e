# SPDX-License-Identifier: MIT
"""The CLI loads only what a command needs: libdw, libelf, libedit, SQLite and protobuf-c (and
the six libraries behind them) are in the CLI's private library, lib/probing/probing-cli.so,
which only debug --dump --native, dump --core --native, repl on a terminal, cluster query
--reduce and --format pprof load. Checked with the loader's own account (LD_DEBUG=files lists every object it maps, dlopen'd
ones too) and, for a CLI attached to a real target, its /proc/PID/maps. Without the private
library, those commands stop with one line saying what to do and leave the target untouched,
and the others work as before."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, CLI, HOST_PYTHONS, probing
from test_repl import Pty

pytestmark = pytest.mark.serial  # `probing list` reads every probed process of the node

PY = HOST_PYTHONS[-2].values[0]  # a pyenv CPython we have a build for
EXT = "probing-cli.so"
# sonames (LD_DEBUG) and file names (maps: libdw-0.188.so, libz.so.1.2.13)
HEAVY = re.compile(r"^(libdw|libelf|libedit|libsqlite3|libtinfo|libbsd|libz|liblzma|libbz2|libmd|"
                   r"libprotobuf-c)"
                   r"[-.]|^%s$" % re.escape(EXT))


def loaded(r):
    """The objects the loader mapped for a run under LD_DEBUG=files (basenames)."""
    return {os.path.basename(m) for m in re.findall(r"file=(\S+)\s+\[\d+\];", r.stderr)}


def maps_of(pid):
    """The file names a process maps (libdw-0.188.so, libcjson.so.1.7.15)."""
    with open("/proc/%d/maps" % pid) as f:
        return {os.path.basename(line.split()[-1]) for line in f if "/" in line}


def heavy_in(names):
    return sorted(n for n in names if HEAVY.match(n))


def traced(*args, env=None):
    r = probing(*args, env={"LD_DEBUG": "files", **(env or {})})
    assert r.returncode == 0, (args, r.returncode, r.stderr[-2000:])
    return r


def test_light_commands_load_no_heavy_library(spawn):
    t = spawn(PY)
    for args in (["inject"], ["debug", "--dump"], ["debug", "--dump", "--json"],
                 ["eval", "1 + 1"], ["query", "SELECT 1"], ["list"]):
        names = loaded(traced(*(["-p", t.pid] if args[0] != "list" else []), *args))
        assert "libcjson.so.1" in names, names  # LD_DEBUG did list the objects
        assert heavy_in(names) == [], (args, heavy_in(names))
    t.assert_responsive()
    t.check_output_clean()


def test_attached_repl_maps_no_heavy_library(spawn):
    """A CLI attached to a real target (piped repl, connected, answering): its own maps."""
    t = spawn(PY)
    p = subprocess.Popen([CLI, "-p", str(t.pid), "repl"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("print('attached', 6 * 7)\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "attached 42"
        maps = maps_of(p.pid)
        assert any(m.startswith("libcjson.so.1") for m in maps), maps
        assert heavy_in(maps) == [], heavy_in(maps)
    finally:
        p.stdin.close()
        assert p.wait(timeout=20) == 0, p.stderr.read()


def test_native_dump_loads_the_private_library(spawn, tmp_path):
    """With nothing in the file:line cache (a fresh XDG_CACHE_HOME), --native loads the private
    library for DWARF; a second run over the same frames answers from the cache without it
    (tests/e2e/test_srcline_cache.py checks the answers)."""
    t = spawn(PY)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = traced("-p", t.pid, "debug", "--dump", "--native", env=env)
    names = loaded(r)
    assert EXT in names and "libdw.so.1" in names and "libedit.so.2" in names, names
    assert re.search(r"\(native\) \S+ in \S+ \(\S+\.[ch]:\d+\)", r.stdout), r.stdout[-3000:]


def test_only_pprof_loads_the_private_library(spawn, tmp_path):
    """record and flamegraph render every other format without it; pprof (protobuf-c) in it."""
    t = spawn(PY, "flamehot.py")
    r = traced("-p", t.pid, "record", "-f", "folded", "-o", tmp_path / "a.folded", "-d", "0.5")
    assert heavy_in(loaded(r)) == [], heavy_in(loaded(r))
    for fmt in ("svg", "speedscope", "chrometrace"):
        r = traced("-p", t.pid, "flamegraph", "-f", fmt, "-o", tmp_path / ("a." + fmt))
        assert heavy_in(loaded(r)) == [], (fmt, heavy_in(loaded(r)))
    names = loaded(traced("-p", t.pid, "flamegraph", "-o", tmp_path / "a.pb.gz"))
    assert EXT in names and "libprotobuf-c.so.1" in names, names


@pytest.fixture
def nolib(tmp_path):
    """A libdir with everything of this build but the private library."""
    d = tmp_path / "libdir"
    d.mkdir()
    src = os.path.join(BUILD, "lib", "probing")
    for name in os.listdir(src):
        if name != EXT:
            os.symlink(os.path.join(src, name), d / name)
    return {"PROBING_LIBDIR": str(d)}


def one_line(r, what, env):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("probing: error: %s: cannot load the CLI's private library: " % what)
    assert os.path.join(env["PROBING_LIBDIR"], EXT) in lines[0], lines[0]
    assert "reinstall probing" in lines[0], lines[0]


def test_missing_private_library(spawn, nolib):
    t = spawn(PY)
    # the heavy commands refuse before touching the target
    one_line(probing("-p", t.pid, "debug", "--dump", "--native", env=nolib),
             "debug --dump --native", nolib)
    assert t.maps_count() == 0
    one_line(probing("dump", "--core", "/nonexistent-core", "--native", env=nolib), "dump --core",
             nolib)
    one_line(probing("cluster", "query", "SELECT 1", "--reduce", "SELECT * FROM r", env=nolib),
             "cluster query --reduce", nolib)
    one_line(probing("-p", t.pid, "record", "-o", "x.pb.gz", env=nolib), "record --format pprof",
             nolib)
    one_line(probing("-p", t.pid, "flamegraph", "-f", "pprof", env=nolib),
             "flamegraph --format pprof", nolib)
    term = Pty(["-p", t.pid, "repl"], {**os.environ, **nolib})
    try:
        term.expect("probing: error: repl: cannot load the CLI's private library: ")
        assert term.wait() == 1
    finally:
        term.close()
    assert t.maps_count() == 0
    # the rest work without it
    probing("-p", t.pid, "inject", env=nolib, check=True)
    assert "Thread" in probing("-p", t.pid, "debug", "--dump", env=nolib, check=True).stdout
    r = subprocess.run([CLI, "-p", str(t.pid), "repl"], input="print(6 * 7)\n", text=True,
                       capture_output=True, timeout=30, env={**os.environ, **nolib})
    assert (r.returncode, r.stdout.strip()) == (0, "42"), r.stderr
    t.assert_responsive()
    t.check_output_clean()


def test_terminal_repl_maps_the_private_library_but_is_no_target(spawn, tmp_path):
    """A repl on a terminal loads the private library (line editing), and the CLI running it is
    not taken for a process with the probe loaded (list finds targets by their mappings)."""
    t = spawn(PY)
    term = Pty(["-p", t.pid, "repl"], dict(os.environ, TERM="dumb", HOME=str(tmp_path)))
    try:
        term.expect(">>> ")
        maps = maps_of(term.pid)
        assert EXT in maps and any(m.startswith("libedit.so") for m in maps), maps
        pids = [p["pid"] for p in json.loads(probing("list", "--json", check=True).stdout)]
        assert t.pid in pids and term.pid not in pids, (t.pid, term.pid, pids)
        term.send("\x04")
        assert term.wait() == 0
    finally:
        term.close()
