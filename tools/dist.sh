#!/usr/bin/env bash
# tools/dist.sh: `make dist`. Builds the release inside the Debian 11 bullseye root
# (tools/bullseye-root.sh: glibc 2.31 and its libraries), so that it runs on any glibc >= the
# wheel's tag, then packs it (tools/dist_pack.py: libraries carried under private names with an
# $ORIGIN run path) into build/dist/: probing-VERSION-linux-x86_64.tar.gz and one wheel
# probing-VERSION-py3-none-manylinux_2_XX_x86_64.whl. The probe is built for every CPython minor
# 3.8-3.15 whose headers this machine has (tools/pythons.sh --build: pyenv's, then the sid
# root's for 3.14/3.15, built when missing). Needs root (unshare, chroot). See docs/testing.md.
# DIST_ARCH=aarch64 (`make dist-aarch64`): the same release for linux-aarch64 in build/dist-aarch64,
# cross-built here (gcc-aarch64-linux-gnu) against an arm64 bullseye root holding the same packages
# (PROBING_ARCH=arm64 tools/bullseye-root.sh, made through qemu-user-static): compiling under
# qemu-user would take many times as long. The CPython headers are the same (their pyconfig.h is
# an x86-64 build's: every size and alignment the probe reads is the same on aarch64's LP64).
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "probing: error: dist: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "building the release needs root (a chroot into the bullseye root): run it as root"
arch=${DIST_ARCH:-x86_64}
case $arch in
  x86_64) root=$(tools/bullseye-root.sh) work=build/dist-work variant=dist-bullseye out=build/dist ;;
  aarch64)
    command -v aarch64-linux-gnu-gcc >/dev/null || die "aarch64-linux-gnu-gcc is missing: run 'make deps'"
    root=$(PROBING_ARCH=arm64 tools/bullseye-root.sh) work=build/dist-work-aarch64 variant=dist-bullseye-aarch64 out=build/dist-aarch64 ;;
  *) die "DIST_ARCH=$arch: only x86_64 and aarch64 are known" ;;
esac
tools/sid-root.sh >/dev/null
rm -rf "$work" "$out"
mkdir -p "$work/pyinc"
# CPython's headers, copied where the root sees them (/src/build/dist-work/pyinc/python3.X;
# Debian's multiarch pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>, found through
# -idirafter on pyinc/).
# DIST_HEADERS="3.8=DIR ...": the headers (a CPython's include/python3.X) of a minor this machine
# has no interpreter of, to build its probe too; a minor found by tools/pythons.sh wins.
py_lines() {
  local kv seen
  seen=$(PYTHONS="${PYTHONS:-}" tools/pythons.sh --build 2>/dev/null) || true
  [ -n "$seen" ] && echo "$seen"
  for kv in ${DIST_HEADERS:-}; do
    [ -f "${kv#*=}/Python.h" ] || die "DIST_HEADERS: no Python.h in ${kv#*=}"
    grep -q "^${kv%%=*} " <<<"$seen" || echo "${kv%%=*} ${kv#*=} none"
  done
}
lines=""
while read -r minor inc _exe; do
  cp -rLp "$inc" "$work/pyinc/python$minor"
  multi=$(dirname "$(dirname "$inc")")/include/x86_64-linux-gnu/python$minor
  if [ -d "$multi" ]; then
    mkdir -p "$work/pyinc/$arch-linux-gnu"
    cp -rLp "$multi" "$work/pyinc/$arch-linux-gnu/python$minor"
  fi
  lines="$lines $minor /src/$work/pyinc/python$minor /usr/bin/python3"
done < <(py_lines)
[ -n "$lines" ] || die "no CPython headers found (tools/pythons.sh --build): install pyenv's 3.8-3.13"
src=$(pwd)
if [ "$arch" = aarch64 ]; then
  # Cross-built here: the compiler and pkg-config see the arm64 root as their sysroot.
  echo "dist: cross-building for aarch64 against $root (minors:$(echo "$lines" | awk '{for(i=1;i<=NF;i+=3) printf " %s", $i}'))" >&2
  lines=${lines//\/src\//$src/}
  # A sysroot's absolute links (usr/lib/aarch64-linux-gnu/libpthread.so -> /lib/...) would point
  # into this machine: the linker would skip them for the static archives. Made relative (once).
  find "$root/usr/lib" "$root/lib" -type l -lname '/*' -print0 | while IFS= read -r -d '' l; do
    t=$(readlink "$l")
    ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$root$t")" "$l"
  done
  # libgcc_s: bullseye's (gcc 10), not the cross compiler's (gcc 12 needs glibc 2.35).
  lib="$root/lib/aarch64-linux-gnu"
  env PKG_CONFIG_SYSROOT_DIR="$root" \
    PKG_CONFIG_LIBDIR="$root/usr/lib/aarch64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig" \
    make -j"${JOBS:-2}" --no-print-directory VARIANT="$variant" PYTHONS=none "PY_LINES=$lines" \
      CC="aarch64-linux-gnu-gcc --sysroot=$root" OBJCOPY=aarch64-linux-gnu-objcopy \
      LDFLAGS_EXTRA="-L$lib -Wl,-rpath-link,$lib:$root/usr/lib/aarch64-linux-gnu" \
      CHECKS="check-exports check-needed check-signal-safety" all ||
    die "the aarch64 cross-build failed: see its output above"
  DIST_ARCH=aarch64 /usr/bin/python3 tools/dist_pack.py "build/$variant" "$root" "$out" "$work/pyinc" $(echo "$lines" | awk '{for(i=1;i<=NF;i+=3) printf " %s", $i}')
  exit 0
fi
# The checks of the binaries run on the release's build; those of the sources (layers, names:
# Universal Ctags, which the build roots do not hold) run on the tree's own build.
echo "dist: building in $root (minors:$(echo "$lines" | awk '{for(i=1;i<=NF;i+=3) printf " %s", $i}'))" >&2
mkdir -p "$root/src"
# A private mount namespace: the binds vanish with it, the cached root keeps nothing of ours but
# an empty /src. make runs as root inside the root; the outputs are ours (the tree is bound).
unshare -m --propagation private bash -c '
  set -e
  root=$1 src=$2; shift 2
  mount --bind "$src" "$root/src"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 \
    make -C /src -j"${JOBS:-2}" --no-print-directory VARIANT='"$variant"' PYTHONS=none "PY_LINES=$*" \
      CHECKS="check-exports check-needed check-signal-safety" all
' dist "$root" "$src" $lines || die "the build in the bullseye root failed: see its output above"
/usr/bin/python3 tools/dist_pack.py "build/$variant" "$root" build/dist "$work/pyinc" $(echo "$lines" | awk '{for(i=1;i<=NF;i+=3) printf " %s", $i}')
