# SPDX-License-Identifier: MIT
"""probing -p PID config [KEY[=VALUE]] on every CPython: list, get, set (and the change seen in
probing.settings and in behaviour), a bad value naming the allowed range, an unknown key, and
PROBING_* environment variables of the target setting the same keys at start."""
import json

import pytest

from conftest import PYTHONS, probing

KEYS = {"gil_timeout_ms", "query.timeout_ms", "query.max_rows", "query.max_bytes",
        "store.max_memory_bytes",
        "history.max_rows", "history.max_age_s", "history.interval_s"}


def settings(pid):
    r = probing("-p", pid, "query", "SELECT name, value FROM probing.settings WHERE name IN "
                "('query.max_rows', 'gil_timeout_ms', 'history.max_age_s')", "-f", "json",
                check=True)
    return {x["name"]: x["value"] for x in json.loads(r.stdout)}


@pytest.mark.parametrize("python", PYTHONS)
def test_config_list_get_set(python, spawn):
    t = spawn(python)
    out = probing("-p", t.pid, "config", check=True).stdout.splitlines()
    assert out[0].split() == ["name", "value", "default", "allowed", "description"]
    listed = {l.split()[0]: l.split()[1:3] for l in out[2:]}
    assert KEYS <= set(listed)
    assert listed["query.max_rows"] == ["10000", "10000"]
    r = probing("-p", t.pid, "config", "query.max_rows", check=True)
    assert r.stdout.splitlines()[0] == "query.max_rows = 10000"
    assert "(default 10000; allowed 1 to 10000000)" in r.stdout
    r = probing("-p", t.pid, "config", "query.max_rows=3", check=True)
    assert r.stdout == "query.max_rows = 3\n"
    assert settings(t.pid)["query.max_rows"] == "3"
    r = probing("-p", t.pid, "query", "SELECT * FROM probing.settings")
    assert r.returncode == 0 and r.stdout.endswith("(3 rows)\n")
    assert "truncated to 3 rows (query.max_rows)" in r.stderr
    # Bad values name the allowed range; nothing changes.
    for kv, msg in [("query.max_rows=0", "query.max_rows: 0 is out of range: expected 1 to "
                                         "10000000"),
                    ("query.max_rows=ten", "query.max_rows: 'ten' is not an integer: expected "
                                           "1 to 10000000"),
                    ("gil_timeout_ms=", "gil_timeout_ms: '' is not an integer")]:
        r = probing("-p", t.pid, "config", kv)
        assert r.returncode == 1 and r.stderr.startswith("probing: error: config: " + msg), \
            r.stderr
    assert settings(t.pid)["query.max_rows"] == "3"
    for kv in ("nope", "nope=1"):
        r = probing("-p", t.pid, "config", kv)
        assert r.returncode == 1
        assert r.stderr == ("probing: error: config: unknown setting 'nope': see 'probing "
                            "config' for the list\n")
    for args in (["a", "b"], ["=1"]):
        assert probing("-p", t.pid, "config", *args).returncode == 2
    t.assert_responsive()
    t.check_output_clean()


@pytest.mark.parametrize("python", PYTHONS)
def test_config_from_environment(python, spawn):
    t = spawn(python, env={"PROBING_QUERY_MAX_ROWS": "4", "PROBING_GIL_TIMEOUT_MS": "750",
                           "PROBING_HISTORY_MAX_AGE_S": "0"})  # out of range: ignored
    s = settings(t.pid)
    assert (s["query.max_rows"], s["gil_timeout_ms"], s["history.max_age_s"]) == (
        "4", "750", "3600")
    r = probing("-p", t.pid, "query", "SELECT name FROM probing.settings", "-f", "csv")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 5
    assert r.stderr == "probing: note: result truncated to 4 rows (query.max_rows)\n"
    t.assert_responsive()
    t.check_output_clean()
