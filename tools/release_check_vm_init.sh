#!/bin/sh
# tools/release_check_vm_init.sh: PID 1 of the emulated aarch64 machine of
# tools/release_check_aarch64.sh (written into its root image as /probing-init). Mounts what a
# booted system has, copies the check's disk (/dev/vdb: the release, tools/release_check.sh,
# tools/release_dap.py) to /var/tmp/rc, runs `release_check.sh --run aarch64` there against the
# root's python3, prints its table between two marker lines, and powers the machine off.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
hostname probing-aarch64
mkdir -p /mnt/rc
mount -o ro /dev/vdb /mnt/rc || echo "probing-vm: cannot mount the check's disk /dev/vdb"
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
echo "probing-vm: results begin"
cat /var/tmp/rc/results
echo "probing-vm: results end"
echo "probing-vm: exit $rc"
sync
echo o >/proc/sysrq-trigger
sleep 30
