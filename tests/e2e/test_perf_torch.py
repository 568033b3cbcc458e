# SPDX-License-Identifier: MIT
"""perf --torch against real PyTorch jobs (Debian's torch on /usr/bin/python3, CPU): a training
sample attached mid-training (every module of named_modules() in both stages, rising steps,
positive nesting durations, loss, the Chrome trace's structure, every documented query of
docs/torch.md), an inference sample (top-level steps), --every sampling, the torch 2.x step
hook and CUDA code paths through fakes in the sample, stop removing every hook and patch, and
the errors. The pyenv interpreters have no torch: these tests run on /usr/bin/python3 (torch
1.13) and on the Debian sid root's python3.14 with its python3-torch (2.x), in a container
(sidroot.py)."""
import json
import os
import re
import subprocess
import time

import pytest

import sidroot
from conftest import BUILD, ROOT, SID_PYTHONS, bp, probing, sanitizer_env
from rollups import check_rollup


def fd_links(pid):
    """What the target's descriptors name (one closed meanwhile is left out)."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return out


def _torch_pythons():
    """Debian 12's python3 with torch 1.13, then the sid root's python3.14 with torch 2.x (its
    python3-torch is built for sid's default python3): each one where it has torch."""
    found = []
    if os.path.exists("/usr/bin/python3") and subprocess.run(
            ["/usr/bin/python3", "-c", "import torch"], capture_output=True,
            timeout=120).returncode == 0:
        found.append(pytest.param("/usr/bin/python3", id="torch1-debian"))
    r = sidroot.root()
    if r and any(p.id == "3.14" for p in SID_PYTHONS) and os.path.isdir(
            os.path.join(r, "usr/lib/python3/dist-packages/torch")):
        found.append(pytest.param(sidroot.PREFIX + "/usr/bin/python3.14", id="torch2-3.14"))
    return found


TORCH_PYTHONS = _torch_pythons()
PY_ID = {p.values[0]: p.id for p in TORCH_PYTHONS}
pytestmark = [pytest.mark.skipif(not TORCH_PYTHONS, reason="no interpreter with torch"),
              pytest.mark.parametrize("PY", TORCH_PYTHONS),
              pytest.mark.serial]  # overheads and timings of training steps

# The hook dictionaries and patch points perf --torch touches, as the target sees them.
STATE = ("import torch, json, sys; M = torch.nn.modules.module; O = sys.modules['torch.optim.optimizer']; "
         "print(json.dumps([len(M._global_forward_pre_hooks), len(M._global_forward_hooks), "
         "len(M._global_backward_hooks), M._global_is_full_backward_hook, "
         "id(O.Optimizer.__dict__['_optimizer_step_code']), "
         "len(getattr(O, '_global_optimizer_post_hooks', ())), "
         "torch.optim.AdamW.step.__qualname__]))")


def eval_json(pid, code):
    r = probing("-p", pid, "eval", code, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def query(pid, sql):
    r = probing("-p", pid, "query", sql, "--format", "json", check=True)
    return json.loads(r.stdout)


def module_names(pid):
    """named_modules() of the sample's model as perf --torch names them: the root by its class
    name; containers that are never called (ModuleList) left out."""
    return set(eval_json(pid, "import json; print(json.dumps([n or type(m).__name__ for n, m in "
                              "MODEL.named_modules() if type(m).__name__ != 'ModuleList']))"))


def wait_steps(pid, n, cond="traced = 1", timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = query(pid, "SELECT step FROM python.torch_steps WHERE %s ORDER BY step" % cond)
        if len(rows) >= n:
            return [r["step"] for r in rows]
        time.sleep(0.2)
    raise AssertionError("fewer than %d steps (%s) in %d s" % (n, cond, timeout))


def settle(PY, t, before):
    """After a stop during training with torch 2.x's optimizer hook (real, or the sample's
    stand-in), that hook and the warning filter leave at the job's next optimizer step (a
    backward of a forward run with the module hooks can follow the stop)."""
    deadline = time.time() + 60
    while time.time() < deadline and eval_json(t.pid, STATE) != before:
        time.sleep(0.2)


def check_nesting(rows, stage):
    """A parent's call covers its children's calls of the same step."""
    spans = {}
    for r in rows:
        if r["stage"] == stage:
            spans.setdefault(r["module"], []).append(
                (r["time_offset"] - r["duration"], r["time_offset"]))
    checked = 0
    for parent, ps in spans.items():
        for child, cs in spans.items():
            if not child.startswith(parent + ".") or len(ps) != 1:
                continue
            (p0, p1), = ps
            for c0, c1 in cs:
                assert p0 - 1e-6 <= c0 and c1 <= p1 + 1e-6, (stage, parent, child, ps, cs)
                checked += 1
    return checked


def doc_queries():
    with open(os.path.join(ROOT, "docs", "torch.md")) as f:
        return re.findall(r"```sql\n(.*?)```", f.read(), re.S)


def test_train_trace_docs_and_stop(PY, spawn, tmp_path):
    t = spawn(PY, "torch_train.py")
    before = eval_json(t.pid, STATE)
    names = module_names(t.pid)
    assert "TinyTransformer" in names and "blocks.1.attn.qkv" in names and len(names) > 20
    out = tmp_path / "trace.json"
    r = probing("-p", t.pid, "perf", "--torch", "--every", "1", "--trace", out, "--steps", "3",
                check=True, timeout=120)
    assert "tracing torch.nn modules in process %d" % t.pid in r.stdout, r.stdout
    # torch 2.x has a global optimizer step hook; 1.13's Optimizer._optimizer_step_code is patched.
    mode = "register_optimizer_step_post_hook" if "torch2" in PY_ID[PY] else "Optimizer._optimizer_step_code"
    assert mode in r.stdout and "process RSS" in r.stdout, r.stdout
    assert re.search(r"wrote .*trace.json: 3 traced steps \(\d+ to \d+\), \d+ module calls",
                     r.stdout), r.stdout
    # The table: every module in both stages, in each of the steps written.
    steps = wait_steps(t.pid, 4)
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    srows = query(t.pid, "SELECT * FROM python.torch_steps ORDER BY step")
    assert [s["step"] for s in srows] == sorted(s["step"] for s in srows)
    # The first step may begin mid-iteration (at the loss module, when attached mid-forward).
    assert all(s["detection"] == "optimizer" for s in srows[1:])
    assert all(s["duration"] > 0 and s["modules"] > 20 and s["loss"] > 0 for s in srows[1:]), srows
    assert [s["start_time"] for s in srows] == sorted(s["start_time"] for s in srows)
    for step in steps[1:4]:
        rows = query(t.pid, "SELECT * FROM python.torch_trace WHERE step = %d ORDER BY seq" % step)
        for stage in ("forward_pre", "forward_post", "backward_pre", "backward_post"):
            got = {r["module"] for r in rows if r["stage"] == stage}
            assert names <= got, (stage, names - got)
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
        assert [r["time_offset"] for r in rows] == sorted(r["time_offset"] for r in rows)
        for r in rows:
            assert r["rss"] > 0 and r["allocated"] == 0 and r["cached"] == 0 and r["rank"] is None
            if r["stage"] == "forward_post":
                assert r["duration"] > 0, r
            elif r["stage"] == "backward_post":
                assert r["duration"] > 0 or r["module_type"] == "Embedding", r
            else:
                assert r["duration"] is None
        assert check_nesting(rows, "forward_post") > 20
        assert check_nesting(rows, "backward_post") > 20
        # The outermost model's backward covers the whole backward pass.
        root = [r for r in rows if r["module"] == "TinyTransformer" and r["stage"] == "backward_post"]
        heads = [r for r in rows if r["module"] == "head" and r["stage"] == "backward_post"]
        assert root[0]["duration"] > heads[0]["duration"]
    # The Chrome trace.
    d = json.loads(out.read_text())
    ev = d["traceEvents"]
    assert d["displayTimeUnit"] == "ms" and d["otherData"]["pid"] == t.pid
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in ev)
    threads = {e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    xs = [e for e in ev if e["ph"] == "X"]
    assert len([e for e in xs if e["cat"] == "step"]) == 3
    assert all(e["tid"] in threads and e["dur"] >= 0 and e["pid"] == t.pid for e in xs)
    mods = [e for e in xs if e["cat"] in ("forward", "backward")]
    assert names <= {e["name"] for e in mods if e["cat"] == "forward"}
    assert names <= {e["name"] for e in mods if e["cat"] == "backward"}
    assert all({"type", "step", "allocated", "rss"} <= set(e["args"]) for e in mods)
    counters = [e for e in ev if e["ph"] == "C"]
    assert counters and all(e["name"] == "memory" and e["args"]["rss"] > 0 for e in counters)
    # Nesting within a track: the second step's forward of blocks.0 holds blocks.0.attn's.
    first = sorted({e["args"]["step"] for e in mods})[1]
    b0 = [e for e in mods if e["name"] == "blocks.0" and e["cat"] == "forward" and e["args"]["step"] == first][0]
    at = [e for e in mods if e["name"] == "blocks.0.attn" and e["cat"] == "forward" and e["args"]["step"] == first][0]
    assert b0["tid"] == at["tid"] and b0["ts"] <= at["ts"] and at["ts"] + at["dur"] <= b0["ts"] + b0["dur"] + 0.01
    # Every documented query works as written.
    qs = doc_queries()
    assert len(qs) >= 5
    for q in qs:
        r = probing("-p", t.pid, "query", q, check=True)
        assert "rows)" in r.stdout or "(1 row)" in r.stdout, (q, r.stdout)
    # Stop: hooks and patch gone, counting stops, the tables stay.
    during = eval_json(t.pid, STATE)
    if "torch2" in PY_ID[PY]:
        assert during[5] == before[5] + 1 and during[4] == before[4]  # the hook, no patch
    else:
        assert during[4] != before[4]
    # Nothing of ours in the target's modules or __main__ beyond the hooks themselves.
    assert eval_json(t.pid, "import sys, json; print(json.dumps([k for k in list(sys.modules) + "
                            "list(vars(sys.modules['__main__'])) if 'probing' in k.lower()]))") == []
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert re.search(r"perf --torch: stopped after \d+ steps \(\d+ traced\)", r.stdout), r.stdout
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    n = len(query(t.pid, "SELECT step FROM python.torch_steps"))
    t.wait_line(r"^step 50$", timeout=60)
    time.sleep(0.5)
    assert len(query(t.pid, "SELECT step FROM python.torch_steps")) == n
    r = probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
    assert "nothing to stop: it was not running" in r.stdout
    t.check_output_clean()


def test_every_and_restart(PY, spawn):
    t = spawn(PY, "torch_train.py")
    r = probing("-p", t.pid, "perf", "--torch", "--every", "3", "--json", check=True)
    d = json.loads(r.stdout)
    assert d["started"] is True and d["every"] == 3 and d["running"] is True
    wait_steps(t.pid, 7, "1")
    rows = query(t.pid, "SELECT step, traced, modules FROM python.torch_steps ORDER BY step")
    for s in rows:
        assert s["traced"] == (1 if (s["step"] - 1) % 3 == 0 else 0), rows
        assert (s["modules"] > 0) == (s["traced"] == 1), rows
    traced = {x["step"] for x in query(t.pid, "SELECT DISTINCT step FROM python.torch_trace")}
    assert traced and all((s - 1) % 3 == 0 for s in traced), traced
    # Starting again changes the sampling of the running tracer.
    r = probing("-p", t.pid, "perf", "--torch", "--every", "2", check=True)
    assert re.search(r"already tracing process %d \(step \d+, \d+ traced\): now one step in 2"
                     % t.pid, r.stdout), r.stdout
    # --trace waiting for a traced step that does not come in time fails and says so.
    probing("-p", t.pid, "perf", "--torch", "--every", "1000000", check=True)
    r = probing("-p", t.pid, "perf", "--torch", "--trace", "/dev/null", "--timeout", "1")
    assert r.returncode == 1 and "no traced step ended within 1 s" in r.stderr, r.stderr
    probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
    # Started again, steps go on rising: no step number repeats in the tables.
    last = query(t.pid, "SELECT MAX(step) AS m FROM python.torch_steps")[0]["m"]
    probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    wait_steps(t.pid, 2, "step > %d" % last)
    rows = query(t.pid, "SELECT step, COUNT(*) AS n FROM python.torch_steps GROUP BY step "
                        "HAVING n > 1")
    assert rows == [], rows
    assert query(t.pid, "SELECT MIN(step) AS m FROM python.torch_trace WHERE ts > "
                        "(SELECT MAX(ts) FROM python.torch_steps WHERE step = %d)" % last)[0]["m"] > last
    probing("-p", t.pid, "perf", "--stop", check=True)
    t.check_output_clean()


def test_rollups_equal_group_by(PY, spawn):
    """python.torch_trace_by_module_stage and _by_step hold what GROUP BY module, stage / step
    gives over python.torch_trace: while rows arrive, and after history.max_rows evicted most
    of them (about 100 rows per traced step here)."""
    t = spawn(PY, "torch_train.py")
    probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    wait_steps(t.pid, 3)
    probing("-p", t.pid, "perf", "--stop", check=True)
    by_module = check_rollup(t.pid, "python.torch_trace", ["module", "stage"],
                             ["duration", "allocated", "max_allocated"])
    assert by_module >= 4 * 20, by_module
    assert check_rollup(t.pid, "python.torch_trace", ["step"],
                        ["duration", "allocated", "max_allocated", "rss"]) >= 3
    n0 = query(t.pid, "SELECT COUNT(*) AS n, MIN(step) AS lo, MAX(step) AS hi "
                      "FROM python.torch_trace")[0]
    assert n0["n"] > 150, n0
    probing("-p", t.pid, "config", "history.max_rows=150", check=True)
    probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    wait_steps(t.pid, 2, "traced = 1 AND step > %d" % n0["hi"])
    probing("-p", t.pid, "perf", "--stop", check=True)
    n = query(t.pid, "SELECT COUNT(*) AS n, MIN(step) AS lo FROM python.torch_trace")[0]
    assert n["n"] <= 150 and n["lo"] > n0["lo"], (n, n0)  # the oldest steps went
    assert check_rollup(t.pid, "python.torch_trace", ["module", "stage"],
                        ["duration", "allocated", "max_allocated"]) >= 20
    assert check_rollup(t.pid, "python.torch_trace", ["step"],
                        ["duration", "allocated", "max_allocated", "rss"]) >= 1
    t.check_output_clean()


def test_inference_top_level_steps(PY, spawn):
    t = spawn(PY, "torch_infer.py")
    before = eval_json(t.pid, STATE)
    names = module_names(t.pid)
    r = probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    assert "steps: top-level module calls" in r.stdout
    steps = wait_steps(t.pid, 3)
    srows = query(t.pid, "SELECT * FROM python.torch_steps ORDER BY step")
    assert all(s["detection"] == "top-level" and s["loss"] is None for s in srows)
    # A step is one request: shorter than the pause between two.
    assert all(0 < s["duration"] for s in srows)
    rows = query(t.pid, "SELECT * FROM python.torch_trace WHERE step = %d" % steps[1])
    for stage in ("forward_pre", "forward_post"):
        assert names <= {r["module"] for r in rows if r["stage"] == stage}
    assert not [r for r in rows if r["stage"].startswith("backward")]
    assert check_nesting(rows, "forward_post") > 20
    probing("-p", t.pid, "perf", "--stop", check=True)
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    t.check_output_clean()


HOOKS = ("import json; M = torch.nn.modules.module; print(json.dumps([len(M._global_forward_pre_hooks), "
         "len(M._global_forward_hooks), len(MODEL._forward_pre_hooks), len(MODEL._forward_hooks)]))")


def test_inference_untraced_steps_without_global_hooks(PY, spawn):
    """Without an optimizer, between traced steps only the top-level module has (instance)
    hooks: a global module hook would send every module down torch's slower call path. The
    traced steps still see every module, and the untraced ones are still counted."""
    t = spawn(PY, "torch_infer.py")
    before = eval_json(t.pid, STATE)
    names = module_names(t.pid)
    probing("-p", t.pid, "perf", "--torch", "--every", "1000", check=True)
    wait_steps(t.pid, 6, "1")  # step 1 traced, then untraced ones
    assert eval_json(t.pid, HOOKS) == [0, 0, 1, 1]
    assert len(query(t.pid, "SELECT step FROM python.torch_steps WHERE traced = 1")) == 1
    # A traced step again: the root's hook puts the global ones in for that step only.
    probing("-p", t.pid, "perf", "--torch", "--every", "2", check=True)
    steps = wait_steps(t.pid, 3)
    rows = query(t.pid, "SELECT * FROM python.torch_trace WHERE step = %d" % steps[1])
    for stage in ("forward_pre", "forward_post"):
        assert names <= {r["module"] for r in rows if r["stage"] == stage}, (stage, rows)
    assert check_nesting(rows, "forward_post") > 20
    probing("-p", t.pid, "perf", "--torch", "--every", "1000", check=True)
    last = query(t.pid, "SELECT MAX(step) AS m FROM python.torch_steps")[0]["m"]
    wait_steps(t.pid, 3, "step > %d" % (last + 1))
    assert eval_json(t.pid, HOOKS) == [0, 0, 1, 1]
    probing("-p", t.pid, "perf", "--stop", check=True)
    assert eval_json(t.pid, HOOKS) == [0, 0, 0, 0]
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    t.check_output_clean()


def test_torch2_step_hooks_and_cuda_fakes(PY, spawn, tmp_path):
    """The torch 2.x path (a global optimizer step post hook) and the CUDA memory path, chosen
    by feature detection, with the sample's stand-ins for what torch 1.13 on a CPU lacks."""
    t = spawn(PY, "torch_train.py", args=("--fake-cuda", "--fake-step-hooks"))
    before = eval_json(t.pid, STATE)
    out = tmp_path / "cuda.json"
    r = probing("-p", t.pid, "perf", "--torch", "--every", "1", "--trace", out, "--steps", "2",
                check=True, timeout=120)
    assert "register_optimizer_step_post_hook" in r.stdout and "memory: CUDA" in r.stdout, r.stdout
    during = eval_json(t.pid, STATE)
    assert during[5] == 1 and during[4] == before[4]  # the hook, and no patch
    rows = query(t.pid, "SELECT * FROM python.torch_trace WHERE stage = 'forward_post'")
    assert rows and all(r["allocated"] > 1 << 20 and r["max_allocated"] >= r["allocated"] and
                        r["cached"] > 0 and r["max_cached"] >= r["cached"] for r in rows)
    d = json.loads(out.read_text())
    cs = [e for e in d["traceEvents"] if e["ph"] == "C"]
    assert cs and all(e["args"]["cuda_allocated"] > 0 and "cuda_cached" in e["args"] for e in cs)
    assert all(s["detection"] == "optimizer" for s in
               query(t.pid, "SELECT detection FROM python.torch_steps WHERE step > 1"))
    probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    t.check_output_clean()


def test_stop_with_a_job_hook_after_ours(PY, spawn, tmp_path):
    """torch 2.x calls the global optimizer post hooks from a loop over the live dict: a tracer
    taking its hook out from inside that loop, with the job's own hook after it, made the job's
    optimizer step raise "OrderedDict mutated during iteration". The hook stays until no loop
    can be iterating the dict, and goes at the next perf request."""
    flag = tmp_path / "own-hook"
    args = ("--late-post-hook", str(flag))
    if PY_ID[PY] == "torch1-debian":
        args += ("--fake-step-hooks",)  # torch 1.13 has no global step hooks: the stand-in
    t = spawn(PY, "torch_train.py", args=args)
    before = eval_json(t.pid, STATE)
    probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    wait_steps(t.pid, 1)
    flag.write_text("")
    deadline = time.time() + 60
    while eval_json(t.pid, STATE)[5] != before[5] + 2:  # ours, then the job's
        assert time.time() < deadline, "the job did not register its hook"
        time.sleep(0.2)
    probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
    deadline = time.time() + 60
    while True:  # the next perf request takes the tracer's hook out
        probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
        state = eval_json(t.pid, STATE)
        if state[5] == before[5] + 1 or time.time() > deadline:
            break
        time.sleep(0.2)
    assert state[:5] == before[:5] and state[5] == before[5] + 1, (before, state)
    n = len(query(t.pid, "SELECT step FROM python.torch_steps"))
    time.sleep(1)
    assert t.proc.poll() is None, t.errors()
    t.check_output_clean()
    assert n == len(query(t.pid, "SELECT step FROM python.torch_steps"))


def test_compiled_model(PY, spawn):
    """A model trained through torch.compile (torch 2.x; aot_eager: no C compiler in the sid
    root): tracing sees the compiled model's wrapper and its graph, not the layers inlined into
    it, says so, changes nothing the job computes, and puts everything back."""
    if PY_ID[PY] == "torch1-debian":
        r = subprocess.run(["/usr/bin/python3", "-c", "import torch; torch.compile"],
                           capture_output=True)
        assert r.returncode != 0  # torch 1.13 has no torch.compile: nothing to test there
        return
    t = spawn(PY, "torch_train.py", args=("--compile", "aot_eager"), wait_ready=False)
    t.ready = t.wait_line(r"^ready (\{.*\})$", timeout=300, json_group=True)  # compiling
    before = eval_json(t.pid, STATE)
    r = probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    assert "note: torch.compile is in use" in r.stdout, r.stdout
    steps = wait_steps(t.pid, 3)
    rows = query(t.pid, "SELECT module, stage FROM python.torch_trace WHERE step = %d" % steps[1])
    seen = {(x["module"], x["stage"]) for x in rows}
    for m in ("OptimizedModule", "GraphModule", "CrossEntropyLoss"):
        for stage in ("forward_pre", "forward_post", "backward_pre", "backward_post"):
            assert (m, stage) in seen, (m, stage, sorted(seen))
    # What runs compiled has nothing of ours in its graph (dynamo sees the hooks return at
    # once), so no graph break and no layer rows.
    assert not any(x["module"].startswith("_orig_mod") for x in rows), sorted(seen)
    srows = query(t.pid, "SELECT detection, loss FROM python.torch_steps WHERE step > %d"
                  % steps[0])
    assert srows and all(x["detection"] == "optimizer" and x["loss"] > 0 for x in srows)
    probing("-p", t.pid, "perf", "--stop", check=True)
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    t.check_output_clean()


def test_errors_and_help(PY, spawn):
    t = spawn(PY, "threads.py")
    r = probing("-p", t.pid, "perf", "--torch")
    assert r.returncode == 1
    assert r.stderr.startswith("probing: error: perf --torch: torch is not imported in process %d: "
                               % t.pid), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = probing("-p", t.pid, "perf", "--torch", "--stop", check=True)
    assert "nothing to stop" in r.stdout
    for bad in (["--every", "0"], ["--every", "x"], ["--steps", "2"], ["--stop", "--every", "2"],
                ["--trace", "f", "--steps", "0"], ["extra"], ["--bogus"]):
        r = probing("-p", t.pid, "perf", "--torch", *bad)
        assert r.returncode == 2 and r.stderr.startswith("probing: error: perf --torch"), (bad, r.stderr)
    r = probing("perf", "--torch", "--help", check=True)
    for opt in ("--every N", "--trace FILE", "--steps N", "--timeout S", "--stop", "--json",
                "python.torch_trace", "python.torch_steps"):
        assert opt in r.stdout, opt
    t.assert_responsive()
    t.check_output_clean()


def test_bare_stop_stops_sampling_and_tracing(PY, spawn):
    """`perf --stop` with neither --cc nor --torch stops both profilers, one line each."""
    t = spawn(PY, "torch_train.py")
    before = eval_json(t.pid, STATE)
    probing("-p", t.pid, "perf", "--cc", check=True)
    probing("-p", t.pid, "perf", "--torch", "--every", "1", check=True)
    wait_steps(t.pid, 1)
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    lines = r.stdout.strip().splitlines()
    assert any(line.startswith("perf --cc: ") for line in lines), r.stdout
    assert any(re.match(r"perf --torch: stopped after \d+ steps", line) for line in lines), r.stdout
    settle(PY, t, before)
    assert eval_json(t.pid, STATE) == before
    with open("/proc/%d/timers" % t.pid) as f:
        assert not re.search(r"^signal: 27/", f.read(), re.M), "a SIGPROF timer is left"
    assert "anon_inode:[perf_event]" not in fd_links(t.pid), "a perf event is left"
    r = probing("-p", t.pid, "perf", "--stop", check=True)
    assert "nothing to stop" in r.stdout
    t.check_output_clean()


# ---- perf --comm: the collectives recorder, in a real torchrun job (gloo, CPU) ----

COMM_JOB = os.path.join(ROOT, "samples", "comm_job.py")
COMM_FUNCS = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
              "reduce_scatter_tensor", "broadcast", "barrier", "all_to_all", "send", "recv",
              "isend", "irecv", "batch_isend_irecv")
# Every attribute of torch.distributed and distributed_c10d the recorder may replace, and the
# point-to-point methods of ProcessGroup and Work.wait, by identity.
DIST_STATE = ("import json, torch.distributed as d; c = d.distributed_c10d; "
              "print(json.dumps([[m.__name__, n, id(getattr(m, n)), getattr(m, n).__code__.co_filename] "
              "for m in (d, c) for n in sorted(dir(m)) if callable(getattr(m, n, None)) and "
              "hasattr(getattr(m, n), '__code__')] + [[k.__name__, n, id(k.__dict__.get(n)), "
              "getattr(getattr(k.__dict__.get(n), '__code__', None), 'co_filename', None)] for k, ns "
              "in ((c.ProcessGroup, ('send', 'recv', 'recv_anysource')), (c.Work, ('wait',))) "
              "for n in ns]))")


# In the sid root, plain torch.distributed ranks (RANK, WORLD_SIZE, MASTER_*) started by a few
# lines of Python: Debian's torch 2.x is built without libuv, which its torchrun's stores demand
# (the ranks' own env:// store honours USE_LIBUV=0).
SID_LAUNCH = ("import os, subprocess, sys; n = int(sys.argv[1]); ps = [subprocess.Popen("
              "[sys.executable, sys.argv[3]], env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), "
              "WORLD_SIZE=str(n), MASTER_ADDR='127.0.0.1', MASTER_PORT=sys.argv[2], "
              "USE_LIBUV='0')) for r in range(n)]; sys.exit(max(p.wait() for p in ps))")


def comm_job(PY, tmp_path, env, nproc=2, script=COMM_JOB):
    """A job of samples/comm_job.py (or script): Debian's torchrun, or ranks started in a
    container of the sid root (sidroot.py)."""
    from test_cluster import Job, free_port, TORCHRUN  # noqa: E402 (the torchrun helpers)
    if sidroot.is_sid(PY):
        inside = sidroot.Inside(PY, tmp_path, BUILD)
        argv = inside.argv(["-c", SID_LAUNCH, str(nproc), str(free_port()), script])
        # make asan: the runtimes go in with the root's libraries and are preloaded there only
        # (inside.env), never into unshare and the set-up's commands out here
        return Job(argv, tmp_path / "job.out",
                   env=inside.env(dict(os.environ, **sanitizer_env(), **env)), want=nproc,
                   timeout=240)
    return Job([TORCHRUN, "--nproc_per_node", str(nproc), "--redirects", "1", "--tee", "1",
                "--master_port", str(free_port()), "--log_dir", str(tmp_path / "logs"),
                script], tmp_path / "job.out", env=env, want=nproc)


def wait_rows(pid, sql, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = query(pid, sql)
        if len(rows) >= n:
            return rows
        time.sleep(0.3)
    raise AssertionError("fewer than %d rows for %s: %s" % (n, sql, rows))


def test_comm_records_every_call_and_stop_puts_torch_back(PY, tmp_path):
    job = comm_job(PY, tmp_path, {"OPS": "1", "COLLECTIVES": "3", "COMPUTE_MS": "20",
                                  "REPORT": "5"})
    torch1 = "torch1" in PY_ID[PY]
    try:
        pids = {r["rank"]: r["pid"] for r in job.ready}
        p0 = pids[0]
        before = eval_json(p0, DIST_STATE)
        r = probing("-p", p0, "perf", "--comm", check=True)
        assert re.match(r"^perf --comm: recording torch.distributed calls in process %d \(torch "
                        r"%s\S*, rank 0\): a ring of 4096 records \(comm.max_records\)\n"
                        % (p0, "1\\.13" if torch1 else "2\\."), r.stdout), r.stdout
        calls = re.search(r"^  calls: (.*)$", r.stdout, re.M).group(1).split()
        assert set(COMM_FUNCS) <= set(calls), calls
        assert re.search(r"^  torch's flight recorder: none: torch 1\.13\S* has no flight recorder$"
                         if torch1 else r"^  torch's flight recorder: not enabled: torch 2\.\S+ has "
                         r"one for every backend, enabled with TORCH_FR_BUFFER_SIZE=N in the job's "
                         r"environment$", r.stdout, re.M), r.stdout
        again = json.loads(probing("-p", p0, "perf", "--comm", "--json", check=True).stdout)
        assert again["started"] is False and again["running"] is True and \
            again["maxRecords"] == 4096 and again["rank"] == 0, again
        during = eval_json(p0, DIST_STATE)
        # Collectives replaced in both modules; point-to-point calls seen at ProcessGroup's
        # methods (torch's isend/irecv stay the same objects: batch_isend_irecv compares them).
        replaced = {tuple(x[:2]) for x in during if x[3] == "<probing-comm>"}
        assert replaced >= {("torch.distributed", "all_reduce"), ("ProcessGroup", "send"),
                            ("ProcessGroup", "recv"), ("ProcessGroup", "recv_anysource"),
                            ("Work", "wait")}, replaced
        assert not {n for m, n in replaced if m.startswith("torch.distributed")} & \
            {"send", "recv", "isend", "irecv", "batch_isend_irecv"}, replaced
        wait_rows(p0, "SELECT * FROM torch.collectives WHERE op = 'irecv' AND state = 'done'", 4)
        rows = query(p0, "SELECT * FROM torch.collectives ORDER BY id")
        ops = {x["op"] for x in rows}
        assert {"all_reduce", "all_gather", "broadcast", "barrier", "send", "recv", "isend",
                "irecv", "reduce_scatter"} <= ops, ops
        line_ar, line_async = bp("comm_job.py", "all_reduce"), bp("comm_job.py", "async")
        ar = [x for x in rows if x["op"] == "all_reduce" and x["async"] == 0]
        assert ar and all(x["rank"] == 0 and x["pg"] == "0" and x["group_ranks"] == "0,1" and
                          x["group_size"] == 2 and x["seq_source"] == "torch" and
                          x["sizes"] == "1024" and x["dtype"] == "float32" and
                          x["bytes"] == 4096 and x["peer"] is None and
                          x["file"] == COMM_JOB and x["line"] == line_ar and
                          x["func"] == "main" and x["thread_id"] == p0 for x in ar), ar[:2]
        done = [x for x in rows if x["state"] == "done"]
        assert all(x["end_time"] >= x["start_time"] and
                   abs(x["duration_ms"] - (x["end_time"] - x["start_time"]) * 1e3) < 1e-3
                   for x in done)
        # Collectives that did not fail follow torch's sequence number, one apart on torch 1.13
        # (torch 2.x numbers the point-to-point calls between them too: rising).
        seqs = [x["seq"] for x in rows if x["seq_source"] == "torch" and x["state"] != "failed"]
        if torch1:
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
        else:
            assert seqs == sorted(set(seqs)) and len(seqs) > 10, seqs
        asy = [x for x in rows if x["op"] == "all_reduce" and x["async"] == 1]
        assert asy and asy[0]["line"] == line_async and asy[0]["func"] == "other_ops"
        assert all(x["state"] in ("done", "running") for x in asy)
        assert any(x["state"] == "done" for x in asy)
        # Point-to-point (rank 0 of p2p(): send, recv, isend, then batch_isend_irecv's isend
        # and irecv): the op of the function called, the peer, the recorder's own count per
        # direction; ended when the Work completed (wait() returned); torch 1.13's gloo lacks
        # reduce_scatter (failed), torch 2.x's has it.
        p2p = [x for x in rows if x["op"] in ("send", "recv", "isend", "irecv")]
        line = {k: bp("comm_job.py", k) for k in ("send", "isend", "batch")}
        calls = [(x["op"], x["line"], x["async"]) for x in p2p]
        step = [("send", line["send"], 0), ("recv", line["send"] + 1, 0),
                ("isend", line["isend"], 1), ("isend", line["batch"], 1),
                ("irecv", line["batch"], 1)]
        first = calls.index(step[0])
        assert calls[first:first + 15] == step * 3, calls[:20]
        assert all(x["peer"] == 1 and x["seq_source"] == "recorder" and x["sizes"] == "1024" and
                   x["dtype"] == "float32" and x["bytes"] == 4096 and x["file"] == COMM_JOB and
                   x["func"] == "p2p" and x["pg"] == "0" and x["group_ranks"] == "0,1"
                   for x in p2p), p2p[:5]
        assert all(x["state"] == "done" and x["end_time"] >= x["start_time"]
                   for x in p2p[:-5]), p2p[:-5]
        sent = [x["seq"] for x in p2p if x["op"] in ("send", "isend")]
        assert sent == list(range(1, len(sent) + 1))
        got = [x["seq"] for x in p2p if x["op"] in ("recv", "irecv")]
        assert got == list(range(1, len(got) + 1))
        assert {x["state"] for x in rows if x["op"] == "reduce_scatter" and
                x["state"] != "running"} == ({"failed"} if torch1 else {"done"})  # ended ones
        bc = [x for x in rows if x["op"] == "broadcast"]
        assert bc[0]["peer"] == 0
        # comm_metrics: the original Probing's view of the same rows.
        cm = query(p0, "SELECT src_rank, dst_rank, op, bytes, latency_ms FROM comm_metrics "
                       "WHERE op IN ('send', 'recv', 'isend', 'irecv', 'all_reduce') "
                       "ORDER BY timestamp")
        for op, pair in (("send", (0, 1)), ("isend", (0, 1)), ("recv", (1, 0)),
                         ("irecv", (1, 0))):
            assert {(x["src_rank"], x["dst_rank"]) for x in cm if x["op"] == op} == {pair}, op
        assert {(x["src_rank"], x["dst_rank"]) for x in cm if x["op"] == "all_reduce"} == \
            {(0, None)}
        assert all(x["bytes"] == 4096 and x["latency_ms"] >= 0 for x in cm)
        # The ring is bounded by comm.max_records (read at the start).
        probing("-p", p0, "config", "comm.max_records=16", check=True)
        probing("-p", p0, "perf", "--comm", "--stop", check=True)
        r = probing("-p", p0, "perf", "--comm", check=True)
        assert "a ring of 16 records" in r.stdout
        wait_rows(p0, "SELECT id FROM torch.collectives WHERE id > 40", 1)
        n = query(p0, "SELECT count(*) AS n, min(id) AS lo, max(id) AS hi FROM "
                      "torch.collectives")[0]
        assert n["n"] == 16 and n["hi"] - n["lo"] == 15, n
        # perf --stop: every function back, the very same objects; the records stay.
        # The job went on (isend/irecv, and a P2POp of torch's own isend held from before, in
        # batch_isend_irecv, which tells them apart by identity on torch 2.x).
        # ...and every point-to-point call received what its peer sent, recorded or not: both
        # ranks past step 10 (a step takes 40-180 ms, by the machine's load: waited for, 60 s).
        deadline = time.monotonic() + 60
        while True:
            text = open(job.out_path).read()
            assert "Traceback" not in text and job.proc.poll() is None, text[-2000:]
            steps = [json.loads(m) for m in re.findall(r"step (\{.*\})", text)]
            if {x["rank"] for x in steps if x["step"] >= 10} == {0, 1}:
                break
            assert time.monotonic() < deadline, text[-2000:]
            time.sleep(0.2)
        assert all(x["p2p_errors"] == 0 for x in steps), steps
        r = probing("-p", p0, "perf", "--stop", check=True)
        assert re.search(r"^perf --comm: stopped after \d+ records; every torch.distributed "
                         r"function put back$", r.stdout, re.M), r.stdout
        assert eval_json(p0, DIST_STATE) == before
        hi = query(p0, "SELECT max(id) AS hi FROM torch.collectives")[0]["hi"]
        time.sleep(1)
        assert query(p0, "SELECT max(id) AS hi FROM torch.collectives")[0]["hi"] == hi
        r = probing("-p", p0, "perf", "--comm", "--stop", check=True)
        assert r.stdout == "perf --comm: nothing to stop: it was not running in process %d\n" % p0
        # perf --torch starts the recorder too, unless --no-comm; perf --stop stops both.
        p1 = pids[1]
        before1 = eval_json(p1, DIST_STATE)
        r = probing("-p", p1, "perf", "--torch", check=True)
        assert re.search(r"^perf --comm: recording torch.distributed calls in process %d " % p1,
                         r.stdout, re.M), r.stdout
        wait_rows(p1, "SELECT id FROM torch.collectives", 1)
        r = probing("-p", p1, "perf", "--stop", check=True)
        assert "perf --comm: stopped after" in r.stdout and "perf --torch: stopped" in r.stdout
        r = probing("-p", p1, "perf", "--torch", "--no-comm", check=True)
        assert "perf --comm" not in r.stdout
        r = probing("-p", p1, "perf", "--stop", check=True)
        assert "perf --comm" not in r.stdout
        assert eval_json(p1, DIST_STATE) == before1
    finally:
        job.kill()


def test_comm_errors(PY, spawn):
    t = spawn(PY, "nap_loop.py")
    r = probing("-p", t.pid, "perf", "--comm")
    assert r.returncode == 1
    assert r.stderr == ("probing: error: perf --comm: torch.distributed is not imported in "
                        "process %d: start the recorder once the job has imported it\n" % t.pid)
    r = probing("-p", t.pid, "perf", "--comm", "--every", "3")
    assert r.returncode == 2
    r = probing("-p", t.pid, "perf", "--comm", "--help", check=True)
    assert "torch.collectives" in r.stdout
