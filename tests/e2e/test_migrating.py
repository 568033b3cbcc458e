# SPDX-License-Identifier: MIT
"""docs/migrating.md, row by row: each row types the original Probing's form (its README, quick
start, CLI and SQL pages) against a real target (samples/threads.py on every CPython, started
with the original's environment variables) and checks that it works with the same meaning, or
answers with one line naming our equivalent. The torch rows run against samples/torch_train.py
on Debian's python3 (torch 1.13), PROBE=1 against a `make install` into a venv."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import CLI, HOST_PYTHONS, PYTHONS, ROOT, Target, probing

ENV = {"PROBING_RETENTION_DAYS": "7", "PROBING_CPU_SAMPLE_MS": "1000",
       "PROBING_SAMPLE_RATE": "0.1", "PROBING_PORT": "8080", "PROBING_AUTH_TOKEN": "secret"}


@pytest.fixture(scope="module", params=PYTHONS)
def target(request, tmp_path_factory):
    t = Target(request.param, "threads.py", tmp_path_factory.mktemp("migrating"), env=ENV)
    yield t
    t.kill()
    t.check_output_clean()


def pid_of(t):
    return str(t.pid)


def ok(*args, **kw):
    r = probing(*args, **kw)
    assert r.returncode == 0, "probing %s: %s" % (" ".join(map(str, args)), r.stderr)
    return r.stdout


def rows(pid, sql):
    return json.loads(ok("-t", pid, "query", sql, "--format", "json"))


def one_line(r, code, *words):
    """The answer to a form we do not run: one error line, naming our equivalent."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("probing: error: "), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def setting(pid, name):
    return {r["name"]: r["value"] for r in rows(pid, "SELECT name, value FROM probing.settings")}[name]


# ---- the rows: (id, check(target)) in the order of docs/migrating.md ----

def env_retention_days(t):
    assert setting(t.pid, "history.max_age_s") == str(7 * 86400)


def env_cpu_sample_ms(t):
    assert setting(t.pid, "history.interval_s") == "1"


def env_sample_rate(t):
    r = probing("-p", t.pid, "inject")
    assert r.returncode == 0 and "probe already loaded" in r.stdout
    assert ("probing: note: PROBING_SAMPLE_RATE is the original Probing's and is not read here: "
            "trace one torch step in N with 'probing -p %d perf --torch --every N'" % t.pid
            ) in r.stderr
    assert ("probing: note: PROBING_PORT is the original Probing's and is not read here: serve "
            "TCP with 'probing -p %d inject --listen 127.0.0.1:PORT'" % t.pid) in r.stderr
    assert ("probing: note: PROBING_AUTH_TOKEN is the original Probing's and is not read here: "
            "the TCP token is PROBING_TOKEN" in r.stderr)
    assert len(r.stderr.splitlines()) == 3, r.stderr


def inject_endpoint(t):
    assert "already loaded in %d" % t.pid in ok(t.pid, "inject")


def d_dump(t):
    out = ok("-p", t.pid, "d", "-d")
    assert out.startswith("Process %d, CPython" % t.pid) and '"MainThread"' in out
    assert ok("-p", t.pid, "dbg", "--dump").startswith("Process %d" % t.pid)


def d_pause_address(t):
    out = ok("-p", t.pid, "d", "-p", "-a", "127.0.0.1:0")
    assert out.startswith("paused %d" % t.pid) and "DAP on 127.0.0.1:" in out
    assert ok("-p", t.pid, "d", "--resume") == "resumed %d\n" % t.pid
    t.assert_responsive()


def perf_cc_alias(t):
    assert ok("-p", t.pid, "performance", "--cc").startswith("sampling every thread at 100 Hz")
    out = ok("-p", t.pid, "p", "--cc", "--stop")
    assert out.startswith("perf --cc stopped"), out
    assert ok("fg", "--help").startswith("usage: probing -p PID flamegraph")
    assert ok("flame", "--help") == ok("flamegraph", "--help")


def t_backtrace(t):
    out = ok("-t", t.pid, "backtrace")
    assert out.startswith("Thread %d \"MainThread\"" % t.pid), out
    assert ok("-t", t.pid, "bt").startswith("Thread %d" % t.pid)


def t_query(t):
    r = rows(pid_of(t), "SELECT func, file, lineno FROM python.backtrace ORDER BY depth LIMIT 5")
    assert r and r[-1]["func"] == "<module>" and r[0]["file"].endswith("threads.py")
    assert "python.backtrace" not in ok("-t", t.pid, "q", "SELECT 1 AS x")


def t_eval(t):
    out = ok("-t", t.pid, "eval", "import threading; print([t.name for t in threading.enumerate()])")
    assert "'MainThread'" in out and "'sleeper-1'" in out
    assert ok("-t", t.pid, "e", "1+1") == "2\n"


def t_repl(t):
    r = subprocess.run([CLI, "-t", str(t.pid), "repl"], input="x = 20\nx + 22\n", capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "42", r.stderr


def list_probes(t):
    assert re.search(r"^%d\b" % t.pid, ok("list"), re.M)
    assert re.search(r"^%d\b" % t.pid, ok("ls"), re.M)


def memory(t):
    assert ok("-t", t.pid, "memory").startswith("Process memory")
    assert ok("-t", t.pid, "mem").startswith("Process memory")


def tables_cmd(t):
    out = ok("-t", t.pid, "tables")
    assert "python.backtrace (live)" in out and "memory_usage (view)" in out
    assert "python.backtrace (live)" in ok("-t", t.pid, "tbl")


def config_list(t):
    out = ok("-t", t.pid, "config")
    assert "query.max_rows" in out and "history.max_age_s" in out
    assert "query.max_rows" in ok("-t", t.pid, "cfg")


def config_sample_rate(t):
    one_line(probing("-t", t.pid, "config", "probing.sample_rate=0.05"), 1,
             "'probing.sample_rate' is the original Probing's setting",
             "perf --torch --every N")


def config_torch_profiling(t):
    one_line(probing("-t", t.pid, "config", "probing.torch.profiling=0.05"), 1,
             "perf --torch --every N")


def config_max_memory(t):
    r = probing("-t", t.pid, "config", "probing.max_memory=1GB")
    assert r.returncode == 0, r.stderr
    r = probing("-t", t.pid, "config", "store.max_memory_bytes")
    assert r.returncode == 0 and str(1 << 30) in r.stdout, r.stdout + r.stderr


def config_rdma(t):
    one_line(probing("-t", t.pid, "config", "probing.rdma.hca.name='mlx5_cx6_0'"), 1,
             "does not read RDMA")
    one_line(probing("-t", t.pid, "config", "probing.rdma.sample.rate='5'"), 1,
             "does not read RDMA")


def config_prefix_and_units(t):
    assert ok("-t", t.pid, "config", "probing.query.max_bytes=1MB") == \
        "query.max_bytes = 1048576\n"
    assert ok("-t", t.pid, "config", "probing.query.max_bytes=16MiB") == \
        "query.max_bytes = 16777216\n"
    assert ok("-t", t.pid, "config", "probing.history.max_age_s=5min") == \
        "history.max_age_s = 300\n"
    assert ok("-t", t.pid, "config", "query.timeout_ms=2s") == "query.timeout_ms = 2000\n"
    assert ok("-t", t.pid, "config", "query.timeout_ms=5000") == "query.timeout_ms = 5000\n"
    assert ok("-t", t.pid, "config", "probing.query.max_rows").startswith("query.max_rows = ")
    # A size where a count is expected, a unit out of range: the allowed values, nothing set.
    one_line(probing("-t", t.pid, "config", "query.max_rows=1GB"), 1,
             "query.max_rows: '1GB' is not an integer: expected 1 to 10000000")
    one_line(probing("-t", t.pid, "config", "query.timeout_ms=2h"), 1,
             "7200000 is out of range")


def config_retention_days(t):
    assert ok("-t", t.pid, "config", "probing.retention_days=2") == \
        "history.max_age_s = 172800\n"
    assert ok("-t", t.pid, "config", "retention_days=7") == "history.max_age_s = 604800\n"


def config_close_matches(t):
    one_line(probing("-t", t.pid, "config", "query.max_row=5"), 1,
             "unknown setting 'query.max_row': did you mean", "'query.max_rows'")
    one_line(probing("-t", t.pid, "config", "probing.interval_s"), 1,
             "'history.interval_s'")


def cluster_attach(t):
    one_line(probing("cluster", "attach"), 2, "cluster attach", "probing cluster list",
             "probing cluster stacks")


def launch_skill_rdma(t):
    one_line(probing("launch", "python", "train.py"), 2, "PROBING=1 python")
    one_line(probing("-t", t.pid, "skill", "run", "health_overview"), 2, "probing has no skills")
    one_line(probing("-t", t.pid, "rdma"), 2, "does not read RDMA")


def df_settings(t):
    r = rows(pid_of(t), "SELECT name, value FROM information_schema.df_settings LIMIT 5")
    assert len(r) == 5 and all(x["name"].startswith("probing.") for x in r)
    allr = rows(pid_of(t), "SELECT * FROM information_schema.df_settings WHERE name LIKE "
                           "'probing.%'")
    mine = rows(pid_of(t), "SELECT name, value FROM probing.settings")
    assert {x["name"]: x["value"] for x in allr} == {"probing." + x["name"]: x["value"]
                                                     for x in mine}


def is_tables(t):
    r = rows(pid_of(t), "SELECT table_schema, table_name, table_type FROM "
                        "information_schema.tables")
    got = {(x["table_schema"], x["table_name"]): x["table_type"] for x in r}
    assert got[("python", "backtrace")] == "BASE TABLE"
    assert got[("system", "process_history")] == "BASE TABLE"
    assert got[("information_schema", "df_settings")] == "BASE TABLE"
    for v in ("memory_usage", "training_logs", "memory_allocations", "profiling_data",
              "gpu_metrics", "comm_metrics"):
        assert got[("temp", v)] == "VIEW"
    cat = {x["table_name"] for x in rows(pid_of(t), "SELECT DISTINCT table_name FROM "
                                                    "probing.tables")}
    assert cat == {(s + "." + n) if s != "temp" else n for s, n in got}


def is_columns(t):
    r = rows(pid_of(t), "SELECT column_name, data_type, ordinal_position FROM "
                        "information_schema.columns WHERE table_schema = 'python' AND "
                        "table_name = 'backtrace' ORDER BY ordinal_position")
    assert [(x["column_name"], x["data_type"]) for x in r][:3] == \
        [("func", "TEXT"), ("file", "TEXT"), ("lineno", "INTEGER")]
    # Each column is one a query can select.
    for x in rows(pid_of(t), "SELECT table_schema, table_name, column_name FROM "
                             "information_schema.columns WHERE table_name IN "
                             "('memory_usage', 'process_history')"):
        name = x["table_name"] if x["table_schema"] == "temp" else \
            x["table_schema"] + "." + x["table_name"]
        rows(pid_of(t), "SELECT %s FROM %s LIMIT 1" % (x["column_name"], name))


def wait_history(t, n=2, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = rows(pid_of(t), "SELECT count(*) AS n FROM memory_usage")
        if r[0]["n"] >= n:
            return
        time.sleep(0.3)
    raise AssertionError("memory_usage has fewer than %d rows after %d s" % (n, timeout))


def memory_usage_interval(t):
    one_line(probing("-t", t.pid, "query",
                     "SELECT * FROM memory_usage WHERE timestamp > now() - interval '5 min'"),
             1, "SQLite has no INTERVAL", "write 300 for interval '5 min'", "now() - 300")


def memory_usage(t):
    wait_history(t)
    r = rows(pid_of(t), "SELECT * FROM memory_usage WHERE timestamp > now() - 300")
    assert r and set(r[0]) == {"timestamp", "memory_mb", "rss", "vms"}
    with open("/proc/%d/status" % t.pid) as f:
        rss = int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024
    assert abs(r[-1]["memory_mb"] - rss) < max(8, rss * 0.2), (r[-1], rss)
    assert all(abs(x["memory_mb"] - x["rss"] / 1048576) < 1e-6 for x in r)


def memory_usage_hour(t):
    wait_history(t)
    r = rows(pid_of(t), "SELECT hour(timestamp), avg(memory_mb) FROM memory_usage GROUP BY "
                        "hour(timestamp)")
    hours = {time.gmtime().tm_hour, time.gmtime(time.time() - 60).tm_hour}
    assert r and all(x["hour(timestamp)"] in hours and x["avg(memory_mb)"] > 0 for x in r)


def sql_time_functions(t):
    r = rows(pid_of(t), "SELECT now() AS n, date_trunc('hour', 3725) AS h, "
                        "date_trunc('day', '2024-05-01 12:34:56') AS d, "
                        "date_trunc('minutes', 1714566896.5) AS m, "
                        "date_trunc('week', '2024-05-01') AS w, "
                        "date_trunc('month', '2024-05-17T01:02:03') AS mo, "
                        "date_trunc('year', 1714566896) AS y, hour('2024-05-01 13:00:00') AS hr, "
                        "hour(NULL) AS hn")[0]
    assert abs(r["n"] - time.time()) < 30
    assert (r["h"], r["d"], r["m"]) == (3600, 1714521600, 1714566840)
    assert (r["w"], r["mo"], r["y"], r["hr"], r["hn"]) == (1714348800, 1714521600, 1704067200,
                                                           13, None)
    one_line(probing("-t", t.pid, "query", "SELECT date_trunc('fortnight', 0)"), 1,
             "unit must be second, minute, hour, day, week, month or year")


def profiling_data_interval(t):
    one_line(probing("-t", t.pid, "query", "SELECT operation_name, avg(duration_ms), count(*) "
                     "FROM profiling_data WHERE timestamp > now() - interval '5 minutes' GROUP "
                     "BY operation_name ORDER BY avg(duration_ms) DESC"), 1,
             "write 300 for interval '5 minutes'")


def profiling_data_empty(t):
    assert rows(pid_of(t), "SELECT operation_name, avg(duration_ms), count(*) FROM "
                           "profiling_data WHERE timestamp > now() - 300 GROUP BY "
                           "operation_name ORDER BY avg(duration_ms) DESC") == []


def training_logs_empty(t):
    assert rows(pid_of(t), "SELECT epoch, avg(loss), min(loss), count(*) as steps FROM "
                           "training_logs GROUP BY epoch ORDER BY epoch") == []


def memory_allocations(t):
    one_line(probing("-t", t.pid, "query", "SELECT function_name, sum(allocated_bytes) as "
                     "total_alloc FROM memory_allocations WHERE timestamp > now() - interval "
                     "'1 hour' GROUP BY function_name ORDER BY total_alloc DESC"), 1,
             "write 3600 for interval '1 hour'")
    sql = ("SELECT function_name, sum(allocated_bytes) as total_alloc FROM memory_allocations "
           "WHERE timestamp > now() - 3600 GROUP BY function_name ORDER BY total_alloc DESC")
    assert rows(pid_of(t), sql) == []  # not tracing: empty, as python.tracemalloc
    ok("-t", t.pid, "memory", "--trace", "start")
    try:
        ok("-t", t.pid, "eval", "KEEP = [bytearray(1000) for _ in range(300)]")
        r = rows(pid_of(t), sql)
        assert r and all(re.match(r"^.+:\d+$", x["function_name"]) for x in r)
        assert r[0]["total_alloc"] >= 300000 and r[0]["function_name"].startswith("<probing>:"), r[:3]
        assert sorted((x["total_alloc"] for x in r), reverse=True) == [x["total_alloc"] for x in r]
        # The same figures as python.tracemalloc.
        tm = rows(pid_of(t), "SELECT file, lineno, size FROM python.tracemalloc LIMIT 1")[0]
        assert "%s:%d" % (tm["file"], tm["lineno"]) == r[0]["function_name"]
    finally:
        ok("-t", t.pid, "eval", "del KEEP")
        ok("-t", t.pid, "memory", "--trace", "stop")


def comm_metrics(t):
    # Empty before the recorder runs (this target has no torch; the rows of a real torchrun
    # job: tests/e2e/test_perf_torch.py test_comm_records_every_call_and_stop_puts_torch_back).
    assert rows(pid_of(t), "SELECT src_rank, dst_rank, avg(latency_ms) FROM comm_metrics") == \
        [{"src_rank": None, "dst_rank": None, "avg(latency_ms)": None}]
    assert "from torch.collectives" in ok("-t", t.pid, "tables", "comm_metrics").splitlines()[0]


def gpu_metrics(t):
    assert rows(pid_of(t), "SELECT avg(gpu_util) FROM gpu_metrics WHERE timestamp > now() - "
                           "60") == [{"avg(gpu_util)": None}]
    assert "NVML" in ok("-t", t.pid, "tables", "gpu_metrics").splitlines()[0]


def backtrace_all(t):
    r = rows(pid_of(t), "SELECT * FROM python.backtrace")
    assert r and {"func", "file", "lineno", "depth"} <= set(r[0])


def torch_trace_select(t):
    assert rows(pid_of(t), "SELECT * FROM python.torch_trace LIMIT 10") == []


def percentile_cont(t):
    one_line(probing("-t", t.pid, "query", "SELECT module, percentile_cont(0.5) WITHIN GROUP "
                     "(ORDER BY duration) AS median FROM python.torch_trace GROUP BY module"), 1,
             "percentile(x, 50)")
    assert rows(pid_of(t), "SELECT percentile(value, 50) AS m FROM (SELECT 1 AS value UNION "
                           "ALL SELECT 3)") == [{"m": 2.0}]


ROWS = [env_retention_days, env_cpu_sample_ms, env_sample_rate, inject_endpoint, d_dump,
        d_pause_address, perf_cc_alias, t_backtrace, t_query, t_eval, t_repl, list_probes,
        memory, tables_cmd, config_list, config_sample_rate, config_torch_profiling,
        config_max_memory, config_rdma, config_prefix_and_units, config_retention_days,
        config_close_matches, cluster_attach, launch_skill_rdma, df_settings, is_tables,
        is_columns, memory_usage_interval, memory_usage, memory_usage_hour, sql_time_functions,
        profiling_data_interval, profiling_data_empty, training_logs_empty, memory_allocations,
        comm_metrics, gpu_metrics, backtrace_all, torch_trace_select, percentile_cont]


@pytest.mark.parametrize("row", ROWS, ids=[f.__name__ for f in ROWS])
def test_row(target, row):
    row(target)
    target.assert_responsive()


# ---- torch: training_logs and profiling_data over a real training job ----

TORCH_PY = "/usr/bin/python3"


def _has_torch():
    return os.path.exists(TORCH_PY) and subprocess.run(
        [TORCH_PY, "-c", "import torch"], capture_output=True, timeout=120).returncode == 0


@pytest.mark.skipif(not _has_torch(), reason="torch is not installed for %s" % TORCH_PY)
def test_torch_views(spawn):
    t = spawn(TORCH_PY, "torch_train.py")
    ok("-p", t.pid, "perf", "--torch", "--every", "1")
    deadline = time.time() + 60
    while time.time() < deadline:
        steps = rows(pid_of(t), "SELECT step, loss FROM python.torch_steps WHERE traced = 1 AND "
                                "loss IS NOT NULL")
        if len(steps) >= 3:
            break
        time.sleep(0.3)
    assert len(steps) >= 3
    try:
        # training_logs: the README's query, epoch unknown (NULL), the losses of torch_steps.
        r = rows(pid_of(t), "SELECT epoch, avg(loss), min(loss), count(*) as steps FROM "
                            "training_logs GROUP BY epoch ORDER BY epoch")
        assert len(r) == 1 and r[0]["epoch"] is None and r[0]["steps"] >= 3
        # Both sides in one statement: training goes on between two queries (a new lowest loss).
        both = rows(pid_of(t), "SELECT (SELECT min(loss) FROM training_logs) AS a, (SELECT "
                               "min(loss) FROM python.torch_steps) AS b, (SELECT count(*) FROM "
                               "training_logs) AS na, (SELECT count(*) FROM python.torch_steps) "
                               "AS nb")[0]
        assert both["a"] == pytest.approx(both["b"]) and both["na"] <= both["nb"], both
        tl = rows(pid_of(t), "SELECT step, loss, duration_ms FROM training_logs WHERE loss IS "
                             "NOT NULL ORDER BY step LIMIT 3")
        ts = rows(pid_of(t), "SELECT step, loss, duration * 1000.0 AS duration_ms FROM "
                             "python.torch_steps WHERE loss IS NOT NULL ORDER BY step LIMIT 3")
        assert tl == ts
        # profiling_data: the README's hot-spot query in SQLite's spelling of the interval.
        r = rows(pid_of(t), "SELECT operation_name, avg(duration_ms), count(*) FROM "
                            "profiling_data WHERE timestamp > now() - 300 GROUP BY "
                            "operation_name ORDER BY avg(duration_ms) DESC")
        names = {x["operation_name"] for x in r}
        assert {"blocks.0", "blocks.0.attn", "head"} <= names, names
        assert all(x["avg(duration_ms)"] > 0 for x in r if x["avg(duration_ms)"] is not None)
        phases = {x["phase"] for x in rows(pid_of(t), "SELECT DISTINCT phase FROM "
                                                      "profiling_data")}
        assert phases == {"forward", "backward"}
        # The quick start's torch_trace queries run as written.
        assert rows(pid_of(t), "SELECT step, AVG(allocated) as avg_memory FROM "
                               "python.torch_trace GROUP BY step ORDER BY step")
        assert rows(pid_of(t), "SELECT module, stage, AVG(duration) as avg_duration FROM "
                               "python.torch_trace GROUP BY module, stage ORDER BY avg_duration "
                               "DESC LIMIT 10")
    finally:
        ok("-p", t.pid, "perf", "--stop")
    t.check_output_clean()


# ---- PROBE=1: the original's spelling of PROBING=1 ----

@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    exe = HOST_PYTHONS[0].values[0]
    v = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([exe, "-m", "venv", "--without-pip", str(v)], check=True)
    subprocess.run(["make", "-s", "-C", ROOT, "install", "PREFIX=%s" % v], check=True,
                   capture_output=True, timeout=600)
    return v


def test_probe_env_startup(venv, spawn):
    t = spawn(str(venv / "bin" / "python"), env={"PROBE": "1"})
    assert t.maps_count() == 1, "PROBE=1 loaded the probe at start-up"
    out = ok("-p", t.pid, "d", "-d")
    assert out.startswith("Process %d" % t.pid)
    t2 = spawn(str(venv / "bin" / "python"), env={"PROBE": "0"})
    assert t2.maps_count() == 0
    t.check_output_clean()
    t2.check_output_clean()
