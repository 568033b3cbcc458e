#!/usr/bin/env bash
# tools/sid-root.sh: prints the path of a Debian sid root (our container test bed: CPython 3.13.x,
# 3.14, 3.15 with their headers, and PyTorch 2.x for sid's python3), building it with mmdebstrap
# the first time. The root is cached outside the clone in $PROBING_CACHE (default
# ~/.cache/probing), keyed by its package list, and reused. sid's binaries need a newer glibc than
# Debian 12's, so they run only inside that root. See docs/testing.md.
# --if-present: print the path only when the root is already built (nothing, status 0, when not).
set -euo pipefail
cache=${PROBING_CACHE:-$HOME/.cache/probing}
die() { echo "probing: error: sid-root: $*" >&2; exit 1; }
pkgs=python3.13,python3.14,python3.15,libpython3.13-dev,libpython3.14-dev,libpython3.15-dev,python3-torch,procps
key=$(printf '%s sid v1' "$pkgs" | sha256sum | cut -c1-12)
root="$cache/sid-root-$key"
if [ -x "$root/usr/bin/python3.14" ]; then echo "$root"; exit 0; fi
[ "${1:-}" = --if-present ] && exit 0
[ "$(id -u)" -eq 0 ] || die "building the sid root needs root (mmdebstrap): run it as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
mkdir -p "$cache"
exec 9>"$cache/.sid-root.lock"
flock 9
if [ -x "$root/usr/bin/python3.14" ]; then echo "$root"; exit 0; fi
tmp="$cache/.building-sid-$key"
rm -rf "$tmp"
echo "sid-root: building $root (mmdebstrap, a few minutes, once)" >&2
mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
  --include="$pkgs" sid "$tmp" >&2 || { rm -rf "$tmp"; die "mmdebstrap failed: see its output above"; }
# Roots of another package list are stale now.
find "$cache" -maxdepth 1 -name 'sid-root-*' ! -name "$(basename "$root")" -exec rm -rf {} +
mv "$tmp" "$root"
echo "$root"
