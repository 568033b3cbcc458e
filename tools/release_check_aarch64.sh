#!/usr/bin/env bash
# tools/release_check_aarch64.sh: `make release-check-aarch64`. The aarch64 release
# (build/dist-aarch64, `make dist-aarch64`) installed and run on a real aarch64 kernel: an emulated
# machine (qemu-system-aarch64, `-M virt -cpu max`, TCG: no KVM for arm on x86) booting Debian 11's
# arm64 kernel and initramfs on a Debian 11 arm64 root with only python3, python3-venv,
# python3-pip and procps (PROBING_ARCH=arm64 tools/bullseye-root.sh --vm, made once with mmdebstrap
# through qemu-user-static, cached in $PROBING_CACHE). ptrace and /proc/PID/mem need that real
# kernel: qemu-user emulates neither for a traced process.
# Inside, as PID 1 (tools/release_check_vm_init.sh) then as the non-root user nobody, the same
# checks as `make release-check` (tools/release_check.sh --run) against the root's python3 (3.9):
# the installs of RELEASE_CHECK_INSTALLS (default "venv tar": pip --user adds another two minutes
# of emulation), then inject, debug --dump (--no-inject, --native, the GIL held), query, eval,
# perf --cc + flamegraph, the DAP breakpoint, probing.init() and PROBING=1; then the sampler
# started, drawn and stopped RELEASE_CHECK_PERF_ROUNDS times (10) on one target, which must live.
# The root disk is an ext4 image of the cached root made for each run (mkfs.ext4 -d: no loop
# device, no mount) and booted with snapshot=on; a second disk holds the release and the scripts.
# The console is the output: one line per check, the table copied into
# build/dist-aarch64/release-check.tsv. Root only (the root's files are root's). Exit 1 on a
# failed check, 2 when the machine did not finish (RELEASE_CHECK_VM_TIMEOUT seconds, default 1800).
set -euo pipefail
die() { echo "probing: error: release-check-aarch64: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (the root image holds root's files): run it as root"
cd "$(dirname "$0")/.."
dist=${RELEASE_DIR:-build/dist-aarch64}
whl=$(ls "$dist"/probing-*-py3-none-manylinux_*_aarch64.whl 2>/dev/null | head -1)
tgz=$(ls "$dist"/probing-*-linux-aarch64.tar.gz 2>/dev/null | head -1)
[ -n "$whl" ] && [ -n "$tgz" ] || die "no aarch64 release in $dist: run 'make dist-aarch64' first"
for t in qemu-system-aarch64 mkfs.ext4; do
  command -v $t >/dev/null || die "$t is missing: run 'make deps'"
done
t_start=$(date +%s)
root=$(PROBING_ARCH=arm64 tools/bullseye-root.sh --vm) || die "no arm64 root (tools/bullseye-root.sh --vm failed above)"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
for f in usr/bin/gcc usr/bin/cc usr/include/python3.9/Python.h; do
  [ ! -e "$root/$f" ] || die "the arm64 root $root has $f: it must hold none of the build's packages"
done
tmp=$(mktemp -d /var/tmp/probing-release-check-aarch64.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT
# The root's image, with the check's PID 1 (no systemd: its start costs a minute of emulation).
mkdir -p "$tmp/rc"
cp tools/release_check_vm_init.sh "$tmp/init"
chmod 755 "$tmp/init"
size=$(( $(du -sm "$root" | cut -f1) + 1536 ))
mkfs.ext4 -q -F -L probing-root -d "$root" "$tmp/root.img" "${size}M" || die "mkfs.ext4 -d of $root failed"
debugfs -w -R "write $tmp/init /probing-init" "$tmp/root.img" >/dev/null 2>&1 &&
  debugfs -w -R "set_inode_field /probing-init mode 0100755" "$tmp/root.img" >/dev/null 2>&1 ||
  die "cannot write /probing-init into the root image (debugfs, e2fsprogs)"
# The check's disk: the release, the checks, the DAP client.
cp "$whl" "$tgz" tools/release_check.sh tools/release_dap.py "$tmp/rc/"
# The linux-arm64 .vsix (make vsix-linux-arm64), when built: its bundled CLI is checked too.
vsix=$(ls build/probing-linux-arm64-*.vsix 2>/dev/null | head -1 || true)
[ -z "$vsix" ] || cp "$vsix" "$tmp/rc/"
printf "RELEASE_CHECK_INSTALLS='%s'\nRELEASE_CHECK_PERF_ROUNDS=%d\n" "${RELEASE_CHECK_INSTALLS:-venv tar}" \
  "${RELEASE_CHECK_PERF_ROUNDS:-10}" >"$tmp/rc/env"
mkfs.ext4 -q -F -L probing-rc -d "$tmp/rc" "$tmp/rc.img" 128M || die "mkfs.ext4 -d of the check's disk failed"
echo "release-check-aarch64: images made in $(($(date +%s) - t_start)) s ($(basename "$kernel"), root ${size} MB)"
log=$dist/release-check-aarch64.log
t_boot=$(date +%s)
# -cpu max: every feature QEMU emulates (pointer authentication, as on Grace's Neoverse V2);
# pauth-impdef: its cheaper hash. No network; the console on stdio.
rc=0
timeout "${RELEASE_CHECK_VM_TIMEOUT:-1800}" qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp 2 -m 2G \
  -accel tcg,thread=multi -nographic -no-reboot -nic none \
  -kernel "$kernel" -initrd "$initrd" \
  -append "root=/dev/vda rw console=ttyAMA0 init=/probing-init panic=-1 quiet" \
  -drive file="$tmp/root.img",format=raw,if=virtio,snapshot=on \
  -drive file="$tmp/rc.img",format=raw,if=virtio \
  </dev/null 2>&1 | tr -d '\r' | tee "$log" || rc=$?
secs=$(($(date +%s) - t_boot))
sed -n '/^probing-vm: results begin$/,/^probing-vm: results end$/p' "$log" | sed '1d;$d' >"$dist/release-check.tsv"
status=$(sed -n 's/^probing-vm: exit \([0-9]*\)$/\1/p' "$log" | tail -1)
echo "release-check-aarch64: $(grep -c 'ok$' "$dist/release-check.tsv" || true) ok, $(grep -c 'FAILED$' "$dist/release-check.tsv" || true) failed ($dist/release-check.tsv); the machine ran $secs s, $(($(date +%s) - t_start)) s in all"
[ -n "$status" ] || { echo "probing: error: release-check-aarch64: the machine did not finish (exit $rc, $secs s): see $log" >&2; exit 2; }
[ "$status" -eq 0 ] || die "checks failed (above; $log)"
echo "release-check-aarch64: all passed"
