#!/bin/sh
# tools/release_check_vm_init.sh: PID 1 of the emulated aarch64 machine of
# tools/release_check_aarch64.sh (written into its root image as /probing-init). Mounts what a
# booted system has, copies the check's disk (/dev/vdb: the release, tools/release_check.sh,
# tools/release_dap.py) to /var/tmp/rc, runs `release_check.sh --run aarch64` there against the
# root's python3, prints its table between two marker lines, and powers the machine off.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# mount(2) through python3's ctypes: the root is Debian's essential set, which has no mount(8).
python3 - <<'PY' || echo "probing-vm: mounting failed"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for src, dst, fs, flags, data in [
        ("proc", "/proc", "proc", 0, ""), ("sysfs", "/sys", "sysfs", 0, ""),
        ("devtmpfs", "/dev", "devtmpfs", 0, ""), ("devpts", "/dev/pts", "devpts", 0, ""),
        ("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777"), ("tmpfs", "/tmp", "tmpfs", 0, "mode=1777"),
        ("tmpfs", "/run", "tmpfs", 0, "mode=755"), ("/dev/vdb", "/mnt/rc", "ext4", 1, "")]:  # 1: MS_RDONLY
    os.makedirs(dst, exist_ok=True)
    if libc.mount(src.encode(), dst.encode(), fs.encode(), flags, data.encode()) != 0:
        e = ctypes.get_errno()
        if e != 16:  # EBUSY: already there (devtmpfs)
            print("probing-vm: mount %s on %s: %s" % (src, dst, os.strerror(e)))
PY
hostname probing-aarch64 2>/dev/null || echo probing-aarch64 >/proc/sys/kernel/hostname
rm -rf /var/tmp/rc
cp -a /mnt/rc /var/tmp/rc
chmod 755 /var/tmp/rc
. /var/tmp/rc/env
export RELEASE_CHECK_INSTALLS
echo "probing-vm: $(uname -srm), $(nproc) CPUs, $(sed -n 's/^MemTotal: *//p' /proc/meminfo), $(ldd --version | sed -n '1s/.* //p') glibc, $(python3 -V), ptrace_scope $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo absent), $(grep -o 'paca\|pacg' /proc/cpuinfo | sort -u | tr '\n' ' ')"
t0=$(date +%s)
rc=0
env -i PATH=$PATH LANG=C.UTF-8 RELEASE_CHECK_INSTALLS="$RELEASE_CHECK_INSTALLS" \
  /bin/bash /var/tmp/rc/release_check.sh --run aarch64 /var/tmp/rc /usr/bin/python3 /usr/bin/python3 /usr/bin/python3 || rc=$?
echo "probing-vm: checks took $(($(date +%s) - t0)) s"
# What the user sees: the tarball's CLI run by nobody against a fresh target of the same user,
# each command's output as printed (the checks above only match it).
cli=$(ls -d /var/tmp/rc/tar/probing-*/bin/probing 2>/dev/null | head -1)
if [ -n "$cli" ]; then
  as() { setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin HOME=/var/tmp/rc/home LANG=C.UTF-8 "$@"; }
  # (not through as(): a function run in the background is a shell of root's, and $! its pid)
  setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/bin:/bin LANG=C.UTF-8 \
    python3 /var/tmp/rc/release_check_target.py /var/tmp/rc/home/ready-show sleep >/dev/null 2>&1 &
  pid=$!
  for i in $(seq 100); do [ -e /var/tmp/rc/home/ready-show ] && break; sleep 0.05; done
  show() {
    echo "probing-vm: \$ probing $*"
    t=$(date +%s.%N)
    as "$cli" "$@" 2>&1 | head -25
    echo "probing-vm: ($(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s)"
  }
  show -p $pid inject
  show -p $pid debug --dump
  show -p $pid debug --dump --native
  show $pid eval "sys.version"
  show $pid query "SELECT depth, func, lineno FROM python.backtrace"
  show -p $pid perf --cc --rate 250 --duration 1
  show -p $pid flamegraph -o /var/tmp/rc/home/flame.svg
  show -p $pid perf --cc --stop
  # The sampler started and stopped again and again (a target once died at a stop here): the
  # target must live through every round.
  rounds=${RELEASE_CHECK_PERF_ROUNDS:-10}
  i=0
  while [ $i -lt $rounds ] && kill -0 $pid 2>/dev/null; do
    as "$cli" -p $pid perf --cc --rate 250 --duration 1 >/dev/null 2>&1
    as "$cli" -p $pid flamegraph -o /var/tmp/rc/home/flame-$i.svg >/dev/null 2>&1
    as "$cli" -p $pid perf --cc --stop >/dev/null 2>&1
    i=$((i + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    echo "probing-vm: perf --cc started and stopped $rounds times: the target lives"
    kill -9 $pid 2>/dev/null
  else
    wait $pid
    echo "probing-vm: perf --cc rounds: the target died in round $i (exit status $?: 128+N is signal N)"
    rc=1
  fi
fi
# The targets' own output where one said anything (a crash report), and the kernel's lines about
# signals that killed a process.
for f in /var/tmp/rc/home/target-*.log; do
  [ -s "$f" ] || continue
  echo "probing-vm: $f:"
  tail -20 "$f"
done
dmesg 2>/dev/null | grep -iE 'unhandled|segfault|python3\[' | tail -20
echo "probing-vm: results begin"
cat /var/tmp/rc/results
echo "probing-vm: results end"
echo "probing-vm: exit $rc"
sync
echo o >/proc/sysrq-trigger
sleep 30
