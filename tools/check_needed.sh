#!/usr/bin/env bash
# The probe loads into processes whose root has none of our libraries (a container): each library
# given may NEED only the C library, libm and the loader (and, on glibc < 2.34, libpthread, libdl,
# librt: glibc's own), or a file carried beside it (found
# through a run path of exactly $ORIGIN, and checked the same way). Usage: check_needed.sh LIB...
# NEEDED_ALLOW: more names (shell patterns) allowed, for sanitized builds (make asan).
set -euo pipefail -f
base='libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1'
allowed() {
  local p
  case " $base " in *" $1 "*) return 0;; esac
  for p in ${NEEDED_ALLOW:-}; do
    # shellcheck disable=SC2254
    case "$1" in $p) return 0;; esac
  done
  return 1
}
check() {
  local l=$1 dir needed runpath n
  dir=$(dirname "$l")
  needed=$(readelf -d "$l" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
  runpath=$(readelf -d "$l" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
  if [ -n "$runpath" ] && [ "$runpath" != '$ORIGIN' ]; then
    echo "probing: error: $l has run path '$runpath': only \$ORIGIN (files carried beside it) may be searched" >&2
    exit 1
  fi
  for n in $needed; do
    allowed "$n" && continue
    if [ -f "$dir/$n" ] && [ "$runpath" = '$ORIGIN' ]; then
      check "$dir/$n"
      continue
    fi
    echo "probing: error: $l needs $n, which a container's root may not have: link it statically (hidden) or carry it beside the probe (Makefile PROBE_LINK_LIBS)" >&2
    exit 1
  done
}
for l in "$@"; do check "$l"; done
