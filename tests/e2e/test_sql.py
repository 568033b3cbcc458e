# SPDX-License-Identifier: MIT
"""probing -p PID query / tables on every CPython 3.8-3.15 (3.14, 3.15 and a late 3.13 in the sid root) and Debian's python3: every table
checked against what the sample is known to be doing (BP markers, the ready line, /proc),
every output format, the SQL helpers, history tables with retention, and the error paths (bad
SQL, writes, the row limit, a query that runs too long, a GIL held forever). The examples of
docs/tables.md are run too, so the docs cannot rot."""
import csv
import io
import json
import os
import re
import subprocess
import time

import pytest

from conftest import BUILD, CLI, PYTHONS, ROOT, bp, probe_sock, probing
from dapclient import DAP
from rollups import check_rollup

READONLY = "the database is read-only; change settings with 'probing config KEY=VALUE'"
LIVE_TABLES = {"python.backtrace", "python.native_backtrace", "python.threads", "python.objects", "python.modules",
               "python.gc", "system.process", "system.threads", "probing.settings",
               "probing.tables"}


def q(pid, sql, *extra, env=None):
    """Rows of a query as a list of dicts (through --format json)."""
    r = probing("-p", pid, "query", sql, "--format", "json", *extra, env=env)
    assert r.returncode == 0, "query %r failed: %s" % (sql, r.stderr)
    return json.loads(r.stdout)


def raw(*args):
    """Runs the CLI with bytes, no newline translation (CSV ends lines with CRLF)."""
    r = subprocess.run([CLI, *[str(a) for a in args]], capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def by(rows, key):
    return {r[key]: r for r in rows}


@pytest.mark.parametrize("python", PYTHONS)
def test_python_tables(python, spawn):
    t = spawn(python)
    # python.backtrace: the main thread unless thread_id is given; depth 0 innermost.
    rows = q(t.pid, "SELECT * FROM python.backtrace ORDER BY depth")
    assert [(r["func"], r["depth"]) for r in rows] == [("tick_forever", 0), ("main", 1),
                                                       ("<module>", 2)]
    assert rows[0]["lineno"] == bp("threads.py", "main_sleep")
    assert all(r["thread_id"] == t.pid and r["frame_type"] == "python" and
               r["file"].endswith("samples/threads.py") for r in rows)
    assert json.loads(rows[0]["locals"])["text"].endswith("...'...") or \
        "xxx" in json.loads(rows[0]["locals"])["text"]
    sleeper = t.ready["threads"]["sleeper-1"]
    rows = q(t.pid, "SELECT func, lineno, depth, locals FROM python.backtrace "
                    "WHERE thread_id = %d" % sleeper)
    assert (rows[0]["func"], rows[0]["lineno"], rows[0]["depth"]) == (
        "sleeper", bp("threads.py", "sleeper_sleep"), 0)
    assert json.loads(rows[0]["locals"])["seconds"] == "3600"
    assert rows[-1]["func"].endswith("_bootstrap")
    reader = q(t.pid, "SELECT func, lineno FROM python.backtrace WHERE thread_id = "
                      "(SELECT thread_id FROM python.threads WHERE name = 'reader-1') "
                      "AND depth = 0")
    assert reader == [{"func": "reader", "lineno": bp("threads.py", "reader_read")}]
    assert q(t.pid, "SELECT * FROM python.backtrace WHERE thread_id = 1") == []
    # python.threads: names and native ids from the ready line.
    th = by(q(t.pid, "SELECT * FROM python.threads"), "name")
    assert set(th) == {"MainThread", "sleeper-1", "reader-1"}
    assert th["MainThread"]["native_id"] == th["MainThread"]["thread_id"] == t.pid
    assert th["MainThread"]["is_main"] == 1 and th["MainThread"]["daemon"] == 0
    for name in ("sleeper-1", "reader-1"):
        assert th[name]["native_id"] == t.ready["threads"][name]
        assert th[name]["daemon"] == 1 and th[name]["is_main"] == 0
        assert th[name]["state"] == "sleeping" and th[name]["holds_gil"] == 0
        assert th[name]["name_source"] == "threading" and th[name]["ident"] > 0
    # python.modules, python.objects, python.gc (under the GIL).
    mods = by(q(t.pid, "SELECT * FROM python.modules"), "name")
    assert mods["threading"]["file"].endswith("threading.py")
    assert "json" in mods and mods["sys"]["file"] is None
    objs = by(q(t.pid, "SELECT * FROM python.objects"), "type")
    assert objs["function"]["count"] > 100 and objs["function"]["size"] > 0
    assert objs["Thread"]["count"] == 2 and objs["_MainThread"]["count"] == 1
    gc = q(t.pid, "SELECT * FROM python.gc ORDER BY generation")
    assert [g["generation"] for g in gc] == [0, 1, 2]
    assert gc[0]["threshold"] > 0 and all(g["enabled"] == 1 for g in gc)
    assert gc[0]["collections"] >= 0 and gc[0]["uncollectable"] == 0
    t.assert_responsive()
    t.check_output_clean()


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])


@pytest.mark.parametrize("python", PYTHONS)
def test_system_and_probing_tables(python, spawn):
    t = spawn(python)
    p = q(t.pid, "SELECT * FROM system.process")
    assert len(p) == 1
    p = p[0]
    assert p["pid"] == t.pid
    assert p["threads"] == len(os.listdir("/proc/%d/task" % t.pid))
    assert abs(p["open_fds"] - len(os.listdir("/proc/%d/fd" % t.pid))) <= 2
    rss = proc_status(t.pid, "VmRSS") * 1024
    assert 0.5 * rss < p["rss"] < 2 * rss
    assert p["peak_rss"] >= p["rss"] and p["vms"] > p["rss"]
    assert 0 <= p["uptime_s"] < 120 and p["cpu_user"] >= 0 and p["cpu_system"] >= 0
    st = by(q(t.pid, "SELECT * FROM system.threads"), "tid")
    assert set(st) == {int(x) for x in os.listdir("/proc/%d/task" % t.pid)}
    sleeper = st[t.ready["threads"]["sleeper-1"]]
    assert sleeper["state"] == "sleeping" and sleeper["cpu_user"] >= 0
    # probing.settings: every key, with value, default and description.
    keys = {r["name"]: r for r in q(t.pid, "SELECT * FROM probing.settings")}
    for k in ("gil_timeout_ms", "query.timeout_ms", "query.max_rows", "query.max_bytes",
              "store.max_memory_bytes",
              "history.max_rows", "history.max_age_s", "history.interval_s"):
        assert keys[k]["value"] == keys[k]["default_value"] and keys[k]["description"]
    listed = probing("-p", t.pid, "config", check=True).stdout
    assert {l.split()[0] for l in listed.splitlines()[2:]} == set(keys)
    # probing.tables: every table, each with its columns; what SELECT * returns matches.
    tabs = q(t.pid, "SELECT * FROM probing.tables")
    names = {r["table_name"] for r in tabs}
    assert names >= LIVE_TABLES | {"system.process_history"}
    for name in sorted(LIVE_TABLES | {"system.process_history"}):
        cols = [r["column_name"] for r in tabs if r["table_name"] == name]
        rc, out, _ = raw("-p", t.pid, "query", "SELECT * FROM %s LIMIT 1" % name, "-f", "csv")
        assert rc == 0 and out.split("\r\n")[0].split(",") == cols, name
        assert all(x["description"] for x in tabs if x["table_name"] == name)
    assert [r["kind"] for r in tabs if r["table_name"] == "system.process_history"][0] == "history"
    # The `tables` command shows the same.
    out = probing("-p", t.pid, "tables", check=True).stdout
    for name in names:
        assert re.search(r"^%s \((live|history|rollup|view)\): " % re.escape(name), out, re.M), name
    out = probing("-p", t.pid, "tables", "python.backtrace", check=True).stdout
    assert out.splitlines()[0].startswith("python.backtrace (live): ")
    assert [l.split()[0] for l in out.splitlines()[1:]] == [
        "func", "file", "lineno", "depth", "thread_id", "frame_type", "locals"]
    r = probing("-p", t.pid, "tables", "python.nope")
    assert r.returncode == 1 and "no table 'python.nope'" in r.stderr
    # Helpers.
    h = q(t.pid, "SELECT now() AS n, human_bytes(1536) AS b, human_bytes(NULL) AS z, "
                 "iso_time(0) AS i, (SELECT percentile(value, 50) FROM (SELECT 1 AS value "
                 "UNION ALL SELECT 2 UNION ALL SELECT 10)) AS p")[0]
    assert abs(h["n"] - time.time()) < 5
    assert (h["b"], h["z"], h["i"], h["p"]) == ("1.5 KiB", None, "1970-01-01T00:00:00.000Z", 2)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_formats(python, spawn):
    t = spawn(python)
    sql = ("SELECT 'a,b' AS x, 'say \"hi\"' AS y, NULL AS z, 1.5 AS r, 42 AS i "
           "UNION ALL SELECT 'plain', 'two\nlines', 'z', -2.25, 7")
    rc, out, _ = raw("-p", t.pid, "query", sql, "--format", "csv")
    assert rc == 0 and out == ('x,y,z,r,i\r\n"a,b","say ""hi""",,1.5,42\r\n'
                        'plain,"two\nlines",z,-2.25,7\r\n')
    assert list(csv.reader(io.StringIO(out, newline="")))[1] == ["a,b", 'say "hi"', "",
                                                                       "1.5", "42"]
    rows = json.loads(probing("-p", t.pid, "query", sql, "--format", "json", check=True).stdout)
    assert rows == [{"x": "a,b", "y": 'say "hi"', "z": None, "r": 1.5, "i": 42},
                    {"x": "plain", "y": "two\nlines", "z": "z", "r": -2.25, "i": 7}]
    for args in ([], ["--format", "table"], ["-f", "table"], ["--format=table"]):
        out = probing("-p", t.pid, "query", sql, *args, check=True).stdout
        assert out.splitlines() == [
            "x      y          z     r      i",
            "-----  ---------  ----  -----  --",
            "a,b    say \"hi\"   NULL  1.5    42",
            "plain  two lines  z     -2.25  7",
            "(2 rows)"], out
    assert json.loads(probing("-p", t.pid, "query", "SELECT 1 WHERE 0", "-f", "json",
                              check=True).stdout) == []
    t.assert_responsive()
    t.check_output_clean()


# Values that cJSON's own printing moves: 15 digits are "close enough" to it, not equal.
EXACT_SQL = ("SELECT 1795486242.1535902 AS ts, 0.1 AS tenth, 1e300 AS big, "
             "9007199254740993 AS i53, -9223372036854775808 AS imin")
EXACT = {"ts": 1795486242.1535902, "tenth": 0.1, "big": 1e300, "i53": 9007199254740993,
         "imin": -9223372036854775808}


def exact_numbers(pid):
    """The numbers of EXACT_SQL as the DAP wire (every digit) and the CLI (doubles) give them."""
    cli = q(pid, EXACT_SQL)[0]  # injects the first time
    c = DAP.unix(probe_sock(pid))
    assert c.request("initialize", {"adapterID": "e2e"})["success"]
    assert c.request("attach", {"probingClient": "cli"})["success"]
    r = c.request("probing/query", {"sql": EXACT_SQL})
    c.request("disconnect")
    assert r["success"], r
    wire = dict(zip(r["body"]["columns"], r["body"]["rows"][0]))
    rc, csvout, _ = raw("-p", pid, "query", EXACT_SQL, "--format", "csv")
    assert rc == 0
    return wire, cli, csvout.splitlines()[1].split(",")


@pytest.mark.parametrize("python", PYTHONS)
def test_numbers_read_back_exactly(python, spawn, tmp_path):
    """A REAL or INTEGER reaches the client as the same value, also when the target's locale
    writes decimal commas (a timestamp one ulp low made the flame graph miss its last sample)."""
    locales = tmp_path / "locales"
    locales.mkdir()
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(locales / "de_DE.UTF-8")],
                   check=True, capture_output=True)
    t = spawn(python, env={"LOCPATH": str(locales)})
    for phase in ("C", "de_DE"):
        wire, cli, fields = exact_numbers(t.pid)
        assert wire == EXACT, (phase, wire)
        # The CLI holds doubles: every REAL exact, integers exact up to 2^53.
        assert cli["ts"] == EXACT["ts"] and cli["tenth"] == 0.1 and cli["big"] == 1e300, cli
        assert float(fields[0]) == EXACT["ts"] and fields[1] == "0.1", fields
        if phase == "C":
            r = probing("-p", t.pid, "eval", "__import__('locale').setlocale("
                        "__import__('locale').LC_NUMERIC, 'de_DE.UTF-8')")
            assert r.returncode == 0 and "de_DE" in r.stdout, (r.stdout, r.stderr)
            assert probing("-p", t.pid, "eval", "'%.1f' % 1.5 if False else "
                           "__import__('locale').str(1.5)").stdout.strip() == "'1,5'"
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_errors(python, spawn):
    t = spawn(python)
    r = probing("-p", t.pid, "query", "SELECT func FRM python.backtrace")
    assert r.returncode == 1
    assert r.stderr == 'probing: error: SQL error: near "python": syntax error (at column 17)\n'
    r = probing("-p", t.pid, "query", "SELECT nope FROM python.threads")
    assert r.returncode == 1 and "no such column: nope" in r.stderr
    r = probing("-p", t.pid, "query", "SELECT * FROM python.nope")
    assert r.returncode == 1 and "no such table: python.nope" in r.stderr
    for sql, what in [("INSERT INTO system.process_history(ts) VALUES (1)", "INSERT"),
                      ("DROP TABLE system.process_history", "DROP TABLE"),
                      ("DROP TABLE python.threads", "DROP VIRTUAL TABLE"),
                      ("CREATE TABLE probing.mine(a)", "CREATE TABLE"),
                      ("CREATE TEMP VIEW v AS SELECT 1", "CREATE VIEW"),
                      ("ATTACH ':memory:' AS x", "ATTACH"),
                      ("PRAGMA query_only = 0", "PRAGMA"),
                      ("PRAGMA writable_schema = 1", "PRAGMA"),
                      ("DELETE FROM system.process_history", "DELETE"),
                      ("BEGIN", "TRANSACTION")]:
        r = probing("-p", t.pid, "query", sql)
        assert r.returncode == 1, sql
        assert r.stderr.startswith("probing: error: ") and READONLY in r.stderr, (sql, r.stderr)
        assert what in r.stderr, (sql, r.stderr)
    for sql in ("UPDATE probing.settings SET value = '1'", "DELETE FROM sqlite_master"):
        r = probing("-p", t.pid, "query", sql)
        assert r.returncode == 1 and READONLY in r.stderr, (sql, r.stderr)
    r = probing("-p", t.pid, "query", "SELECT 1; SELECT 2")
    assert r.returncode == 1 and "one statement per query" in r.stderr
    # Read-only pragmas are fine.
    assert len(q(t.pid, "SELECT * FROM pragma_table_info('threads')")) == 10  # python.threads' columns
    # Over the row limit: cut, a note on stderr, exit 0.
    probing("-p", t.pid, "config", "query.max_rows=5", check=True)
    rc, out, err = raw("-p", t.pid, "query", "SELECT * FROM probing.tables", "-f", "csv")
    assert rc == 0 and len(out.split("\r\n")) == 1 + 5 + 1
    assert err == "probing: note: result truncated to 5 rows (query.max_rows)\n"
    assert probing("-p", t.pid, "query", "SELECT 1", check=True).stderr == ""
    # A query that runs too long is interrupted; the probe serves on.
    probing("-p", t.pid, "config", "query.timeout_ms=300", check=True)
    t0 = time.time()
    r = probing("-p", t.pid, "query", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                "FROM c WHERE x < 1000000000) SELECT count(*) FROM c")
    assert r.returncode == 1, r.stdout
    assert r.stderr == "probing: error: query interrupted after 300 ms (query.timeout_ms)\n"
    assert time.time() - t0 < 5
    assert q(t.pid, "SELECT count(*) AS n FROM python.threads") == [{"n": 3}]
    # Usage errors exit 2.
    for args in (["query"], ["query", "SELECT 1", "--format", "xml"], ["query", "a", "b"],
                 ["tables", "a", "b"]):
        r = probing("-p", t.pid, *args)
        assert r.returncode == 2 and r.stderr.startswith("probing: error: "), args
    for cmd in ("query", "tables", "config"):
        r = probing(cmd, "--help", check=True)
        assert r.stdout.startswith("usage: probing -p PID %s" % cmd)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_gil_held_forever(python, spawn):
    t = spawn(python, "stuck_gil.py")
    t0 = time.time()
    r = probing("-p", t.pid, "query", "SELECT * FROM python.objects")
    assert r.returncode == 1
    assert ("probing: error: python.objects needs the GIL: it is held by thread %d" % t.pid
            in r.stderr and "was not released within 500 ms (gil_timeout_ms)" in r.stderr), r.stderr
    for table in ("python.modules", "python.gc"):
        r = probing("-p", t.pid, "query", "SELECT * FROM %s" % table)
        assert r.returncode == 1 and "%s needs the GIL: it is held by thread %d" % (
            table, t.pid) in r.stderr
    assert time.time() - t0 < 10
    rows = q(t.pid, "SELECT func, lineno, depth, locals FROM python.backtrace")
    assert rows[0] == {"func": "hold_gil_forever", "lineno": bp("stuck_gil.py", "stuck_call"),
                       "depth": 0, "locals": None}
    assert [r["func"] for r in rows[1:]] == ["main", "<module>"]
    th = q(t.pid, "SELECT * FROM python.threads ORDER BY is_main DESC")
    assert th[0]["thread_id"] == t.pid and th[0]["holds_gil"] == 1
    assert th[0]["name_source"] == "os" and th[0]["daemon"] is None and len(th) == 2
    assert t.proc.poll() is None
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_history(python, spawn, tmp_path):
    t = spawn(python)
    r = probing("-p", t.pid, "config", "history.interval_s=1", check=True)
    assert r.stdout == "history.interval_s = 1\n"
    time.sleep(3.5)
    rows = q(t.pid, "SELECT * FROM system.process_history ORDER BY ts")
    assert len(rows) >= 2, rows
    ts = [r["ts"] for r in rows]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)
    assert 0.5 < ts[-1] - ts[-2] < 2 and abs(ts[-1] - time.time()) < 3
    assert all(r["rss"] > 0 and r["threads"] >= 3 and r["fds"] > 0 for r in rows)
    # Retention by age.
    probing("-p", t.pid, "config", "history.max_age_s=1", check=True)
    time.sleep(1.5)
    rows = q(t.pid, "SELECT ts FROM system.process_history")
    assert 1 <= len(rows) <= 2 and all(time.time() - r["ts"] < 3 for r in rows)
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_history_from_python_collector(python, spawn):
    env = {"PYTHONPATH": os.path.join(ROOT, "probe", "python"),
           "PROBING_LIBDIR": os.path.join(BUILD, "lib", "probing"),
           "PROBING_HISTORY_MAX_ROWS": "100"}
    t = spawn(python, "history_fill.py", env=env, args=("1000",))
    rows = q(t.pid, "SELECT count(*) AS n, min(step) AS lo, max(step) AS hi, "
                    "sum(ts <= now()) AS past FROM perf.train_steps")
    assert rows == [{"n": 100, "lo": 900, "hi": 999, "past": 100}]
    g = q(t.pid, "SELECT loss, count(*) AS n FROM perf.train_steps GROUP BY loss ORDER BY loss")
    assert sum(r["n"] for r in g) == 100 and [r["loss"] for r in g] == list(range(7))
    tabs = q(t.pid, "SELECT column_name FROM probing.tables WHERE table_name = 'perf.train_steps'")
    assert [r["column_name"] for r in tabs] == ["ts", "step", "loss", "ms"]
    # The collector's declared index serves GROUP BY loss (no sort of the table).
    plan = q(t.pid, "EXPLAIN QUERY PLAN SELECT loss, count(*), avg(ms) FROM perf.train_steps "
                    "GROUP BY loss")
    assert any("USING COVERING INDEX" in r["detail"] for r in plan), plan
    # Its rollup by loss holds what GROUP BY loss gives over the 100 rows kept (900 evicted by
    # history.max_rows: subtracted, and each group's min/max read again).
    assert check_rollup(t.pid, "perf.train_steps", ["loss"], ["ms", "step"]) == 7
    roll = q(t.pid, "SELECT loss, rows, ms_min, step_min FROM perf.train_steps_by_loss "
                    "ORDER BY loss")
    assert roll[0] == {"loss": 0, "rows": 14, "ms_min": 3, "step_min": 903}, roll
    # A rollup declared once rows are there starts from them.
    r = probing("-p", t.pid, "eval",
                "import ctypes, probing\nlib = probing._load()\n"
                "err = ctypes.create_string_buffer(256)\n"
                "lib.probing_history_rollup(b'perf.train_steps', b'ms', b'loss', err, 256)",
                check=True)
    assert r.stdout.strip() == "0", r.stdout
    assert check_rollup(t.pid, "perf.train_steps", ["ms"], ["loss"]) == 100
    # A collector cannot shadow a built-in live table.
    r = probing("-p", t.pid, "eval",
                "import ctypes, probing\nlib = probing._load()\n"
                "err = ctypes.create_string_buffer(256)\n"
                "rc = lib.probing_history_define(b'perf.samples', b'a,b', err, 256)\n"
                "(rc, err.value.decode())", check=True)
    assert "a built-in live table has that name" in r.stdout and not r.stdout.startswith("(0"), r.stdout
    t.assert_responsive()
    t.check_output_clean()


def doc_columns():
    """{table: [columns]} for each column table of docs/tables.md (| column | type | meaning |),
    named by its section (## name (kind)) or the `schema.table`: line before it."""
    with open(os.path.join(ROOT, "docs", "tables.md")) as f:
        lines = f.read().splitlines()
    found, name, i = {}, None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^## ([a-z_.]+(?:, [a-z_.]+)*) \(", line)
        if m:
            names = m.group(1).split(", ")
            name = names[0] if len(names) == 1 else None
        m = re.match(r"^`([a-z_]+\.[a-z_]+)`:", line)
        if m:
            name = m.group(1)
        if line.startswith("| column | type |"):
            assert name, "docs/tables.md: a column table with no table name before line %d" % i
            cols, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                cols += lines[i].split("|")[1].strip().split(", ")
                i += 1
            found[name] = cols
            continue
        i += 1
    return found


@pytest.mark.parametrize("python", PYTHONS)
def test_documented_columns(python, spawn):
    """Every table docs/tables.md lists with its columns exists, with those columns in that
    order (probing.tables), rollups included."""
    t = spawn(python)
    docs = doc_columns()
    assert len(docs) >= 20 and "perf.samples_by_stack" in docs and \
        "python.torch_trace_by_module_stage" in docs, sorted(docs)
    have = {}
    for r in q(t.pid, "SELECT table_name, column_name FROM probing.tables"):
        have.setdefault(r["table_name"], []).append(r["column_name"])
    for table, cols in docs.items():
        assert have.get(table) == cols, (table, have.get(table), cols)
    kinds = {r["table_name"]: r["kind"] for r in q(t.pid, "SELECT DISTINCT table_name, kind "
                                                          "FROM probing.tables")}
    assert kinds["python.torch_trace_by_step"] == "rollup", kinds
    t.check_output_clean()


def doc_examples():
    """(sql, header line of the documented output) for each example in docs/tables.md."""
    with open(os.path.join(ROOT, "docs", "tables.md")) as f:
        text = f.read()
    found = re.findall(r"```sql\n(.*?)```\n+```\n(.*?)\n", text, re.S)
    assert len(found) >= 10, "docs/tables.md lost its examples"
    return [(sql.strip(), header) for sql, header in found]


@pytest.mark.parametrize("python", PYTHONS)
def test_docs_examples(python, spawn):
    t = spawn(python)
    probing("-p", t.pid, "config", "history.interval_s=1", check=True)
    time.sleep(1.5)
    for sql, header in doc_examples():
        r = probing("-p", t.pid, "query", sql)
        assert r.returncode == 0, (sql, r.stderr)
        assert r.stdout.splitlines()[0].split() == header.split(), (sql, r.stdout)
        assert not r.stdout.endswith("(0 rows)\n"), (sql, r.stdout)
    t.assert_responsive()
    t.check_output_clean()
