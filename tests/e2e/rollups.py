# SPDX-License-Identifier: MIT
"""The check the rollup tests share: a rollup table (docs/tables.md "Rollups") holds, for each
group, what the GROUP BY over its history table's rows gives (sums and means up to rounding)."""
import json
import math

from conftest import probing


def rows(pid, sql):
    r = probing("-p", pid, "query", sql, "--format", "json", check=True)
    return json.loads(r.stdout)


def group_by_sql(base, groups, values):
    """The GROUP BY that the rollup "<base>_by_<groups>" answers."""
    cols = ["max(ts) AS ts"] + ['"%s"' % g for g in groups] + ["count(*) AS rows"]
    for v in values:
        cols += ["count(%s) AS %s_count" % (v, v), "sum(%s) AS %s_sum" % (v, v),
                 "min(%s) AS %s_min" % (v, v), "max(%s) AS %s_max" % (v, v),
                 "avg(%s) AS %s_mean" % (v, v)]
    return "SELECT %s FROM %s GROUP BY %s" % (", ".join(cols), base, ", ".join(groups))


def same(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def check_rollup(pid, base, groups, values):
    """Asserts the rollup equals the GROUP BY over the rows; returns the groups' count."""
    name = "%s_by_%s" % (base, "_".join(groups))
    cols = [r["column_name"] for r in rows(pid, "SELECT column_name FROM probing.tables "
                                                "WHERE table_name = '%s'" % name)]
    want_cols = ["ts"] + list(groups) + ["rows"] + [
        "%s_%s" % (v, s) for v in values for s in ("count", "sum", "min", "max", "mean")]
    assert cols == want_cols, cols
    got = rows(pid, "SELECT * FROM %s" % name)
    want = rows(pid, group_by_sql(base, groups, values))
    key = lambda r: tuple(str(r[g]) for g in groups)  # noqa: E731
    got, want = sorted(got, key=key), sorted(want, key=key)
    assert len(got) == len(want) and want, (got, want)
    for g, w in zip(got, want):
        bad = [c for c in want_cols if not same(g[c], w[c])]
        assert not bad, (bad, g, w)
    return len(got)
