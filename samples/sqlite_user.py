# SPDX-License-Identifier: MIT
# A target that uses SQLite itself, through Python's sqlite3 module (which links the system's
# libsqlite3): every 0.3 s its main thread writes a blob of SIZE bytes (first argument, default
# 40 MB) into an in-memory table and reads its length back, printing "tick N value=LENGTH".
# tests/e2e/test_sql_limits.py checks that the probe's SQLite limits never reach it.
import json
import os
import sqlite3
import sys
import time

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 40 * 1000 * 1000
db = sqlite3.connect(":memory:")
db.execute("CREATE TABLE t (b BLOB)")
print("ready " + json.dumps({"pid": os.getpid(), "sqlite": sqlite3.sqlite_version,
                             "size": SIZE}), flush=True)
i = 0
while True:
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t VALUES (randomblob(?))", (SIZE,))
    n = db.execute("SELECT length(b) FROM t").fetchone()[0]
    print("tick %d value=%d" % (i, n), flush=True)
    i += 1
    time.sleep(0.3)
