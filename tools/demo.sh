#!/usr/bin/env bash
# make demo: start the bundled toy training job (samples/train.py), attach to it by pid with
# no restart, dump every thread's stack (with locals), query it with SQL, sample it for two
# seconds and draw a flame graph, list probed processes, then stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build/release}
PY=${DEMO_PYTHON:-/usr/bin/python3}
out=$(mktemp)
"$PY" samples/train.py >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q "training started" "$out" && break; sleep 0.05; done
sleep 0.5
echo "\$ probing -p $pid inject"
"$B/bin/probing" -p "$pid" inject
echo
echo "\$ probing -p $pid debug --dump"
"$B/bin/probing" -p "$pid" debug --dump
echo
echo "\$ probing -p $pid debug --dump --locals   (main thread only shown here)"
"$B/bin/probing" -p "$pid" debug --dump --locals --json |
  "$PY" -c 'import json,sys; d=json.load(sys.stdin); t=[t for t in d["threads"] if t["main"]][0]
for f in t["frames"]:
    print("  %s (%s:%d)" % (f["name"], f["file"], f["line"]))
    for l in f.get("locals", []): print("      %s = %s" % (l["name"], l["value"]))'
echo
q="SELECT t.name, b.depth, b.func, b.lineno FROM python.threads t JOIN python.backtrace b ON b.thread_id = t.native_id ORDER BY t.name, b.depth"
echo "\$ probing -p $pid query \"$q\""
"$B/bin/probing" -p "$pid" query "$q"
echo
q="SELECT pid, human_bytes(rss) AS rss, threads, open_fds FROM system.process"
echo "\$ probing -p $pid query \"$q\""
"$B/bin/probing" -p "$pid" query "$q"
echo
echo "\$ probing -p $pid perf --cc --mode wall --duration 2   (sample every thread, native and Python)"
"$B/bin/probing" -p "$pid" perf --cc --mode wall --duration 2
echo
echo "\$ probing -p $pid flamegraph -o $B/demo-flamegraph.svg"
"$B/bin/probing" -p "$pid" flamegraph -o "$B/demo-flamegraph.svg"
echo "(open it in a browser: click to zoom, search box at the top right)"
echo
echo "\$ probing -p $pid perf --stop"
"$B/bin/probing" -p "$pid" perf --stop
echo
echo "\$ probing list"
"$B/bin/probing" list
echo
echo "the training job kept running: $(grep -c '^step' "$out") progress lines so far"
