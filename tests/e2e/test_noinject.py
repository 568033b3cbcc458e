# SPDX-License-Identifier: MIT
"""debug --dump --no-inject on every CPython 3.8-3.13 and Debian's python3: the stacks of a live
process read from outside (process_vm_readv) with the probe's own frame walker built as the
CLI's reader, and nothing loaded into the target: no libprobing in its mappings, no socket; the
same threads, native ids and frames as the injected probe's dump afterwards; the GIL holder of a
process stuck in C; the options that need the probe refused."""
import json
import os

import pytest

from conftest import PYTHONS, bp, dump_json, probing, sock_name


def frames_of(t):
    return [(f["name"], f["file"], f["line"]) for f in t["frames"]]


def noinject(pid):
    r = probing("-p", pid, "debug", "--dump", "--no-inject", "--json", check=True)
    return json.loads(r.stdout)


def loaded(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libprobing" in f.read()


@pytest.mark.parametrize("python", PYTHONS)
def test_noinject_dump(python, spawn):
    t = spawn(python)
    d = noinject(t.pid)
    by_id = {x["nativeId"]: x for x in d["threads"]}
    want = {t.pid, *t.ready["threads"].values()}
    assert set(by_id) == want, d
    main = by_id[t.pid]
    assert main["main"] is True and main["id"] == t.pid and main["nameSource"] == "os"
    assert frames_of(main)[0][0] == "tick_forever" and \
        frames_of(main)[0][2] == bp("threads.py", "main_sleep")
    sl = by_id[t.ready["threads"]["sleeper-1"]]
    assert frames_of(sl)[0][0] == "sleeper" and frames_of(sl)[0][2] == bp("threads.py",
                                                                           "sleeper_sleep")
    assert d["python"].startswith(python.rsplit("python", 1)[-1][:4]) or python.endswith("python3")
    # Nothing of ours in the target: no library, no socket.
    assert not loaded(t.pid)
    assert not os.path.exists("/tmp/probing-%d/%s" % (os.geteuid(), sock_name(t.pid)))
    # The same as the injected probe reads.
    inj = {x["nativeId"]: x for x in dump_json(t.pid)["threads"]}
    assert loaded(t.pid)
    for tid in want:
        assert frames_of(inj[tid]) == frames_of(by_id[tid]), tid
    r = probing("-p", t.pid, "debug", "--dump", "--no-inject", check=True)
    assert "    sleeper (" in r.stdout and 'Thread %d "' % t.pid in r.stdout
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_noinject_gil_held(python, spawn):
    t = spawn(python, "stuck_gil.py")
    d = noinject(t.pid)
    assert d["gil"]["holder"] == t.pid, d["gil"]
    main = [x for x in d["threads"] if x["nativeId"] == t.pid][0]
    assert main["holdsGil"] is True
    assert (main["frames"][0]["name"], main["frames"][0]["line"]) == \
        ("hold_gil_forever", bp("stuck_gil.py", "stuck_call"))
    assert not loaded(t.pid)


def test_noinject_usage(spawn):
    t = spawn("/usr/bin/python3")
    for extra in ("--locals", "--native"):
        r = probing("-p", t.pid, "debug", "--dump", "--no-inject", extra)
        assert r.returncode == 2 and "need the probe loaded" in r.stderr, r.stderr
    r = probing("-p", t.pid, "debug", "--pause", "--no-inject")
    assert r.returncode == 2 and "only goes with --dump" in r.stderr
    assert not loaded(t.pid)
