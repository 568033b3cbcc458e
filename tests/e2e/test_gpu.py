# SPDX-License-Identifier: MIT
"""GPUs (docs/tables.md "system.gpus"): real targets from samples/ and the real CLI, with the
project's stub NVML (tests/gpu/nvml_stub.c, build/<variant>/tests/libnvml-stub.so: two fake
GPUs) named by PROBING_NVML_LIB in the target or in probing serve: system.gpus,
system.gpu_processes (the target itself on GPU 0), the history tables filled by the collector,
the original Probing's gpu_metrics view, /metrics. Without a GPU or driver (no stub, a missing
library, an NVML whose init fails): empty tables and one note line, exit 0, nothing of NVIDIA's
loaded into the target. CUDA memory without CUDA: `memory` and python.cuda_memory say in one
line why there is nothing, `memory --snapshot` fails in one line, and torch.cuda is still not
initialised afterwards (probing never initialises it). On a machine with a GPU, tests/gpu/check.sh
runs the real thing."""
import json
import os
import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import BUILD, PYTHONS, probing
from test_serve import Server, http

STUB = os.path.join(BUILD, "tests", "libnvml-stub.so")
GIB = 1 << 30


def rows(pid, sql):
    r = probing("-p", pid, "query", sql, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def stub_env(**kw):
    assert os.path.exists(STUB), "build the stub first: make %s" % STUB
    e = {"PROBING_NVML_LIB": STUB, "PROBING_HISTORY_INTERVAL_S": "1"}
    e.update(kw)
    return e


@pytest.mark.parametrize("python", PYTHONS)
def test_gpu_tables(python, spawn):
    t = spawn(python, "threads.py", env=stub_env())
    g, err = rows(t.pid, "SELECT * FROM system.gpus ORDER BY gpu")
    assert err == "" and len(g) == 2, (g, err)
    assert g[0]["name"] == "NVIDIA Stub H100 80GB"
    assert g[0]["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert (g[0]["util_gpu"], g[0]["util_mem"]) == (87, 40)
    assert (g[0]["mem_used"], g[0]["mem_total"]) == (40 * GIB, 80 * GIB)
    assert (g[0]["temperature_c"], g[0]["power_w"], g[0]["power_limit_w"]) == (61, 312.5, 700)
    assert (g[0]["clock_sm_mhz"], g[0]["clock_mem_mhz"]) == (1980, 2619)
    assert (g[0]["throttle"], g[0]["ecc_corrected"], g[0]["ecc_uncorrected"]) == ("", 3, 0)
    assert (g[0]["xid_count"], g[0]["last_xid"]) == (0, None)
    assert g[1]["throttle"] == "gpu_idle" and g[1]["ecc_corrected"] is None
    assert (g[1]["xid_count"], g[1]["last_xid"]) == (1, 79)
    p, err = rows(t.pid, "SELECT * FROM system.gpu_processes ORDER BY gpu")
    assert p == [{"gpu": 0, "pid": t.pid, "used_memory": GIB, "is_self": 1},
                 {"gpu": 1, "pid": 1, "used_memory": None, "is_self": 0}], p
    # The collector: a row per GPU and per GPU process every history.interval_s (1 s here).
    deadline = time.time() + 20
    while time.time() < deadline:
        h, _ = rows(t.pid, "SELECT count(*) AS n FROM system.gpu_history")
        if h[0]["n"] >= 4:
            break
        time.sleep(0.5)
    assert h[0]["n"] >= 4, h
    m, _ = rows(t.pid, "SELECT gpu_id, gpu_util, memory_used_mb, memory_total_mb, "
                "timestamp > now() - 60 AS recent FROM gpu_metrics WHERE gpu_id = 0 LIMIT 1")
    assert m == [{"gpu_id": 0, "gpu_util": 87.0, "memory_used_mb": 40960.0,
                  "memory_total_mb": 81920.0, "recent": 1}], m
    a, _ = rows(t.pid, "SELECT avg(gpu_util) AS u FROM gpu_metrics WHERE timestamp > now() - 60")
    assert a[0]["u"] == 43.5, a
    ph, _ = rows(t.pid, "SELECT DISTINCT gpu, pid, used_memory, is_self FROM "
                 "system.gpu_process_history ORDER BY gpu")
    assert ph == p, ph
    out = probing("-p", t.pid, "tables", "system.gpus", check=True).stdout
    assert "xid_count" in out and "NVML" in out
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS[-1:])
def test_gpu_absent(python, spawn):
    """No driver (or the named library missing, or its init failing): each GPU table is empty
    with one note line naming why, exit 0; gpu_metrics empty; no NVIDIA library loaded."""
    cases = [({}, "no NVIDIA GPU or driver on this machine (/dev/nvidiactl is absent)"
              if not os.path.exists("/dev/nvidiactl") else None),
             ({"PROBING_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"},
              "no NVIDIA GPU or driver: NVML could not be loaded (/nonexistent/libnvidia-ml.so.1: "
              "cannot open shared object file: No such file or directory)"),
             (stub_env(NVML_STUB_FAIL_INIT="1"),
              "no NVIDIA GPU or driver: nvmlInit failed (Driver Not Loaded)")]
    for env, note in cases:
        if note is None:  # a machine with a GPU: the first case is tests/gpu/check.sh's
            continue
        t = spawn(python, "threads.py", env=env)
        for table in ("system.gpus", "system.gpu_processes"):
            r = probing("-p", t.pid, "query", "SELECT * FROM %s" % table)
            assert r.returncode == 0 and r.stdout.endswith("(0 rows)\n"), r
            assert r.stderr == "probing: note: %s\n" % note, (table, r.stderr)
        r = probing("-p", t.pid, "query", "SELECT count(*) FROM gpu_metrics", check=True)
        assert r.stdout.splitlines()[2] == "0" and r.stderr == "", r
        with open("/proc/%d/maps" % t.pid) as f:
            maps = f.read()
        assert "nvidia" not in maps and "nvml" not in maps
        t.kill()


@pytest.mark.parametrize("python", PYTHONS[-1:])
def test_gpu_metrics(python, spawn):
    """probing serve reads NVML itself: the GPUs' figures in /metrics and /api/gpus (the page's
    GPU table), and the GPU memory of a target labelled as the target's other figures; without
    a GPU, one comment line in /metrics and the reason in /api/gpus."""
    t = spawn(python, "threads.py")
    probing("-p", t.pid, "inject", check=True)
    s = Server("--listen", "127.0.0.1:0", env=stub_env(NVML_STUB_PID=str(t.pid)))
    try:
        status, _, body = http(s.url + "metrics")
        assert status == 200
        text = body.decode()
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        util = {x.labels["gpu"]: x for x in fams["probing_gpu_utilization_percent"].samples}
        assert util["0"].value == 87 and util["1"].value == 0
        assert util["0"].labels["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
        assert util["0"].labels["name"] == "NVIDIA Stub H100 80GB"
        val = {(f, x.labels["gpu"]): x.value for f in fams for x in fams[f].samples
               if f.startswith("probing_gpu_") and "gpu" in x.labels and "uuid" in x.labels}
        assert val[("probing_gpu_memory_used_bytes", "0")] == 40 * GIB
        assert val[("probing_gpu_memory_total_bytes", "1")] == 80 * GIB
        assert val[("probing_gpu_power_watts", "0")] == 312.5
        assert val[("probing_gpu_sm_clock_hertz", "0")] == 1980e6
        assert val[("probing_gpu_throttle_reasons", "1")] == 1
        assert val[("probing_gpu_ecc_corrected_errors", "0")] == 3
        assert ("probing_gpu_ecc_corrected_errors", "1") not in val  # no ECC on GPU 1
        assert val[("probing_gpu_xid_errors", "1")] == 1
        pm = fams["probing_gpu_process_memory_bytes"].samples
        assert [(x.labels["pid"], x.labels["gpu"], x.value) for x in pm] == [
            (str(t.pid), "0", GIB)], pm
        # The web page's GPU table reads /api/gpus.
        status, hdrs, body = http(s.url + "api/gpus")
        d = json.loads(body)
        assert status == 200 and "error" not in d, d
        assert [(g["gpu"], g["utilGpu"], g["memUsed"], g["throttle"], g["xidCount"],
                 g["lastXid"], g["eccCorrected"]) for g in d["gpus"]] == [
            (0, 87, 40 * GIB, "", 0, None, 3), (1, 0, GIB // 2, "gpu_idle", 1, 79, None)], d
        assert d["processes"] == [{"gpu": 0, "pid": t.pid, "usedMemory": GIB},
                                  {"gpu": 1, "pid": 1, "usedMemory": None}], d
        status, _, body = http(s.url + "index.html")
        assert b'id="gpus-table"' in body
    finally:
        s.stop()
    s = Server("--listen", "127.0.0.1:0", env={"PROBING_NVML_LIB": "/nonexistent/libnvml.so"})
    try:
        status, _, body = http(s.url + "metrics")
        lines = [x for x in body.decode().splitlines() if "gpu" in x.lower() or "nvidia" in
                 x.lower()]
        assert lines == ["# probing: no NVIDIA GPU or driver: NVML could not be loaded "
                         "(/nonexistent/libnvml.so: cannot open shared object file: No such "
                         "file or directory)"], lines
        list(text_string_to_metric_families(body.decode()))  # still valid
        status, _, body = http(s.url + "api/gpus")
        assert status == 200 and json.loads(body) == {
            "gpus": [], "processes": [], "error": "no NVIDIA GPU or driver: NVML could not be "
            "loaded (/nonexistent/libnvml.so: cannot open shared object file: No such file or "
            "directory)"}, body
    finally:
        s.stop()


@pytest.mark.parametrize("python", PYTHONS[-1:])
def test_cuda_memory_absent(python, spawn):
    """memory and python.cuda_memory without CUDA, and memory --snapshot: one line each; never
    initialising CUDA (Debian's torch is a CPU build: the checks of figures are check.sh's)."""
    t = spawn(python, "threads.py")
    r = probing("-p", t.pid, "memory", check=True)
    assert "\nCUDA: none: torch is not imported\n" in r.stdout, r.stdout
    r = probing("-p", t.pid, "query", "SELECT * FROM python.cuda_memory")
    assert r.returncode == 0 and r.stdout.endswith("(0 rows)\n")
    assert r.stderr == "probing: note: no CUDA memory: torch is not imported\n", r.stderr
    r = probing("-p", t.pid, "memory", "--snapshot", "snap.pickle")
    assert r.returncode == 1 and r.stderr == (
        "probing: error: memory --snapshot: torch is not imported: no CUDA memory snapshot\n"), r
    r = probing("-p", t.pid, "memory", "--snapshot", "/nonexistent/snap.pickle")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr, r
    torch_py = "/usr/bin/python3"
    if subprocess.run([torch_py, "-c", "import torch"], capture_output=True).returncode != 0:
        return
    t = spawn(torch_py, "torch_infer.py")
    why = "torch.cuda is not initialised in this process (probing never initialises it)"
    r = probing("-p", t.pid, "memory", check=True)
    assert "\nCUDA: none: %s\n" % why in r.stdout, r.stdout
    r = probing("-p", t.pid, "query", "SELECT * FROM python.cuda_memory")
    assert r.returncode == 0 and r.stderr == "probing: note: no CUDA memory: %s\n" % why
    r = probing("-p", t.pid, "memory", "--snapshot", str(t.out_path) + ".pickle")
    assert r.returncode == 1 and r.stderr == (
        "probing: error: memory --snapshot: torch.cuda is not initialised in this process: no "
        "CUDA memory snapshot\n"), r
    assert not os.path.exists(str(t.out_path) + ".pickle")
    r = probing("-p", t.pid, "eval", "__import__('torch').cuda.is_initialized()", check=True)
    assert r.stdout.strip() == "False"
    t.check_output_clean()
