# SPDX-License-Identifier: MIT
"""`probing flamegraph` on real profiles (docs/flamegraph.md), on every CPython: samples/
flamehot.py spends most of its main thread in zlib's deflate called from native_share, the rest
in pure Python. After a real `perf --cc`: the folded stacks put the Python caller before the C
function, with the largest share; the SVG is well-formed XML, icicle-ordered, widths
proportional to samples, and in headless Chromium its search finds deflate with the share the
folded stacks give and its zoom works; speedscope output validates against speedscope's own
schema (npm package, ajv; tests/flame/); --thread, --since, --mode filter; a tiny
query.max_rows cuts nothing; no samples, bad options: one line, exit 1 or 2."""
import json
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

import sidroot

from conftest import CLI, HOST_PYTHONS, PYTHONS, ROOT, probing

SAMPLE = "flamehot.py"
FLAME_DIR = os.path.join(ROOT, "tests", "flame")
SVG_NS = "{http://www.w3.org/2000/svg}"


def flame_node_modules():
    """tests/flame/node_modules from the committed lockfile (npm ci when missing or stale)."""
    stamp = os.path.join(FLAME_DIR, "node_modules", ".package-lock.json")
    lock = os.path.join(FLAME_DIR, "package-lock.json")
    if not os.path.exists(stamp) or os.path.getmtime(lock) > os.path.getmtime(stamp):
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=FLAME_DIR,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, "npm ci in tests/flame failed: %s" % r.stderr[-2000:]


@pytest.fixture(scope="session")
def trace_reader():
    """Chrome DevTools' trace engine (tests/flame/read_trace.mjs) reading a Chrome trace file:
    what it made of it, as a dict."""
    flame_node_modules()

    def read(path):
        r = subprocess.run(["node", os.path.join(FLAME_DIR, "read_trace.mjs"), str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)
    return read


@pytest.fixture(scope="session")
def speedscope_validator():
    """speedscope's own schema (tests/flame/validate.js) checking a file."""
    flame_node_modules()

    def validate(path):
        r = subprocess.run(["node", os.path.join(FLAME_DIR, "validate.js"), str(path)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith("valid "), r.stdout + r.stderr
    return validate


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    raise AssertionError("chromium is not installed: run tools/deps.sh")


def browser_dom(svg_path, fragment, tmp_path):
    """Loads the SVG in headless Chromium with a URL fragment (#search=RE, #zoom=RE) and
    returns the DOM after its script ran, parsed."""
    r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", "--user-data-dir=%s" % (tmp_path / "chromium"),
                        "--dump-dom", "file://%s#%s" % (svg_path, fragment)],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "<svg" in r.stdout, r.stderr[-2000:]
    return ET.fromstring(r.stdout[r.stdout.index("<svg"):])


def parse_folded(text):
    stacks = []
    for line in text.splitlines():
        frames, _, n = line.rpartition(" ")
        stacks.append((frames.split(";"), int(n)))
    return stacks


def share(stacks, pred):
    total = sum(n for _, n in stacks)
    return sum(n for f, n in stacks if pred(f)) / total


def has(frames, prefix):
    return any(f.startswith(prefix) for f in frames)


def profiled(spawn, python, seconds=3):
    t = spawn(python, SAMPLE)
    probing("-p", t.pid, "perf", "--cc", "--duration", seconds, check=True, timeout=120)
    return t


def frames_of(root):
    """(name, x, width, depth, element) of every frame group of the SVG."""
    out = []
    for g in root.iter(SVG_NS + "g"):
        if "f" not in (g.get("class") or "").split():
            continue
        title = g.find(SVG_NS + "title").text
        rect = g.find(SVG_NS + "rect")
        out.append((title.split("\n")[0], float(g.get("data-x")), float(g.get("data-w")),
                    int(g.get("data-d")), g, rect))
    return out


def zlib_c(python):
    """How the C code of zlib's compress shows in a folded stack: `deflate`, or an unnamed
    libpython frame where zlib is built into a stripped libpython."""
    builtin = not sidroot.is_sid(python) and subprocess.run(
        [python, "-c", "import sys; print('zlib' in sys.builtin_module_names)"],
        capture_output=True, text=True, timeout=30).stdout.strip() == "True"
    if builtin:
        return lambda x: x == "deflate" or x.startswith("[libpython")
    return lambda x: x == "deflate"


def every_frame(python):
    """[] where zlib's C has names; ["--native=all"] where it is unnamed frames of a stripped
    libpython (python-build-standalone), which the clean default leaves out."""
    zc = zlib_c(python)
    return [] if zc("deflate") and not zc("[libpython") else ["--native=all"]


@pytest.mark.parametrize("python", PYTHONS)
def test_flamegraph_formats(spawn, python, tmp_path, speedscope_validator):
    t = profiled(spawn, python)
    main, spinner = t.ready["main"], t.ready["spinner"]
    # zlib's deflate by name, unless this interpreter has zlib built into a stripped libpython
    # (python-build-standalone): an unnamed frame of libpython there, which the clean default
    # leaves out with CPython's own frames: --native=all keeps it.
    zc = zlib_c(python)
    every = every_frame(python)

    # While sampling goes on, then stopped: the same data from then on.
    r = probing("-p", t.pid, "flamegraph", "--format", "folded", check=True)
    assert "native_share (" in r.stdout
    probing("-p", t.pid, "perf", "--stop", check=True)
    # Folded: the Python caller comes before (above) the C function, with the largest share.
    r = probing("-p", t.pid, "flamegraph", "--format", "folded", *every, check=True)
    stacks = parse_folded(r.stdout)
    assert stacks and all(n > 0 for _, n in stacks)

    def c_below(f):  # the C function called by native_share, after it in the stack
        at = [i for i, x in enumerate(f) if x.startswith("native_share (")]
        return bool(at) and any(zc(x) for x in f[at[0] + 1:])
    both = [(f, n) for f, n in stacks if c_below(f)]
    assert both, r.stdout[:3000]
    if zc("deflate") and not zc("[libpython"):  # named: the Python caller before deflate
        for f, _ in both:
            assert [i for i, x in enumerate(f) if x.startswith("native_share (")][0] < \
                f.index("deflate")
    native = share(stacks, lambda f: has(f, "native_share ("))
    for other in ("python_share (", "spin_python ("):
        assert native > share(stacks, lambda f, o=other: has(f, o)), (other, native)
    assert share(stacks, c_below) > 0.3
    total = sum(n for _, n in stacks)

    # SVG: well-formed, icicle (callers above), widths proportional, escaped, self-contained.
    svg = tmp_path / "cpu.svg"
    r = probing("-p", t.pid, "flamegraph", "-o", svg, *every, check=True)
    assert re.match(r"^wrote %s: %d samples, \d+ stacks, 2 threads$" % (re.escape(str(svg)), total),
                    r.stdout.strip()), r.stdout
    text = svg.read_text()
    # Self-contained: no URL but the SVG and XHTML namespace names (the search box).
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "").replace(
        'xmlns="http://www.w3.org/1999/xhtml"', "")
    assert "window.prompt" not in text, "dialogs are blocked in VS Code webviews"
    assert "https://" not in text
    root = ET.fromstring(text)
    assert int(root.get("data-samples")) == total
    frames = frames_of(root)
    by_name = {}
    for fr in frames:
        by_name.setdefault(fr[0], []).append(fr)
    (allf,) = by_name["all"]
    assert allf[3] == 0 and abs(allf[2] - 1.0) < 1e-9
    ns = max((fr for name, frs in by_name.items() if name.startswith("native_share (")
              for fr in frs), key=lambda fr: fr[2])
    # The same name may sit under several callers (or lines): its frames together are as wide
    # as the stacks holding it.
    ns_samples = sum(n for f, n in stacks if ns[0] in f)
    assert abs(sum(fr[2] for fr in by_name[ns[0]]) - ns_samples / total) < 1e-6
    assert abs(float(ns[5].get("width")) - 1180 * ns[2]) < 0.02
    assert re.search(r"\n(\d+) samples? \(", ns[4].find(SVG_NS + "title").text)
    n_title = int(re.search(r"\n(\d+) samples? \(", ns[4].find(SVG_NS + "title").text).group(1))
    assert abs(n_title / total - ns[2]) < 1e-6
    # zlib's C below native_share (deflate, or libpython's unnamed frame where zlib is built in:
    # those also sit above, at the root, so only the ones deeper than native_share count there).
    named = not zc("[libpython")
    deflates = [fr for name, frs in by_name.items() if zc(name) for fr in frs
                if ns[1] <= fr[1] < ns[1] + ns[2] and (named or fr[3] > ns[3])]
    assert deflates and all(d[3] > ns[3] and float(d[5].get("y")) > float(ns[5].get("y"))
                            for d in deflates)
    assert "py" in ns[4].get("class").split() and "native" in deflates[0][4].get("class").split()

    # In Chromium: the search finds deflate (native_share where zlib's C has no name) with the
    # share the folded stacks give.
    if named:
        term, pred, title = "%5Edeflate%24", (lambda f: "deflate" in f), "deflate\n"  # ^deflate$
    else:
        term, pred, title = ("%5Enative_share", lambda f: has(f, "native_share ("),
                             "native_share (")
    dom = browser_dom(svg, "search=" + term, tmp_path)
    want = 100 * share(stacks, pred)
    assert abs(float(dom.get("data-matched")) - want) < 1.0, (dom.get("data-matched"), want)
    matched = [e for e in dom.iter(SVG_NS + "text") if e.get("id") == "matched"][0].text
    assert matched.startswith("Matched: "), matched
    hits = [g for g in dom.iter(SVG_NS + "g") if "hit" in (g.get("class") or "").split()]
    assert hits and all(g.find(SVG_NS + "title").text.startswith(title) for g in hits)
    dom = browser_dom(svg, "search=no_such_function_xyz", tmp_path)
    assert dom.get("data-matched") == "0"
    # Zoom: the widest native_share frame fills the width; frames beside it are hidden.
    dom = browser_dom(svg, "zoom=native_share", tmp_path)
    assert dom.get("data-zoomed").startswith("native_share (")
    for name, x, w, d, g, rect in frames_of(dom):
        if name == dom.get("data-zoomed") and abs(w - ns[2]) < 1e-9:
            assert abs(float(rect.get("width")) - 1180) < 0.05
        if name.startswith("spin_python ("):
            assert "display: none" in (g.get("style") or ""), name

    # speedscope: speedscope's own schema; one profile per thread; same samples.
    ss = tmp_path / "cpu.speedscope.json"
    probing("-p", t.pid, "flamegraph", "-o", ss, check=True)
    speedscope_validator(ss)
    doc = json.loads(ss.read_text())
    names = [p["name"] for p in doc["profiles"]]
    assert any(n.startswith("Thread %d " % main) for n in names), names
    assert any(n.startswith("Thread %d " % spinner) for n in names), names
    assert sum(sum(p["weights"]) for p in doc["profiles"]) == total
    fr = doc["shared"]["frames"]
    ns_frame = [f for f in fr if f["name"] == "native_share"]
    assert ns_frame and ns_frame[0]["file"].endswith("flamehot.py") and ns_frame[0]["line"] > 0
    r = probing("-p", t.pid, "flamegraph", "--format", "speedscope", check=True)
    assert json.loads(r.stdout)["shared"]["frames"]
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_flamegraph_filters_and_paging(spawn, python, tmp_path):
    t = profiled(spawn, python, seconds=2)
    spinner = t.ready["spinner"]
    probing("-p", t.pid, "perf", "--stop", check=True)
    full = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", check=True).stdout)
    total = sum(n for _, n in full)
    # Stopped profiles still render; a tiny query.max_rows cuts nothing (pages follow).
    probing("-p", t.pid, "config", "query.max_rows=3", check=True)
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", check=True)
    assert sorted(parse_folded(r.stdout)) == sorted(full)
    # A byte limit under the whole profile but above its longest stack (deeper native stacks,
    # e.g. under make asan, have longer ones) makes the pages follow by bytes too.
    longest = max(len(";".join(f)) for f, _ in full)
    limit = max(1024, 2 * longest + 256)
    assert limit < sum(len(";".join(f)) + 8 for f, _ in full), "too small a profile to page"
    probing("-p", t.pid, "config", "query.max_bytes=%d" % limit, check=True)
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", check=True)
    assert sorted(parse_folded(r.stdout)) == sorted(full)
    probing("-p", t.pid, "config", "query.max_rows=10000", check=True)
    probing("-p", t.pid, "config", "query.max_bytes=16777216", check=True)
    # --thread: only the spinner's stacks.
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", "--thread", spinner, check=True)
    th = parse_folded(r.stdout)
    assert th and all(not has(f, "native_share (") for f, _ in th)
    assert any(has(f, "spin_python (") for f, _ in th)
    assert sum(n for _, n in th) < total
    # --since: the last half second holds fewer samples than the whole profile.
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", "--since", "0.5", check=True)
    assert 0 < sum(n for _, n in parse_folded(r.stdout)) < total
    # --mode: the profile is cpu only.
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", "--mode", "cpu", check=True)
    assert sorted(parse_folded(r.stdout)) == sorted(full)
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", "--mode", "wall")
    assert r.returncode == 1 and r.stdout == ""
    assert re.match(r"^probing: error: flamegraph: no samples in mode wall: the profile has "
                    r"\d+ cpu samples over [\d.]+ s, of threads (\d+), (\d+)\n$", r.stderr), r.stderr
    r = probing("-p", t.pid, "flamegraph", "--thread", "1", "-f", "folded")
    assert r.returncode == 1 and "no samples for thread 1: " in r.stderr, r.stderr
    assert "%d, %d\n" % tuple(sorted((t.ready["main"], spinner))) in r.stderr, r.stderr
    r = probing("-p", t.pid, "flamegraph", "-o", "/nonexistent/dir/x.svg")
    assert r.returncode == 1 and r.stderr == ("probing: error: flamegraph: cannot write "
                                              "/nonexistent/dir/x.svg: No such file or directory\n")
    # An SVG asked for on a terminal goes to flamegraph-PID.svg in the current directory.
    master, slave = os.openpty()
    try:
        r = subprocess.run([CLI, "-p", str(t.pid), "flamegraph"], stdout=slave,
                           stderr=subprocess.PIPE, cwd=tmp_path, timeout=60)
        os.close(slave)
        out = os.read(master, 4096).decode()
    finally:
        os.close(master)
    assert r.returncode == 0 and out.startswith("wrote flamegraph-%d.svg: %d samples" % (
        t.pid, total)), (out, r.stderr)
    ET.parse(tmp_path / ("flamegraph-%d.svg" % t.pid))
    # --title and the default SVG on stdout.
    r = probing("-p", t.pid, "flamegraph", "--title", "A <b> & c", "--width", "800", check=True)
    root = ET.fromstring(r.stdout)
    assert root.get("width") == "800"
    assert [e for e in root.iter(SVG_NS + "text") if e.get("id") == "title"][0].text == "A <b> & c"
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_flamegraph_says_what_the_sampler_dropped(spawn, python, tmp_path):
    t = spawn(python, SAMPLE)
    probing("-p", t.pid, "config", "perf.max_samples=1000", check=True)
    probing("-p", t.pid, "perf", "--cc", "--rate", "1000", check=True)
    deadline = time.time() + 60
    while int(probing("-p", t.pid, "query", "SELECT COUNT(*) FROM perf.samples", "-f", "csv",
                      check=True).stdout.split()[1]) < 1000:
        assert time.time() < deadline, "perf --cc kept fewer than 1000 samples in 60 s"
        time.sleep(0.2)
    time.sleep(1)  # samples past the limit are lost
    probing("-p", t.pid, "perf", "--stop", check=True)
    r = probing("-p", t.pid, "flamegraph", "-f", "folded", check=True)
    total = sum(n for _, n in parse_folded(r.stdout))
    # 999 was seen twice under heavy load (never reproduced alone): say what the tables held.
    assert total == 1000, (total, r.stderr, probing("-p", t.pid, "query", "SELECT COUNT(*), COUNT(st.stack_id), "
                           "COUNT(st.folded) FROM perf.samples s LEFT JOIN perf.stacks st ON "
                           "st.stack_id = s.stack_id", "-f", "csv").stdout, r.stdout[-3000:])
    m = re.match(r"^probing: note: the sampler dropped (\d+) samples \(perf.max_samples reached, "
                 r"or its buffers were full\): the profile holds the 1000 it kept\n$", r.stderr)
    assert m and int(m.group(1)) > 0, r.stderr
    t.check_output_clean()


@pytest.mark.parametrize("python", HOST_PYTHONS[-1:])
def test_flamegraph_errors(spawn, python, tmp_path):
    t = spawn(python, "threads.py")
    r = probing("-p", t.pid, "flamegraph")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == ("probing: error: flamegraph: no samples in process %d: run 'probing -p "
                        "%d perf --cc' first\n" % (t.pid, t.pid))
    for args, msg in ((["--format", "png"], "--format 'png': expected svg, folded, speedscope, "
                                            "chrometrace or pprof"),
                      (["--mode", "idle"], "--mode 'idle': expected cpu or wall"),
                      (["--since", "-1"], "--since '-1': expected a number of seconds > 0"),
                      (["--thread", "x"], "--thread 'x': expected a native thread id"),
                      (["--bogus"], "unknown option '--bogus'"),
                      (["extra"], "unexpected argument 'extra'")):
        r = probing("-p", t.pid, "flamegraph", *args)
        assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    r = probing("flamegraph", "--help", check=True)
    assert "--format" in r.stdout and "--since" in r.stdout
    t.assert_responsive()
    t.check_output_clean()


PY_FRAME = re.compile(r"^\S.* \(.*:\d+\)$")  # func (file:line)


@pytest.mark.parametrize("python", PYTHONS)
def test_flamegraph_clean_by_default(spawn, python, tmp_path):
    """Issue 38: the profile shows Python frames with the native frames of extensions and
    libraries where they were called; CPython's own frames (eval loop, call machinery, unnamed
    interpreter frames) and the start-up at the root are left out, in every output and in
    perf.stacks.folded, with the rule of debug --dump --native; --native=all (folded_all) keeps
    them."""
    t = profiled(spawn, python)
    probing("-p", t.pid, "perf", "--stop", check=True)
    clean = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", check=True).stdout)
    full = parse_folded(probing("-p", t.pid, "flamegraph", "-f", "folded", "--native=all",
                                check=True).stdout)
    assert sum(n for _, n in clean) == sum(n for _, n in full) > 0
    with_py = [f for f, _ in clean if any(PY_FRAME.match(x) for x in f)]
    assert with_py
    for f in with_py:
        # the root is a Python frame: no _start, __libc_start_main, [python3], clone3 above it
        assert PY_FRAME.match(f[0]), f
        # nothing between two Python frames (flamehot.py's calls are Python to Python)
        py = [i for i, x in enumerate(f) if PY_FRAME.match(x)]
        assert py == list(range(py[0], py[-1] + 1)), f
        for x in f:
            assert not re.match(r"^(_?Py[A-Z_]|\[(lib)?python|_PyEval|cfunction_|method_vectorcall)",
                                x) or x.startswith("PyThread_"), (x, f)
    # --native=all: the start-up at the root and CPython's own frames are there
    roots = {f[0] for f, _ in full if any(PY_FRAME.match(x) for x in f)}
    assert roots and not any(PY_FRAME.match(r) for r in roots), roots
    assert any(re.match(r"^(_?Py[A-Z_]|\[(lib)?python)", x) for f, _ in full for x in f), full[:3]
    # SQL: folded is the clean view, folded_all everything; perf.frames.collapsed says which
    rows = json.loads(probing("-p", t.pid, "query", "-f", "json",
                              "SELECT stack_id, folded, folded_all, nframes FROM perf.stacks",
                              check=True).stdout)
    assert rows and all(len(r["folded_all"].split(";")) == r["nframes"] for r in rows)
    assert any(r["folded"] != r["folded_all"] for r in rows)
    sid = next(r for r in rows if r["folded"] != r["folded_all"])
    fr = json.loads(probing("-p", t.pid, "query", "-f", "json",
                            "SELECT name, collapsed FROM perf.frames WHERE stack_id = %d "
                            "ORDER BY depth DESC" % sid["stack_id"], check=True).stdout)
    assert ";".join(x["name"] for x in fr if not x["collapsed"]) == sid["folded"]
    assert ";".join(x["name"] for x in fr) == sid["folded_all"]
    # The same in SVG and speedscope: no start-up frame under "all"
    svg = tmp_path / "clean.svg"
    probing("-p", t.pid, "flamegraph", "-o", svg, check=True)
    names = {fr[0] for fr in frames_of(ET.fromstring(svg.read_text()))}
    assert not names & {"_start", "__libc_start_main", "clone3", "Py_BytesMain", "Py_RunMain"}
    ss = tmp_path / "clean.speedscope.json"
    probing("-p", t.pid, "flamegraph", "-o", ss, check=True)
    ssn = {f["name"] for f in json.loads(ss.read_text())["shared"]["frames"]}
    assert not ssn & {"_start", "__libc_start_main", "clone3", "Py_BytesMain", "Py_RunMain"}
    r = probing("-p", t.pid, "flamegraph", "--native=some")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--native=all" in r.stderr
    t.check_output_clean()
