#!/bin/sh
# SPDX-License-Identifier: MIT
# Stands in for the probing CLI (set as probing.path) in unit tests: logs its arguments (and
# $PROBING_TOKEN) to $FAKE_CLI_LOG, one run per line, then answers as $FAKE_CLI_MODE says.
printf '%s|token=%s\n' "$*" "${PROBING_TOKEN:-}" >> "${FAKE_CLI_LOG:-/dev/null}"
# the arguments after the target (-p PID / -t HOST:PORT)
case "$1" in -p|-t) tgt="$2"; shift 2 ;; *) tgt="" ;; esac
case "${FAKE_CLI_MODE:-ok}:$1" in
  ok:inject)
    echo "probe loaded in $tgt (CPython 3.12.4), socket /tmp/probing-1000/$tgt.sock" ;;
  already:inject)
    echo "probe already loaded in $tgt (CPython 3.9.19), socket /tmp/probing-0/7.sock" ;;
  notpython:inject)
    echo "probing: error: process $tgt (sleep) is not a Python process: give the pid of a python program" >&2
    exit 1 ;;
  garbage:inject)
    echo "hello" ;;
  silent:*)
    exit 3 ;;
  *:debug)
    printf 'Thread 42 "MainThread" (main)\n  #0 main (/app/x.py:3)\n' ;;
  *:query)
    if [ "$2" = "SELECT bad" ]; then
      echo 'probing: error: SQL error: near "bad": syntax error (at column 8)' >&2; exit 1
    fi
    printf 'name,native_id,note\r\nMainThread,42,"a ""quoted"", <b>bold</b>\r\nline2"\r\nworker,,\r\n'
    echo "probing: note: result truncated to 2 rows (query.max_rows)" >&2 ;;
  perffail:perf)
    if [ "$2" = "--cc" ] && [ "$3" = "--stop" ]; then echo "stopped"; exit 0; fi
    echo "probing: error: perf --cc: the target exited while sampling" >&2
    exit 1 ;;
  noflame:perf)
    if [ "$2" = "--cc" ] && [ "$3" = "--stop" ]; then echo "stopped"; exit 0; fi
    echo "sampling" ;;
  noflame:flamegraph)
    echo "probing: error: flamegraph: no samples in process $tgt: run 'probing -p $tgt perf --cc' first" >&2
    exit 1 ;;
  running:perf)
    if [ "$2" = "--cc" ] && [ "$3" = "--stop" ]; then echo "stopped"; exit 0; fi
    echo "probing: error: perf --cc: sampling is already running (cpu mode, 100 Hz): stop it first with 'probing perf --stop'" >&2
    exit 1 ;;
  idle:perf|idlewall:perf)
    # perf --cc --stop | perf --cc --mode cpu|wall --duration S: an idle process has (almost) no
    # CPU samples; in wall mode its sleeping threads are sampled (none for idlewall)
    if [ "$3" = "--stop" ]; then echo "perf --cc stopped"; exit 0; fi
    case "$FAKE_CLI_MODE:$4" in
      *:cpu) n=1 ;; idle:wall) n=190 ;; *) n=0 ;;
    esac
    echo "perf --cc: $n samples of 2 threads in 1.0 s ($4 mode, 100 Hz); 0 missed, 0 lost; sampler CPU 0.006 s" ;;
  idlerunning:perf)
    echo "probing: error: perf --cc: sampling is already running (cpu mode, 100 Hz): stop it first with 'probing perf --stop'" >&2
    exit 1 ;;
  idlerunning:flamegraph)
    echo "probing: error: flamegraph: no samples in process $tgt: run 'probing -p $tgt perf --cc' first" >&2
    exit 1 ;;
  *:perf)
    if [ "$3" = "--stop" ]; then echo "perf --cc stopped"; exit 0; fi
    echo "perf --cc: 250 samples of 2 threads in 2.0 s (cpu mode, 100 Hz); 0 missed, 0 lost; sampler CPU 0.010 s" ;;
  *:flamegraph)
    # flamegraph --format svg -o FILE
    out=""
    while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
    printf '<?xml version="1.0" standalone="no"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="100"><script>function init(){}</script><rect width="10" height="10"/><text>main</text></svg>\n' > "$out" ;;
  *)
    echo "probing: error: fake CLI: unexpected command '$*'" >&2; exit 2 ;;
esac
