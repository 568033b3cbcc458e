#!/usr/bin/env bash
# tools/trixie-root.sh: prints the path of a bare Debian 13 trixie root (glibc 2.41, python3.13):
# a user's node for `make release-check`, with only python3, python3-venv and python3-pip (no
# compiler, no -dev package), built with mmdebstrap the first time and cached outside the clone
# in $PROBING_CACHE (default ~/.cache/probing), keyed by its package list, like
# tools/bullseye-root.sh --bare. See docs/testing.md.
# --if-present: print the path only when the root is already built (nothing, status 0, when not).
set -euo pipefail
cache=${PROBING_CACHE:-$HOME/.cache/probing}
die() { echo "probing: error: trixie-root: $*" >&2; exit 1; }
kind=trixie-bare
pkgs=python3,python3-venv,python3-pip
ready() { [ -x "$root/usr/bin/python3" ] && [ -f "$root/usr/lib/python3/dist-packages/pip/__init__.py" ]; }
key=$(printf '%s trixie v1' "$pkgs" | sha256sum | cut -c1-12)
root="$cache/$kind-$key"
if ready; then echo "$root"; exit 0; fi
[ "${1:-}" = --if-present ] && exit 0
[ "$(id -u)" -eq 0 ] || die "building the trixie root needs root (mmdebstrap): run it as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
mkdir -p "$cache"
exec 9>"$cache/.$kind.lock"
flock 9
if ready; then echo "$root"; exit 0; fi
tmp="$cache/.building-$kind-$key"
rm -rf "$tmp"
echo "trixie-root: building $root (mmdebstrap, about a minute, once)" >&2
mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
  --include="$pkgs" trixie "$tmp" \
  'deb http://deb.debian.org/debian trixie main' \
  'deb http://deb.debian.org/debian trixie-updates main' >&2 || { rm -rf "$tmp"; die "mmdebstrap failed: see its output above"; }
# Roots of another package list are stale now.
find "$cache" -maxdepth 1 -name "$kind-*" ! -name "$(basename "$root")" -exec rm -rf {} +
mv "$tmp" "$root"
echo "$root"
