#!/usr/bin/env bash
# Splits the probe's sources by what they are built against: `tools/probe_sources.sh py` prints
# the sources that include CPython's headers (directly or through a header of probe/ that does),
# built once per CPython minor version; `plain` prints the rest, built once. The Makefile builds
# `plain` without CPython's include path, so a source put in the wrong list fails to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
# Headers of probe/ that reach <Python.h>, to a fixed point.
py_headers=$(grep -rl --include='*.h' '^#include <Python.h>' probe || true)
while :; do
  pat=$(for h in $py_headers; do printf '%s\n' "${h#probe/}" "$(basename "$h")"; done | sort -u |
        sed 's/[.]/[.]/g; s/^/#include "(.*\/)?/; s/$/"/' | paste -sd'|' -)
  more=$(grep -rlE --include='*.h' "^(#include <Python.h>|$pat)" probe 2>/dev/null | sort -u || true)
  [ "$more" = "$(printf '%s\n' $py_headers | sort -u)" ] && break
  py_headers=$more
done
pat="^#include <Python.h>"
[ -n "$py_headers" ] && pat="$pat|$(for h in $py_headers; do printf '%s\n' "${h#probe/}" "$(basename "$h")"; done |
  sort -u | sed 's/[.]/[.]/g; s/^/#include "(.*\/)?/; s/$/"/' | paste -sd'|' -)"
all=$(find probe -name '*.c' -not -path 'probe/python/*' | sort)
py=$(grep -lE "$pat" $all | sort)
case "${1:-}" in
  py) printf '%s\n' $py ;;
  plain) comm -23 <(printf '%s\n' $all) <(printf '%s\n' $py) ;;
  *) echo "usage: tools/probe_sources.sh py|plain" >&2; exit 2 ;;
esac
