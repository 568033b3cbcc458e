#!/usr/bin/env bash
# tools/bullseye-root.sh: prints the path of a Debian 11 bullseye root (glibc 2.31) holding the
# build's packages, building it with mmdebstrap the first time. `make dist` builds the release
# inside it, so that the release needs no glibc symbol newer than 2.31 and links bullseye's static
# archives. Cached outside the clone in $PROBING_CACHE (default ~/.cache/probing), keyed by its
# package list, and reused. See docs/testing.md.
# Only bullseye and bullseye-updates are used, not bullseye-security: this machine's mirror has been
# seen to lack a file there (404), and the release's libraries are the point release's.
# --if-present: print the path only when the root is already built (nothing, status 0, when not).
# --bare: a user's node instead (make release-check): bullseye with its python3, venv and pip and
# none of the build's packages (no compiler, no -dev package), cached the same way.
# --vm: the aarch64 node of `make release-check-aarch64` (tools/release_check_aarch64.sh): the bare
# set plus Debian's arm64 kernel and its initramfs, booted under qemu-system-aarch64.
# PROBING_ARCH=arm64: an arm64 root (mmdebstrap through qemu-user-static's binfmt handler), cached
# under its own name: the build root of `make dist-aarch64`, or with --bare/--vm the aarch64 node.
set -euo pipefail
cache=${PROBING_CACHE:-$HOME/.cache/probing}
die() { echo "probing: error: bullseye-root: $*" >&2; exit 1; }
kind=bullseye-root
pkgs=build-essential,make,pkg-config,libcjson-dev,libuv1-dev,libsqlite3-dev,libedit-dev,libdw-dev,libelf-dev,zlib1g-dev,liblzma-dev,libbz2-dev,libzstd-dev,libbsd-dev,libmd-dev,libncurses-dev,libmicrohttpd-dev,libprotobuf-c-dev,protobuf-c-compiler,patchelf,xxd,python3,file
ready() { [ -x "$root/usr/bin/gcc" ] && [ -x "$root/usr/bin/patchelf" ]; }
if [ "${1:-}" = --bare ]; then
  shift
  kind=bullseye-bare
  pkgs=python3,python3-venv,python3-pip
  ready() { [ -x "$root/usr/bin/python3" ] && [ -f "$root/usr/lib/python3/dist-packages/pip/__init__.py" ]; }
elif [ "${1:-}" = --vm ]; then
  shift
  kind=bullseye-vm
  pkgs=python3,python3-venv,python3-pip,linux-image-arm64,procps
  ready() { [ -x "$root/usr/bin/python3" ] && ls "$root"/boot/initrd.img-* >/dev/null 2>&1; }
fi
arch=${PROBING_ARCH:-amd64}
case $arch in
  amd64) archopt=() ;;
  arm64)
    kind=$kind-arm64
    archopt=(--arch=arm64)
    # mmdebstrap runs the root's arm64 programs through binfmt_misc and qemu-user-static.
    [ -x /usr/bin/qemu-aarch64-static ] || die "qemu-user-static is missing: run 'make deps'"
    if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
      [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
        die "binfmt_misc is not mounted and cannot be: mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc"
      cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register 2>/dev/null ||
        die "cannot register qemu-aarch64 with binfmt_misc: run 'cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register' as root"
    fi ;;
  *) die "PROBING_ARCH=$arch: only amd64 and arm64 are known" ;;
esac
key=$(printf '%s bullseye v1' "$pkgs" | sha256sum | cut -c1-12)
root="$cache/$kind-$key"
if ready; then echo "$root"; exit 0; fi
[ "${1:-}" = --if-present ] && exit 0
[ "$(id -u)" -eq 0 ] || die "building the bullseye root needs root (mmdebstrap): run it as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
mkdir -p "$cache"
exec 9>"$cache/.$kind.lock"
flock 9
if ready; then echo "$root"; exit 0; fi
tmp="$cache/.building-$kind-$key"
rm -rf "$tmp"
echo "bullseye-root: building $root (mmdebstrap, a few minutes, once)" >&2
mmdebstrap --quiet --variant=apt "${archopt[@]}" --aptopt='Acquire::Check-Valid-Until "false"' \
  --include="$pkgs" bullseye "$tmp" \
  'deb http://deb.debian.org/debian bullseye main' \
  'deb http://deb.debian.org/debian bullseye-updates main' >&2 || { rm -rf "$tmp"; die "mmdebstrap failed: see its output above"; }
# Roots of another package list are stale now.
find "$cache" -maxdepth 1 -name "$kind-*" ! -name "$(basename "$root")" -exec rm -rf {} +
mv "$tmp" "$root"
echo "$root"
