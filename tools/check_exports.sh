#!/usr/bin/env bash
# The probe is a guest in someone else's process: each library given exports exactly the entry
# points probe/probe.h declares (PROBE_EXPORT), no more (a global symbol could interpose on the
# host's own) and no fewer (the Python package calls them). Usage: check_exports.sh LIB...
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(sed -n 's/^PROBE_EXPORT [^(]*[ *]\(probing_[a-z_]*\)(.*/\1/p' probe/probe.h | sort | tr '\n' ' ')
[ -n "$want" ] || { echo "probing: error: no PROBE_EXPORT declaration found in probe/probe.h" >&2; exit 1; }
for l in "$@"; do
  got=$(nm -D --defined-only "$l" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
        grep -vx -e _init -e _fini -e _edata -e _end -e __bss_start | sort | tr '\n' ' ')
  if [ "$got" != "$want" ]; then
    echo "probing: error: $l exports '$got' but probe/probe.h declares '$want': make the others static or hidden, or declare them there" >&2
    exit 1
  fi
done
