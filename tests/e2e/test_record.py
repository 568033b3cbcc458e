# SPDX-License-Identifier: MIT
"""`probing -p PID record` (docs/flamegraph.md), as a py-spy user runs it, on samples/
flamehot.py (its main thread in zlib's deflate under native_share, a thread "spinner"):
one command samples for --duration, writes the file, and stops the sampler it started; on a
terminal a progress line counts samples and Ctrl-C ends early and still writes the file; a
sampler the user started is used and left running. The formats, from the extension or
--format: chrometrace (Chrome trace JSON: its events nest per thread as the stacks do, and
agree with the folded stacks), pprof (gzip'd profile.proto, read back with Google's Python
protobuf through a descriptor written here from the published spec: sample counts, function
names, files and lines, innermost location first, the same stacks as the folded output).
flamegraph renders the same formats. Errors: one line."""
import gzip
import json
import os
import re
import signal
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTHONS, bp, probing
from test_flamegraph import every_frame, parse_folded, share, trace_reader, zlib_c  # noqa: F401
from test_repl import Pty

SAMPLE = "flamehot.py"
WROTE = re.compile(r"^wrote (\S+): (\d+) samples, (\d+) stacks, (\d+) threads?$", re.M)


def wrote(r):
    m = WROTE.search(r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(2))


def sampler_running(pid):
    r = probing("-p", pid, "query", "--format", "csv",
                "SELECT COUNT(*) FROM perf.samples", check=True)
    a = int(r.stdout.split()[-1])
    time.sleep(0.6)
    r = probing("-p", pid, "query", "--format", "csv",
                "SELECT COUNT(*) FROM perf.samples", check=True)
    return int(r.stdout.split()[-1]) > a


def folded_of(pid, *extra):
    r = probing("-p", pid, "flamegraph", "-f", "folded", *extra, check=True)
    return parse_folded(r.stdout)


@pytest.mark.parametrize("python", PYTHONS)
def test_record_svg_then_stopped(spawn, python, tmp_path):
    t = spawn(python, SAMPLE)
    out = tmp_path / "profile.svg"
    t0 = time.time()
    r = probing("-p", t.pid, "record", "-o", out, "--duration", "2", timeout=60)
    took = time.time() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert 2.0 <= took < 15, took
    n = wrote(r)
    # No progress line when stderr is no terminal. A loaded machine may have the sampler drop a
    # sample or two (a ring full before its drain thread ran): then the note says so, and
    # nothing else is written.
    m = re.fullmatch(r"(probing: note: the sampler dropped (\d+) samples \(perf.max_samples "
                     r"reached, or its buffers were full\): the profile holds the (\d+) it "
                     r"kept\n)?", r.stderr)
    assert m, r.stderr
    assert not m.group(1) or int(m.group(2)) <= int(m.group(3)) // 20, r.stderr
    assert n > 20, r.stdout
    root = ET.parse(out).getroot()
    assert "native_share" in ET.tostring(root, encoding="unicode")
    # The sampler record started is stopped; its samples stay for flamegraph.
    assert not sampler_running(t.pid)
    assert sum(c for _, c in folded_of(t.pid)) == n
    r = probing("-p", t.pid, "perf", "--cc", "--stop", check=True)
    assert "was not running" in r.stdout, r.stdout
    t.assert_responsive()
    t.check_output_clean()


def test_record_progress_and_ctrl_c(spawn, tmp_path):
    """On a terminal: the progress line counts samples, Ctrl-C ends early, writes the file,
    stops the sampler."""
    t = spawn(PYTHONS[0].values[0], SAMPLE)
    out = tmp_path / "cut.folded"
    env = dict(os.environ, TERM="dumb")
    p = Pty(["-p", t.pid, "record", "-o", out], env)
    try:
        first = p.expect(" samples (Ctrl-C to stop and write)", timeout=20)
        assert "recording process %d:" % t.pid in first, first
        time.sleep(1.5)
        later = p.expect(" samples (Ctrl-C to stop and write)", timeout=5)
        counts = [int(x) for x in re.findall(r"(\d+) samples", first + later)]
        assert counts[-1] > counts[0], counts
        os.kill(p.pid, signal.SIGINT)
        done = p.expect("threads\r\n", timeout=30)
        assert p.wait() == 0
    finally:
        p.close()
    m = WROTE.search(re.split(r"[\r\n]+", done.strip())[-1])  # after the cleared progress line
    assert m and m.group(1) == str(out), done
    stacks = parse_folded(out.read_text())
    assert sum(c for _, c in stacks) == int(m.group(2)) >= counts[-1] > 0
    assert any("native_share (" in ";".join(f) for f, _ in stacks)
    assert not sampler_running(t.pid)
    t.check_output_clean()


def test_record_leaves_the_users_sampler_running(spawn, tmp_path):
    t = spawn(PYTHONS[0].values[0], SAMPLE)
    probing("-p", t.pid, "perf", "--cc", check=True)
    time.sleep(1.0)
    before = sum(c for _, c in folded_of(t.pid))
    r = probing("-p", t.pid, "record", "-o", tmp_path / "w.folded", "-d", "1.5", "--rate", "50",
                timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.startswith("probing: note: sampling was already running in process %d "
                               "(cpu mode, 100 Hz): recording from it, and leaving it running"
                               % t.pid), r.stderr
    n = wrote(r)
    # Only the samples of the recording's window: not those taken before it.
    assert 0 < n, r.stdout
    assert sampler_running(t.pid)
    total = sum(c for _, c in folded_of(t.pid))
    assert total >= before + n, (total, before, n)
    r = probing("-p", t.pid, "perf", "--cc", "--stop", check=True)
    assert "perf --cc stopped" in r.stdout


def check_nesting(events):
    """Per thread, complete events sorted by start: each lies inside the one it starts in.
    Returns each thread's events and its outermost ones."""
    by_tid, outer = {}, {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    for tid, evs in by_tid.items():
        open_ = []  # end times of the enclosing events
        for e in evs:  # the file's order: by start, callers first
            while open_ and e["ts"] >= open_[-1]:
                open_.pop()
            if open_:
                assert e["ts"] + e["dur"] <= open_[-1], (tid, e, open_[-1])
            else:
                outer.setdefault(tid, []).append(e)
            open_.append(e["ts"] + e["dur"])
    return by_tid, outer


@pytest.mark.parametrize("python", PYTHONS)
def test_record_chrometrace(spawn, python, tmp_path, trace_reader):
    t = spawn(python, SAMPLE)
    main, spinner = t.ready["main"], t.ready["spinner"]
    out = tmp_path / "run.trace.json"  # the format from the extension
    every = every_frame(python)  # zlib's C kept where it has no name
    r = probing("-p", t.pid, "record", "-o", out, "-d", "2", *every, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    n = wrote(r)
    d = json.loads(out.read_text())
    evs = d["traceEvents"]
    meta = {(e["name"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M"}
    assert meta[("thread_name", main)] == "MainThread (%d)" % main
    assert ("process_name", 0) in meta
    xs = [e for e in evs if e["ph"] == "X"]
    assert xs and all(e["pid"] == t.pid for e in evs)
    for e in xs:
        assert set(e) >= {"name", "cat", "ph", "ts", "dur", "pid", "tid"}, e
        assert isinstance(e["ts"], int) and isinstance(e["dur"], int), e
        assert e["ts"] >= 0 and e["dur"] > 0, e
        assert e["cat"] in ("python", "native")
        assert ("thread_name", e["tid"]) in meta
    assert [(e["tid"], e["ts"]) for e in xs] == sorted((e["tid"], e["ts"]) for e in xs)
    by_tid, outer = check_nesting(xs)
    assert main in by_tid
    # Python frames carry file and line; deflate runs inside native_share, in time.
    ns = [e for e in by_tid[main] if e["name"] == "native_share"]
    assert ns and all(e["cat"] == "python" and e["args"]["file"].endswith(SAMPLE) for e in ns)
    is_c = zlib_c(python)
    c = [e for e in by_tid[main] if is_c(e["name"])]
    assert c
    assert any(a["ts"] <= e["ts"] and e["ts"] + e["dur"] <= a["ts"] + a["dur"]
               for e in c for a in ns)
    # The timeline holds the samples: each stands for one to two periods (10 ms at 100 Hz) of
    # its thread's outermost event.
    for tid in by_tid:
        samples = sum(cnt for _, cnt in folded_of(t.pid, "--thread", tid, *every))
        busy = sum(e["dur"] for e in outer[tid]) / 1e6
        assert samples * 0.01 * 0.8 <= busy <= samples * 0.02 * 1.2 + 0.01, (tid, samples, busy)
    assert sum(cnt for _, cnt in folded_of(t.pid, *every)) == n
    # flamegraph renders the same format from the same profile.
    r = probing("-p", t.pid, "flamegraph", "--format", "chrometrace", *every, check=True)
    assert json.loads(r.stdout)["traceEvents"] == evs
    # An independent reader: the trace engine of Chrome DevTools' Performance panel (no
    # Perfetto can run here: its UI is a web app, its trace processor is not packaged) loads
    # the file as one process, one track per thread under its name, every event an entry of
    # its thread's call tree, the outermost ones its roots, no warning, ending where the last
    # event ends.
    seen = trace_reader(out)
    assert [p["pid"] for p in seen["processes"]] == [t.pid], seen
    assert seen["warnings"] == [], seen["warnings"]
    threads = {x["tid"]: x for x in seen["processes"][0]["threads"]}
    assert set(threads) == set(by_tid), (threads.keys(), by_tid.keys())
    for tid, x in threads.items():
        assert x["name"] == meta[("thread_name", tid)], x
        assert x["entries"] == len(by_tid[tid]), (tid, x["entries"], len(by_tid[tid]))
        assert x["roots"] == len(outer[tid]), (tid, x["roots"], len(outer[tid]))
        assert set(x["names"]) == {e["name"] for e in by_tid[tid]}
    assert seen["bounds"]["max"] == max(e["ts"] + e["dur"] for e in xs), seen["bounds"]


# pprof's profile.proto (github.com/google/pprof proto/profile.proto), the fields this test
# reads, declared here from the published spec for Google's protobuf runtime: an independent
# reader of what protobuf-c wrote.
PPROF_SPEC = {
    "Profile": [("sample_type", 1, "ValueType", True), ("sample", 2, "Sample", True),
                ("mapping", 3, "Mapping", True), ("location", 4, "Location", True),
                ("function", 5, "Function", True), ("string_table", 6, "string", True),
                ("time_nanos", 9, "int64", False), ("duration_nanos", 10, "int64", False),
                ("period_type", 11, "ValueType", False), ("period", 12, "int64", False),
                ("comment", 13, "int64", True), ("default_sample_type", 14, "int64", False)],
    "ValueType": [("type", 1, "int64", False), ("unit", 2, "int64", False)],
    "Sample": [("location_id", 1, "uint64", True), ("value", 2, "int64", True),
               ("label", 3, "Label", True)],
    "Label": [("key", 1, "int64", False), ("str", 2, "int64", False),
              ("num", 3, "int64", False), ("num_unit", 4, "int64", False)],
    "Mapping": [("id", 1, "uint64", False), ("memory_start", 2, "uint64", False),
                ("filename", 5, "int64", False)],
    "Location": [("id", 1, "uint64", False), ("mapping_id", 2, "uint64", False),
                 ("address", 3, "uint64", False), ("line", 4, "Line", True)],
    "Line": [("function_id", 1, "uint64", False), ("line", 2, "int64", False)],
    "Function": [("id", 1, "uint64", False), ("name", 2, "int64", False),
                 ("system_name", 3, "int64", False), ("filename", 4, "int64", False),
                 ("start_line", 5, "int64", False)],
}


def pprof_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    scalar = {"int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64, "string": F.TYPE_STRING}
    fd = descriptor_pb2.FileDescriptorProto(name="probing_test_profile.proto",
                                            package="probing_test.pprof", syntax="proto3")
    for msg, fields in PPROF_SPEC.items():
        m = fd.message_type.add(name=msg)
        for name, num, typ, rep in fields:
            f = m.field.add(name=name, number=num,
                            label=F.LABEL_REPEATED if rep else F.LABEL_OPTIONAL)
            if typ in scalar:
                f.type = scalar[typ]
            else:
                f.type = F.TYPE_MESSAGE
                f.type_name = ".probing_test.pprof." + typ
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("probing_test.pprof.Profile")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


@pytest.mark.parametrize("python", PYTHONS)
def test_record_pprof(spawn, python, tmp_path):
    t = spawn(python, SAMPLE)
    out = tmp_path / "cpu.pb.gz"
    every = every_frame(python)  # zlib's C kept where it has no name
    r = probing("-p", t.pid, "record", "-o", out, "-d", "2", "--rate", "200", *every,
                timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    n = wrote(r)
    raw = out.read_bytes()
    assert raw[:2] == b"\x1f\x8b", raw[:8]  # gzip
    p = pprof_class()()
    p.ParseFromString(gzip.decompress(raw))
    s = p.string_table
    assert s[0] == ""
    assert [(s[v.type], s[v.unit]) for v in p.sample_type] == [("samples", "count"),
                                                                ("cpu", "nanoseconds")]
    assert (s[p.period_type.type], s[p.period_type.unit], p.period) == ("cpu", "nanoseconds",
                                                                       5000000)
    assert s[p.default_sample_type] == "cpu"
    assert p.time_nanos > 1.7e18 and 0 < p.duration_nanos < 10e9
    funcs = {f.id: f for f in p.function}
    locs = {l.id: l for l in p.location}
    assert len(funcs) == len(p.function) and 0 not in funcs and 0 not in locs

    def frame(lid):
        ln = locs[lid].line[0]
        f = funcs[ln.function_id]
        if ln.line:  # a Python frame: "func (file:line)", as perf.frames names it
            return "%s (%s:%d)" % (s[f.name], s[f.filename], ln.line)
        return s[f.name]

    total, stacks = 0, {}
    tids = set()
    for smp in p.sample:
        assert smp.value[1] == smp.value[0] * p.period
        total += smp.value[0]
        labels = {s[l.key]: l for l in smp.label}
        tids.add(labels["thread_id"].num)
        names = [frame(i) for i in smp.location_id]  # innermost first
        key = ";".join(reversed(names))
        stacks[key] = stacks.get(key, 0) + smp.value[0]
    assert total == n
    assert t.ready["main"] in tids
    # The same stacks, counts and names as the folded output of the same profile.
    folded = {";".join(f): c for f, c in folded_of(t.pid, *every)}
    assert stacks == folded
    # native_share: a function of flamehot.py, at its BP line in some location; deflate
    # innermost of it.
    ns = [f for f in p.function if s[f.name] == "native_share"]
    assert len(ns) == 1 and s[ns[0].filename].endswith(SAMPLE)
    line = bp(SAMPLE, "native")
    assert any(ln.function_id == ns[0].id and ln.line == line for l in p.location
               for ln in l.line)
    is_c = zlib_c(python)
    def callee_first(smp):  # zlib's C frame before (inside) native_share
        names = [frame(i) for i in smp.location_id]
        py = [k for k, x in enumerate(names) if x.startswith("native_share (")]
        return py and any(is_c(x) for x in names[:py[0]])
    assert any(callee_first(smp) for smp in p.sample)
    # flamegraph writes the same format of the same (stopped) profile.
    out2 = tmp_path / "again.pprof"
    r = probing("-p", t.pid, "flamegraph", "-o", out2, *every, check=True)
    assert wrote(r) == n
    q = pprof_class()()
    q.ParseFromString(gzip.decompress(out2.read_bytes()))
    assert sum(x.value[0] for x in q.sample) == n


def test_record_errors(spawn, tmp_path):
    t = spawn(PYTHONS[0].values[0], SAMPLE)
    for args, code, msg in [
            (["--format", "png"], 2, "record: --format 'png': expected svg, folded, speedscope, "
                                     "chrometrace or pprof"),
            (["--duration", "0"], 2, "record: --duration '0': expected seconds from 0.1 to "
                                     "86400"),
            (["--rate", "5000"], 2, "record: --rate '5000': expected an integer from 1 to 1000"),
            (["--bogus"], 2, "record: unknown option"),
            (["-o", "/nonexistent/dir/x.svg", "-d", "0.5"], 1,
             "record: cannot write /nonexistent/dir/x.svg: No such file or directory")]:
        r = probing("-p", t.pid, "record", *args, timeout=60)
        assert r.returncode == code, (args, r.returncode, r.stdout, r.stderr)
        assert r.stderr.startswith("probing: error: " + msg), (args, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
    assert not sampler_running(t.pid)  # the failed write left no sampler behind
    # The target exits while recording: one line, exit 1.
    u = spawn(PYTHONS[0].values[0], SAMPLE)
    import subprocess
    from conftest import CLI
    p = subprocess.Popen([CLI, "-p", str(u.pid), "record", "-o", str(tmp_path / "gone.svg"),
                          "-d", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    u.kill()
    so, se = p.communicate(timeout=30)
    assert p.returncode == 1, (so, se)
    assert se.startswith("probing: error: record: process %d went away while recording"
                         % u.pid) and se.count("\n") == 1, se
    assert not (tmp_path / "gone.svg").exists()


SVG_NS = "{http://www.w3.org/2000/svg}"


def diff_frames(path):
    """function name -> [(delta, fill, title)] of a differential SVG's frames, the widest
    first."""
    out = {}
    for g in ET.parse(path).getroot().iter(SVG_NS + "g"):
        if "f" not in (g.get("class") or "").split():
            continue
        title = g.find(SVG_NS + "title").text
        name = title.split("\n")[0].split(" (")[0]
        out.setdefault(name, []).append((float(g.get("data-w")), float(g.get("data-delta")),
                                         g.find(SVG_NS + "rect").get("fill"), title))
    return {k: [x[1:] for x in sorted(v, reverse=True)] for k, v in out.items()}


def rgb(fill):
    return tuple(int(x) for x in re.match(r"rgb\((\d+),(\d+),(\d+)\)$", fill).groups())


@pytest.mark.parametrize("python", PYTHONS)
def test_record_diff(spawn, python, tmp_path):
    """A config change without a restart: the target's native share drops from 0.16 s to
    0.01 s of every 0.2 s (samples/flamehot.py's NATIVE_SECONDS, set with eval); the
    differential flame graph against the folded profile recorded before paints native_share
    blue (its share shrank) and python_share red (grew), the deepest colours on the largest
    changes, and says the shares in each frame's tooltip."""
    t = spawn(python, SAMPLE)
    before = tmp_path / "before.folded"
    r = probing("-p", t.pid, "record", "-o", before, "-d", "3", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    probing("-p", t.pid, "eval", "NATIVE_SECONDS = 0.01", check=True)
    time.sleep(0.3)
    out = tmp_path / "diff.svg"
    r = probing("-p", t.pid, "record", "--diff", before, "-o", out, "-d", "3", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    fr = diff_frames(out)
    ns, ns_fill, ns_title = fr["native_share"][0]
    ps, ps_fill, ps_title = fr["python_share"][0]
    assert ns < -0.2 and ps > 0.2, (ns, ps)
    r_, g_, b_ = rgb(ns_fill)
    assert b_ == 255 and r_ == g_ < 255, ns_fill  # blue
    r_, g_, b_ = rgb(ps_fill)
    assert r_ == 255 and g_ == b_ < 255, ps_fill  # red
    assert re.search(r"\), before \d+ \(\d+\.\d\d%\): -\d+\.\d\d points$", ns_title), ns_title
    # The larger the change, the deeper the colour; the largest gets the deepest (220).
    depth = sorted((abs(d), 255 - min(rgb(f))) for fs in fr.values() for d, f, _ in fs
                   if abs(d) >= 0.001)
    assert [x[1] for x in depth] == sorted(x[1] for x in depth), depth
    assert depth[-1][1] == 220
    # flamegraph --diff on the (stopped) profile: the same deltas.
    r = probing("-p", t.pid, "flamegraph", "--diff", before, "-o", tmp_path / "d2.svg",
                check=True)
    assert diff_frames(tmp_path / "d2.svg")["native_share"][0][0] == ns
    # Errors: one line.
    for args, code, msg in [
            (["--diff", before, "-f", "folded"], 2, "flamegraph: --diff draws an SVG"),
            (["--diff", tmp_path / "none"], 1, "flamegraph: --diff %s: No such file" %
             (tmp_path / "none")),
            (["--diff", out], 1, "flamegraph: --diff %s: no folded stacks in it" % out)]:
        r = probing("-p", t.pid, "flamegraph", *args)
        assert r.returncode == code and r.stderr.startswith("probing: error: " + msg), r.stderr
        assert r.stderr.count("\n") == 1


@pytest.mark.parametrize("python", PYTHONS)
def test_flamegraph_diff_window(spawn, python, tmp_path):
    """Two time windows of one profile, no file kept from before: the sampler runs 3 s with
    native_share taking 0.16 s of every 0.2 s, then 3 s at 0.01 s (set with eval). --window
    selects each part (the native share falls from over half to under a quarter), and
    --diff-window 0:2.5 (the first part against everything from 2.5 s on, then against
    --window 3.5:) paints native_share blue and python_share red, as --diff against a
    recorded file does."""
    t = spawn(python, SAMPLE)
    probing("-p", t.pid, "perf", "--cc", check=True)
    time.sleep(3)
    probing("-p", t.pid, "eval", "NATIVE_SECONDS = 0.01", check=True)
    time.sleep(3.5)
    probing("-p", t.pid, "perf", "--stop", check=True)
    fold = lambda *a: parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded",
                                           *every_frame(python), *a, check=True).stdout)
    native = lambda f: any(x.startswith("native_share") for x in f)
    early, late = fold("--window", ":2.5"), fold("--window", "3.5:")
    whole = fold()
    assert sum(n for _, n in early) + sum(n for _, n in late) < sum(n for _, n in whole)
    assert share(early, native) > 0.5 and share(late, native) < 0.25, (
        share(early, native), share(late, native))
    for extra in ([], ["--window", "3.5:"]):
        out = tmp_path / ("dw%d.svg" % len(extra))
        r = probing("-p", t.pid, "flamegraph", "--diff-window", "0:2.5", *extra, "-o", out)
        assert r.returncode == 0, r.stdout + r.stderr
        fr = diff_frames(out)
        ns, ns_fill, _ = fr["native_share"][0]
        ps, ps_fill, _ = fr["python_share"][0]
        assert ns < -0.2 and ps > 0.2, (extra, ns, ps)
        r_, g_, b_ = rgb(ns_fill)
        assert b_ == 255 and r_ == g_ < 255, ns_fill
        sub = "the samples from %s s on against those from 0 s to 2.5 s" % (
            "3.5" if extra else "2.5")
        assert sub in out.read_text(), out.read_text()[:2000]
    # Errors: one line each.
    for args, code, msg in [
            (["--window", "5"], 2, "flamegraph: --window '5': expected FROM:TO"),
            (["--window", "4:2"], 2, "flamegraph: --window '4:2': expected FROM:TO"),
            (["--window", "-1:"], 2, "flamegraph: --window '-1:': expected FROM:TO"),
            (["--diff-window", "x:"], 2, "flamegraph: --diff-window 'x:': expected FROM:TO"),
            (["--diff-window", "0:1", "-f", "folded"], 2,
             "flamegraph: --diff-window draws an SVG"),
            (["--diff-window", "0:1", "--diff", tmp_path / "dw0.svg"], 2,
             "flamegraph: --diff and --diff-window both name the profile to compare with"),
            (["--diff-window", "1:"], 2, "flamegraph: --diff-window 1: reaches the end of "
                                         "the profile"),
            (["--diff-window", "500:600"], 1, "flamegraph: --diff-window: no samples from "
                                              "500 s to 600 s"),
            (["--window", "500:", "-f", "folded"], 1, "flamegraph: no samples from 500 s on")]:
        r = probing("-p", t.pid, "flamegraph", *args)
        assert r.returncode == code and r.stderr.startswith("probing: error: " + msg), (
            args, r.returncode, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
