# SPDX-License-Identifier: MIT
"""Threads that run no Python and C++ names (issue 35, native threads): `debug --dump --native`
(text and --json) and the python.native_backtrace table include the target's threads that run
no Python, named by the kernel, each with its native stack, and show C++ functions demangled.

samples/native_cxx.py loads samples/native_cxx.cpp (built with g++ -g, loaded by ctypes.CDLL:
RTLD_LOCAL, so its libstdc++ is not in the process's global scope) which starts "cxx-waiter", a
pthread blocked in read(2) inside cxxs::Reducer::finalize_backward(int) (read without a
signal), and "cxx-spinner", a std::thread computing in cxxs::Spinner::spin() (signalled); the
Python thread "py-cxx" blocks in the same C++ function through ctypes. Before: the two native
threads were missing from the dump and the table, and the C++ frames read
_ZN4cxxs7Reducer17finalize_backwardEi (the probe looked for __cxa_demangle in the global scope
only). With Debian's torch 1.13 and the sid root's torch 2.x, a one-rank gloo group's threads
appear with their C++ names (c10d::ProcessGroupGloo::runLoop(int),
gloo::transport::tcp::Loop::run())."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import HOST_PYTHONS, SAMPLES, asan_interceptor, dump_json, probing, sanitizer_env
from dbgutil import Debugger
from test_perf_torch import _torch_pythons  # Debian's torch 1.13, the sid root's 2.x

pytestmark = pytest.mark.serial  # `cluster stacks` without --job reads every process of the node

REDUCER = "cxxs::Reducer::finalize_backward(int)"
SPIN = "cxxs::Spinner::spin()"


def built_in(tmp_path):
    """The sample builds its library in a mkdtemp directory: under the test's own."""
    return {"TMPDIR": str(tmp_path)}


def names(stack):
    return [f.get("name") or "" for f in stack["native"].get("frames", [])]


def query(pid, sql):
    r = probing("-p", pid, "query", sql, "--format", "json", check=True)
    return json.loads(r.stdout)


def state(pid, tid):
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_native_only_threads_and_cxx_names(python, spawn, tmp_path):
    t = spawn(python, "native_cxx.py", args=("--spin",), env=built_in(tmp_path))
    tids = t.ready["tids"]
    probing("-p", t.pid, "inject", check=True)
    d = dump_json(t.pid, "--native")
    # The Python thread in the C++ function: demangled in its merged stack.
    pc = next(th for th in d["threads"] if th["name"] == "py-cxx")
    assert REDUCER in names(pc) and "run_block" in names(pc), names(pc)
    py = {th["id"] for th in d["threads"]}
    others = {th["id"]: th for th in d["nativeThreads"]}
    # Exactly the two C++ threads: no Python thread, none of the probe's own.
    assert set(others) == {tids["cxx-waiter"], tids["cxx-spinner"]}, (others, py)
    w, s = others[tids["cxx-waiter"]], others[tids["cxx-spinner"]]
    assert w["name"] == "cxx-waiter" and s["name"] == "cxx-spinner", (w, s)
    # The waiter, blocked in read(2), read without a signal; its frames demangled.
    assert w["native"]["answered"] is True and w["native"].get("blocked") is True, w
    n = [f["name"] for f in w["native"]["frames"] if not asan_interceptor(f)]
    assert n[0] == "read" or n[0].startswith("__libc_read"), n
    assert n[1] == REDUCER and "waiter_main(void*)" in n, n
    assert all(f["kind"] == "native" for f in w["native"]["frames"]), w
    # The spinner runs no system call: asked with a signal, it answers from inside spin().
    assert s["native"]["answered"] is True and not s["native"].get("blocked"), s
    assert names(s)[0] == SPIN, names(s)
    assert not any("_Z" in x for x in names(w) + names(s)), (names(w), names(s))

    # The text form: each native-only thread after the Python ones, named by the kernel.
    out = probing("-p", t.pid, "debug", "--dump", "--native", check=True).stdout
    assert re.search(r"^Process %d, CPython \S+, 2 Python threads, 2 without Python$" % t.pid,
                     out, re.M), out
    block = out.split('\nThread %d "cxx-waiter" (native, no Python)\n' % tids["cxx-waiter"])[1]
    if os.environ.get("PROBING_TARGET_PRELOAD"):  # make asan: its read interceptor between
        block = re.sub(r"(?m)^    \(native\) \S*interceptor_read\S*\+0x[0-9a-f]+ in libasan.*\n",
                       "", block)
    assert re.match(r"    \(native\) \S*read\S*\+0x[0-9a-f]+ in libc\.so\.6.*\n"
                    r"    \(native\) cxxs::Reducer::finalize_backward\(int\)\+0x[0-9a-f]+ in "
                    r"libnative_cxx\.so \(.*native_cxx\.cpp:\d+\)\n", block), block
    assert '\nThread %d "cxx-spinner" (native, no Python)\n    (native) %s+0x' % (
        tids["cxx-spinner"], SPIN) in out, out
    assert "_ZN4cxxs" not in out, out

    # python.native_backtrace: the names come demangled from the target itself (the CLI
    # prints the table as it gets it), and the native-only threads are there by kernel id.
    rows = query(t.pid, "SELECT thread_id, depth, kind, func FROM python.native_backtrace "
                        "WHERE thread_id = %d ORDER BY depth" % tids["cxx-waiter"])
    rows = [r for r in rows if not asan_interceptor(r, func="func")]
    assert [r["func"] for r in rows[1:3]] == [REDUCER, "waiter_main(void*)"], rows
    assert all(r["kind"] == "native" for r in rows), rows
    per = query(t.pid, "SELECT b.thread_id, t.name, count(*) AS n FROM python.native_backtrace b "
                       "JOIN system.threads t ON t.tid = b.thread_id GROUP BY b.thread_id")
    by = {r["thread_id"]: r["name"] for r in per}
    assert set(by) == {t.pid, *tids.values()}, per
    assert by[tids["cxx-waiter"]] == "cxx-waiter" and by[tids["cxx-spinner"]] == "cxx-spinner"
    funcs = query(t.pid, "SELECT func FROM python.native_backtrace WHERE thread_id = %d"
                  % tids["py-cxx"])
    assert REDUCER in [r["func"] for r in funcs], funcs

    # The waiter was never woken (still in read), the spinner still spins, the target runs.
    assert state(t.pid, tids["cxx-waiter"]) == "S"
    ticks = t.ticks()
    time.sleep(0.6)
    assert t.ticks() > ticks
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_cxx_names_without_libstdcxx_in_target(python, spawn, tmp_path):
    """The C++ library links no libstdc++ (--plain) and the process has none loaded: the probe
    cannot demangle (it loads nothing to do so) and the CLI does, in the text and the JSON of
    the dump."""
    if os.environ.get("PROBING_TARGET_PRELOAD"):
        pytest.skip("make asan: the target preloads libubsan, which brings libstdc++ in")
    t = spawn(python, "native_cxx.py", args=("--spin", "--plain"), env=built_in(tmp_path))
    tids = t.ready["tids"]
    with open("/proc/%d/maps" % t.pid) as f:
        assert "libstdc++" not in f.read()
    d = dump_json(t.pid, "--native")
    others = {th["id"]: th for th in d["nativeThreads"]}
    assert REDUCER in names(others[tids["cxx-waiter"]]), others
    assert names(others[tids["cxx-spinner"]])[0] == SPIN, others
    out = probing("-p", t.pid, "debug", "--dump", "--native", check=True).stdout
    assert "(native) %s+0x" % REDUCER in out and "(native) %s+0x" % SPIN in out, out
    assert "_ZN4cxxs" not in out, out
    with open("/proc/%d/maps" % t.pid) as f:
        assert "libstdc++" not in f.read()  # the probe loaded none
    t.check_output_clean()


@pytest.mark.parametrize("plain", [False, True], ids=["libstdcxx", "plain"])
@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_flamegraph_cxx_names(python, plain, spawn, tmp_path):
    """perf --cc samples the spinner (a thread that runs no Python): its folded stacks and
    perf.frames name cxxs::Spinner::spin() demangled, by the probe when the target has libstdc++
    loaded, by the CLI's flamegraph when it has none (perf.frames then keeps the symbol)."""
    if plain and os.environ.get("PROBING_TARGET_PRELOAD"):
        pytest.skip("make asan: the target preloads libubsan, which brings libstdc++ in")
    t = spawn(python, "native_cxx.py", args=("--spin",) + (("--plain",) if plain else ()),
              env=built_in(tmp_path))
    probing("-p", t.pid, "perf", "--cc", "--duration", "1", check=True, timeout=120)
    folded = probing("-p", t.pid, "flamegraph", "-f", "folded", check=True).stdout
    spin = [ln for ln in folded.splitlines() if SPIN in ln]
    assert spin and all(ln.split(" ")[0].endswith(";" + SPIN) or SPIN + " " in ln
                        for ln in spin), folded
    assert "_ZN4cxxs" not in folded, folded
    rows = query(t.pid, "SELECT DISTINCT func FROM perf.frames WHERE func LIKE '%pin%'")
    funcs = {r["func"] for r in rows}
    assert (("_ZN4cxxs7Spinner4spinEv" if plain else SPIN) in funcs), funcs
    probing("-p", t.pid, "perf", "--stop", check=True)
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS)
def test_dap_stack_frames_cxx_names(python, spawn, tmp_path):
    """The debugger's native frames (attach nativeFrames "merged"): the Python thread blocked
    in the C++ function shows it demangled (the probe's own naming: no CLI in between)."""
    t = spawn(python, "native_cxx.py", env=built_in(tmp_path))
    d = Debugger(t, sample="native_cxx.py", attach={"nativeFrames": "merged"})
    d.req("pause", {"threadId": t.pid})
    d.stopped()
    f = d.frames(t.ready["tids"]["py-cxx"])
    natives = [re.sub(r"\+0x[0-9a-f]+$", "", x["name"]) for x in f
               if "instructionPointerReference" in x]  # "function+0xOFFSET"
    assert REDUCER in natives and "cxx_block" in natives, natives
    assert not any(x.startswith("_Z") for x in natives), natives
    d.req("continue", {"threadId": t.pid})
    t.assert_responsive()
    d.req("disconnect")
    t.check_output_clean()


@pytest.mark.parametrize("python", [p for p in HOST_PYTHONS if p.id in ("3.11", "debian")])
def test_cluster_stacks_native(python, tmp_path):
    """cluster stacks --native: three ranks of native_cxx.py (rank 2 with the spinner) grouped
    by their merged stacks; with --thread all, the threads that run no Python too, the C++ frames
    demangled, unnamed frames as `?` (never an address, which differs between ranks)."""
    tag = str(os.getpid() % 10000)
    procs = []
    try:
        for r in (0, 1, 2):
            e = dict(os.environ, RANK=str(r), WORLD_SIZE="3", LOCAL_RANK=str(r),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT="7" + tag, **built_in(tmp_path))
            e.update(sanitizer_env())  # make asan: the ranks load a sanitized probe
            e.pop("PROBING", None)
            out = tmp_path / ("rank%d.out" % r)
            procs.append((subprocess.Popen(
                [python, os.path.join(SAMPLES, "native_cxx.py"), *(["--spin"] if r == 2 else [])],
                stdout=open(out, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=e), out))
        deadline = time.time() + 60
        for p, out in procs:
            while "ready " not in out.read_text():
                assert p.poll() is None and time.time() < deadline, out.read_text()
                time.sleep(0.05)
        job = "torch:127.0.0.1:7" + tag
        d = json.loads(probing("cluster", "stacks", "--job", job, "--native", "--json",
                               check=True).stdout)
        assert [g["ranks"] for g in d["groups"]] == [[0, 1, 2]], d
        f = d["groups"][0]["frames"]
        assert f[0]["native"] is True and "nanosleep" in f[0]["func"], f
        assert any(x["func"] == "main" and not x.get("native") for x in f), f
        out = probing("cluster", "stacks", "--job", job, "--native", "--thread", "all",
                      check=True).stdout
        # read(2)'s frame, and under make asan its interceptor, before the C++ ones
        assert re.search(r"^3 ranks: 0-2 \(3 threads\)\n(  . \(native\) .*\n){0,%d}"
                         % (2 if os.environ.get("PROBING_TARGET_PRELOAD") else 1) +
                         r"  . \(native\) cxxs::Reducer::finalize_backward\(int\) in "
                         r"libnative_cxx\.so\n  . \(native\) waiter_main\(void\*\) in ", out, re.M), out
        assert re.search(r'^1 rank: 2 \(node .*, thread \d+ "cxx-spinner"\)\n'
                         r"  . \(native\) cxxs::Spinner::spin\(\) in libnative_cxx\.so\n", out,
                         re.M), out
        assert "_ZN" not in out and " 0x" not in out, out
        # usage: --native with --no-inject, or outside cluster stacks
        r = probing("cluster", "stacks", "--native", "--no-inject")
        assert r.returncode == 2 and "--native needs the probe loaded" in r.stderr, r.stderr
        r = probing("cluster", "list", "--native")
        assert r.returncode == 2 and "--native only goes with 'cluster stacks'" in r.stderr
    finally:
        for p, _ in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


@pytest.mark.parametrize("python", _torch_pythons())
def test_torch_native_threads(python, spawn, tmp_path):
    """Debian's torch 1.13 and the sid root's torch 2.x: a one-rank gloo group
    (samples/torch_gloo.py) has threads that run no Python: ProcessGroupGloo's work loops and
    gloo's TCP loop, named in C++."""
    t = spawn(python, "torch_gloo.py", args=(str(tmp_path / "store"),),
              env={"GLOO_SOCKET_IFNAME": "lo"})
    d = dump_json(t.pid, "--native")
    others = d["nativeThreads"]
    runloops = [th for th in others if "c10d::ProcessGroupGloo::runLoop(int)" in names(th)]
    assert len(runloops) >= 1, [(th["id"], th["name"], names(th)) for th in others]
    assert any("gloo::transport::tcp::Loop::run()" in names(th) for th in others), others
    assert all(th["native"]["answered"] for th in runloops), runloops
    assert not any(x.startswith("_Z") for th in others for x in names(th)), others
    # the main thread is a Python thread, not listed again
    assert t.pid not in {th["id"] for th in others}
    assert os.path.exists("/proc/%d" % t.pid)
    # torch 2.x's gloo logs its connections on stderr
    t.check_output_clean(extra_allowed=r"^\[\./gloo/transport/tcp/context\.cc:\d+\] INFO ")
