#!/usr/bin/env bash
# tools/release_check.sh: `make release-check`. Installs build/dist's release as a user installs it,
# as a non-root user (nobody, uid 65534, through setpriv), with nothing of this tree or of the build:
#   venv:  python3 -m venv + pip install --no-index WHEEL (no index is reachable on a node)
#   user:  pip install --user --no-index WHEEL, then `probing` found on PATH in ~/.local/bin
#   tar:   the tarball unpacked, bin/probing run from there
# on two systems:
#   host:      this Debian 12 (glibc 2.36). Targets: Debian's /usr/bin/python3 (3.11, non-PIE,
#              static libpython) and COPIES of pyenv's CPythons (PIE, shared libpython; 3.12 is a
#              python-build-standalone build) moved out of /root (mode 700: nobody cannot enter it)
#              with their run path made $ORIGIN-relative, as uv lays them out; a copy of 3.11
#              stripped of every symbol (`strip --strip-all`, bin and libpython); and the sid
#              root's python3.13-3.15 (tools/sid-root.sh), each chrooted into it as the user: a
#              container whose /tmp is not ours, without /proc, under /root (which nobody cannot
#              cross). Only ready files and sockets are written in its /tmp, removed by name.
#   bullseye:  a copy of a Debian 11 root (glibc 2.31) with only python3, python3-venv and
#              python3-pip (tools/bullseye-root.sh --bare: no compiler, no -dev package), chrooted
#              into in a private mount namespace (its own /proc only). Target: its python3 (3.9).
#   trixie:    the same with a Debian 13 root (tools/trixie-root.sh; glibc 2.41), its python3.13;
#              its pip refuses --user without --break-system-packages (PEP 668), which is given.
# On each system the system's python3 is also run in a private mount namespace with a /tmp of its
# own (unshare -m, a tmpfs: a container whose /tmp is not ours); the temporary folder is under
# /var/tmp so that it stays visible there.
# On each target, run by the same user, fresh for each install: `debug --dump --no-inject` (and
# nothing loaded), `inject` (the probe loaded from that install's own folder), `debug --dump`,
# `debug --dump --native`, `query`, `eval`, `perf --cc --duration 1` then `flamegraph -o F.svg`
# (the SVG names the target's Python function) and `perf --cc --stop`, and the debugger over DAP
# (tools/release_dap.py with the system's python3: pause, stackTrace, a breakpoint hit); with the
# tarball, `debug --dump` of a target holding the GIL for ever; then probing.init() and
# `PROBING=1 python app.py` in the venv, and probing.init() from the tarball's site-packages.
# Prints one line per check with its time, then a table; exits 1 if any fails. Root only (it
# makes the user's files and the chroot).
# Nothing here is bind-mounted and nothing under a mount is ever removed: the interpreters and the
# root are copied into one temporary folder, removed at the end with --one-file-system once no
# mount is left under it (an earlier draft deleted ~/.pyenv through a bind mount).
# `tools/release_check.sh --run NAME DIR VENVPY USERPY TARGET...` is the part run on each system
# (also inside the chroot, where this script is copied); DIR holds the wheel and the tarball.
set -euo pipefail
die() { echo "probing: error: release-check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (a non-root user is made to install and run): run it as root"
uid=65534

# ---- one system: installs, targets, commands ----
if [ "${1:-}" = --run ]; then
  sys=$2 dir=$3 venvpy=$4 userpy=$5
  shift 5
  # RELEASE_CHECK_INSTALLS: some of "venv user tar" only (the emulated aarch64 machine is slow).
  installs=${RELEASE_CHECK_INSTALLS:-venv user tar}
  dappy=/usr/bin/python3  # the system's: runs tools/release_dap.py, the DAP client
  # This machine's (uname -m): x86_64, or aarch64 in the VM of tools/release_check_aarch64.sh.
  whl=$(ls "$dir"/probing-*-py3-none-manylinux_*_"$(uname -m)".whl)
  tgz=$(ls "$dir"/probing-*-linux-"$(uname -m)".tar.gz)
  home=$dir/home
  mkdir -p "$home" "$dir/tar"
  chown $uid:$uid "$home" "$dir/tar"
  as() { setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 "$@"; }
  fails=0
  results=$dir/results
  : >"$results"
  # check WHAT TARGET CMD...: runs CMD, ok when it exits 0 and its output matches $want (a grep -E
  # pattern) and not $unwanted; one line with the time.
  check() {
    local what=$1 tgt=$2 t0 t1 out rc=0
    shift 2
    t0=$(date +%s.%N)
    out=$("$@" 2>&1) || rc=$?
    t1=$(date +%s.%N)
    local secs
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    if [ -n "${expect_error:-}" ]; then  # a refusal: exit 1, one line, the right one
      if [ $rc -eq 1 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -Eq -- "^probing: error: .*$want" <<<"$out"; then rc=0; else [ $rc -ne 0 ] || rc=99; fi
    fi
    if [ $rc -eq 0 ] && grep -Eq -- "$want" <<<"$out" && { [ -z "${also:-}" ] || grep -Eq -- "$also" <<<"$out"; } &&
       { [ -z "${unwanted:-}" ] || ! grep -Eq -- "$unwanted" <<<"$out"; }; then
      printf 'release-check: %-8s %-34s %-28s ok %6s s\n' "$sys" "$tgt" "$what" "$secs"
      printf '%s\t%s\t%s\tok\n' "$sys" "$tgt" "$what" >>"$results"
    else
      printf 'release-check: %-8s %-34s %-28s FAILED (exit %d, %s s)\n' "$sys" "$tgt" "$what" $rc "$secs"
      head -15 <<<"$out" | sed 's/^/    /'
      printf '%s\t%s\t%s\tFAILED\n' "$sys" "$tgt" "$what" >>"$results"
      fails=$((fails + 1))
    fi
    unwanted= also= expect_error=
  }

  # The installs.
  want='^'
  check "install: venv" "$(basename "$venvpy")" as "$venvpy" -m venv "$home/venv"
  want='Successfully installed probing'
  check "install: venv + pip" "$(basename "$venvpy")" as "$home/venv/bin/pip" install --no-index "$whl"
  want='Successfully installed probing'
  # A Python marked externally managed (PEP 668: Debian 12's, 13's) refuses --user unless told
  # it may (what its user types after reading pip's message).
  brk=
  ! "$userpy" -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' ||
    brk=--break-system-packages
  [[ " $installs " != *" user "* ]] ||
    check "install: pip --user${brk:+ $brk}" "$(basename "$userpy")" as "$userpy" -m pip install --user --no-index $brk "$whl"
  want='^'
  check "install: tar xf" "-" as tar xf "$tgz" -C "$dir/tar"
  tarcli=$(ls -d "$dir"/tar/probing-*/bin/probing)
  # The platform-specific .vsix (make vsix-linux-x64 / vsix-linux-arm64) when DIR holds one for
  # this machine: VS Code unzips it and the extension makes bundled/bin/probing executable
  # (vscode-extension/src/cli.ts bundledBin); here the system's python3 unzips it, as the user.
  case $(uname -m) in x86_64) vsarch=x64 ;; aarch64) vsarch=arm64 ;; *) vsarch=none ;; esac
  vsix=$(ls "$dir"/probing-linux-"$vsarch"-*.vsix 2>/dev/null | head -1 || true)
  if [ -n "$vsix" ]; then
    installs="$installs vsix"
    mkdir -p "$dir/vsix"
    chown $uid:$uid "$dir/vsix"
    want='^'
    check "install: vsix unzipped" "-" as sh -c '/usr/bin/python3 -m zipfile -e "$1" "$2" &&
      chmod 755 "$2/extension/bundled/bin/probing"' - "$vsix" "$dir/vsix"
  fi
  # Each install's `probing`, as the user runs it: the venv's bin, ~/.local/bin on PATH, the tarball's.
  declare -A cli=(
    [venv]="$home/venv/bin/probing"
    [user]="env PATH=$home/.local/bin:/usr/bin:/bin probing"
    [tar]="$tarcli"
    [vsix]="$dir/vsix/extension/bundled/bin/probing"
  )
  declare -A libdir=(
    [venv]="$home/venv/lib/"
    [user]="$home/.local/lib/"
    [tar]="$dir/tar/"
    [vsix]="$dir/vsix/extension/bundled/"
  )
  for k in $installs; do
    want='^probing [0-9]'
    check "$k: probing --version" "-" as ${cli[$k]} --version
  done

  # The targets: each waits in release_check_marker() (sleeping, or in a regular expression that
  # never ends: sre holds the GIL throughout); it says it is ready through a file. A target
  # ROOT::EXE runs EXE chrooted into ROOT (a container: its /tmp is not ours; no mount needed).
  # The target, a script file (a breakpoint needs a file): release_check_marker() works in
  # release_check_busy() (what `perf --cc` samples) and sleeps by turns, calling
  # release_check_tick() (the DAP breakpoint's line); with "gil" it stays in a regular expression
  # that never ends (sre holds the GIL throughout). It says it is ready through a file.
  script=$dir/release_check_target.py
  cat >"$script" <<'PY'
import re, sys, time
def release_check_tick(n):
    return n + 1  # release-check breakpoint
def release_check_busy(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def release_check_marker():
    open(sys.argv[1], "w").close()
    if sys.argv[2] == "gil":
        re.match(r"(a+)+$", "a" * 64 + "b")
    n = 0
    while True:
        release_check_busy(30000)
        time.sleep(0.01)
        n = release_check_tick(n)
release_check_marker()
PY
  chmod 644 "$script"
  bpline=$(grep -n 'release-check breakpoint' "$script" | cut -d: -f1)
  pids=()
  readies=()
  cleanup_targets() {
    local p
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
      wait "$p" 2>/dev/null || true
      rm -f /tmp/probing-$uid/"$p"-*.sock
      [ -z "${troot:-}" ] || rm -f "$troot"/tmp/probing-$uid/"$p"-*.sock "$troot"/tmp/probing-$uid/"$p".sock
    done
    for p in "${readies[@]}"; do rm -f "$p"; done
    pids=() readies=()
  }
  trap cleanup_targets EXIT
  n=0
  # run_as_user SPEC CMD...: execs CMD as the user: chrooted when SPEC is ROOT::EXE; in a private
  # mount namespace with a /tmp of its own (an empty tmpfs: a container's /tmp that is not ours,
  # gone with the target) when SPEC is ns:EXE. Only in a subshell (`&`, `$(...)`): the subshell
  # becomes the command, so that $! is the target itself.
  run_as_user() {
    local spec=$1
    shift
    if [[ $spec == noproc:*::* ]]; then
      exec chroot --userspec=$uid:$uid "$(root_of "$spec")" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 "$@"
    elif [[ $spec == *::* ]]; then
      exec unshare -m --propagation private sh -c 'r=$1 u=$2; shift 2; mount -t proc proc "$r/proc" && exec chroot --userspec="$u" "$r" "$@"' - \
        "$(root_of "$spec")" $uid:$uid /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 "$@"
    elif [[ $spec == ns:* ]]; then
      # mount(2) through python3's ctypes: Debian 13's minimal root has no mount(8). Inside a
      # chroot / is no mount point ('--propagation private' fails): that namespace is private.
      exec unshare -m --propagation "$([ "$sys" = host ] && echo private || echo unchanged)" /usr/bin/python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(b"probing-release-check", b"/tmp", b"tmpfs", 0, b"mode=1777") != 0:
    sys.exit("mount tmpfs /tmp: " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[1], sys.argv[1:])' \
        setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 "$@"
    else
      exec setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 "$@"
    fi
  }
  exe_of() { local e=${1##*::}; echo "${e#ns:}"; }
  root_of() { local r=${1%%::*}; echo "${r#noproc:}"; }
  # script_of SPEC: the target script's path as the target sees it (a copy in a chroot's /tmp).
  script_of() {
    if [[ $1 == *::* ]]; then echo /tmp/probing-release-check-$$.py; else echo "$script"; fi
  }
  # start SPEC MODE [ENV...]: a target run by the user; sets $pid.
  start() {
    local spec=$1 mode=$2 ready inside
    shift 2
    n=$((n + 1))
    if [[ $spec == *::* ]]; then
      inside=/tmp/probing-release-check-$$-$n
      ready=$(root_of "$spec")$inside
      cp "$script" "$(root_of "$spec")$(script_of "$spec")"
      readies+=("$(root_of "$spec")$(script_of "$spec")")
    else
      ready=$home/ready-$n inside=$ready
    fi
    readies+=("$ready")
    run_as_user "$spec" "$@" "$(exe_of "$spec")" "$(script_of "$spec")" "$inside" "$mode" >"$home/target-$n.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    local i
    for i in $(seq 100); do [ -e "$ready" ] && return 0; sleep 0.05; done
    echo "release-check: $sys: $spec did not start: $(head -5 "$home/target-$n.log")"
  }
  for spec in "$@"; do
    troot=
    [[ $spec == *::* ]] && troot=$(root_of "$spec")
    name=${spec#"$dir"/}
    [ -z "$troot" ] || name="container $(basename "$troot"):${spec##*::}"
    [[ $spec != noproc:* ]] || name="$name, no /proc"
    [[ $spec != ns:* ]] || name="mount ns: ${spec#ns:}"
    name=${name/"$dir"\//}
    # (run_as_user execs: a failure here is the subshell's status, which must not end the script)
    v=$(run_as_user "$spec" "$(exe_of "$spec")" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || v="?"
    tgt="$name $v"
    for k in $installs; do
      start "$spec" sleep
      want=release_check_marker unwanted=
      check "$k: debug --dump --no-inject" "$tgt" as ${cli[$k]} -p $pid debug --dump --no-inject
      want='^'
      check "$k: nothing loaded" "$tgt" sh -c '! grep libprobing "/proc/$1/maps"' - $pid
      want='sock'
      check "$k: inject" "$tgt" as ${cli[$k]} -p $pid inject
      # The probe that was loaded is this install's own (a container's target maps the copy
      # made in its /tmp, removed once loaded).
      want="${libdir[$k]}"
      [ -z "$troot" ] || want="$troot/tmp/probing-[^/]+/libprobing-3.* \\(deleted\\)"'$'
      [[ $spec != ns:* ]] || want="${libdir[$k]}|/tmp/probing-[^/]+/libprobing-3.* \\(deleted\\)"'$'
      check "$k: its own probe loaded" "$tgt" grep -m1 'libprobing-3' /proc/$pid/maps
      want=release_check_marker
      check "$k: debug --dump" "$tgt" as ${cli[$k]} -p $pid debug --dump
      want='release_check_marker'
      check "$k: debug --dump --native" "$tgt" as ${cli[$k]} -p $pid debug --dump --native
      want='release_check_marker'
      check "$k: query" "$tgt" as ${cli[$k]} $pid query "SELECT depth, func FROM python.backtrace"
      want='^42$'
      check "$k: eval" "$tgt" as ${cli[$k]} $pid eval "6 * 7"
      # perf --cc for a second, then the flame graph as an SVG that holds the target's Python
      # function; the sampler stopped.
      if [[ $spec == noproc:* ]]; then  # the sampler finds threads in /proc: refused in one line
        want='root has no /proc' expect_error=1
        check "$k: perf --cc refused, no /proc" "$tgt" as ${cli[$k]} -p $pid perf --cc --rate 250 --duration 1
      else
      want='samples' unwanted='^0 samples|: 0 samples'
      check "$k: perf --cc --duration 1" "$tgt" as ${cli[$k]} -p $pid perf --cc --rate 250 --duration 1
      want='wrote .*\.svg: [1-9][0-9]* samples' also='release_check_busy'
      check "$k: flamegraph (svg)" "$tgt" as sh -c 'pid=$1 f=$2; shift 2; "$@" -p "$pid" flamegraph -o "$f" && grep -o "release_check_busy" "$f" | head -1' \
        - $pid "$home/flame-$n.svg" ${cli[$k]}
      want='perf --cc stopped'
      check "$k: perf --cc --stop" "$tgt" as ${cli[$k]} -p $pid perf --cc --stop
      fi
      # The debugger over DAP: pause, stackTrace, a breakpoint hit (tools/release_dap.py, run by
      # the same user with the system's python3).
      want='breakpoint hit: release_check_tick' also='^dap ok'
      check "$k: DAP pause, stack, breakpoint" "$tgt" as "$dappy" "$dir/release_dap.py" $pid "$(script_of "$spec")" "$bpline" ${cli[$k]}
      cleanup_targets
    done
    # The GIL held for ever (tarball only): the dump still reads every frame.
    start "$spec" gil
    want='holds GIL' also=release_check_marker
    check "tar: debug --dump, GIL held" "$tgt" as ${cli[tar]} -p $pid debug --dump
    cleanup_targets
  done
  # The Python package: probing.init() and PROBING=1 in the venv's interpreter; probing.init()
  # from the tarball's site-packages (its lib/pythonX.Y for the venv's minor).
  vpy=$home/venv/bin/python
  want='sock'
  check "venv: probing.init()" "venv python" as "$vpy" -c 'import probing; print(probing.init().socket)'
  start "$vpy" sleep PROBING=1
  want='libprobing-3'
  check "venv: PROBING=1 loads the probe" "venv python" grep -m1 libprobing-3 /proc/$pid/maps
  want=release_check_marker
  check "venv: PROBING=1 then debug --dump" "venv python" as "$home/venv/bin/probing" -p $pid debug --dump
  # What a user may do where Yama's ptrace_scope 1 forbids attaching to a non-child (no Yama on
  # the machine this was written on): with the probe loaded at start-up, the CLI makes no
  # ptrace or process_vm_* call and opens no /proc/PID/mem (strace; where it is installed).
  if command -v strace >/dev/null; then
    no_attach() {
      local log=$home/strace-$n.txt
      strace -f -qq -e trace=ptrace,process_vm_readv,process_vm_writev,openat -o "$log" \
        setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 "$@" || return
      ! grep -E 'ptrace\(|process_vm_|/mem"' "$log"
    }
    for mode in "" --native; do
      want=release_check_marker
      check "venv: PROBING=1: dump $mode, no ptrace" "venv python" no_attach "$home/venv/bin/probing" -p $pid debug --dump $mode
    done
    want='^42$'
    check "venv: PROBING=1: eval, no ptrace" "venv python" no_attach "$home/venv/bin/probing" $pid eval "6 * 7"
  fi
  cleanup_targets
  minor=$("$venvpy" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  want='sock'
  check "tar: probing.init() (PYTHONPATH)" "$(basename "$venvpy")" as env PYTHONPATH="$(dirname "$(dirname "$tarcli")")/lib/python$minor/site-packages" \
    "$venvpy" -c 'import probing; print(probing.init().socket)'
  [ $fails -eq 0 ] || { echo "release-check: $sys: $fails checks failed (above)"; exit 1; }
  echo "release-check: $sys: all $(wc -l <"$results") checks passed"
  exit 0
fi

# ---- the whole check ----
cd "$(dirname "$0")/.."
here=$(pwd)
dist=${RELEASE_DIR:-build/dist}  # another folder: a release to try (e.g. one broken on purpose)
whl=$(ls "$dist"/probing-*-py3-none-manylinux_*_x86_64.whl 2>/dev/null | head -1)
tgz=$(ls "$dist"/probing-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
[ -n "$whl" ] && [ -n "$tgz" ] || die "no release in $dist: run 'make dist' first"
for t in setpriv unshare chroot patchelf strip findmnt; do
  command -v $t >/dev/null || die "$t is missing: run 'make deps'"
done
/usr/bin/python3 -c "import ensurepip" 2>/dev/null ||
  die "Debian's python3 cannot make a venv (no ensurepip): run 'make deps' (python3-venv)"
bare=$(tools/bullseye-root.sh --bare) || die "no Debian 11 root (tools/bullseye-root.sh --bare failed above)"
trixie=$(tools/trixie-root.sh) || die "no Debian 13 root (tools/trixie-root.sh failed above)"
t_start=$(date +%s)
# Not under /tmp: the targets in a private mount namespace get a /tmp of their own, and the
# interpreters and installs here must stay visible to them.
tmp=$(mktemp -d /var/tmp/probing-release-check.XXXXXX)
chmod 755 "$tmp"
# Removed only when no mount is left under it (the chroot's /proc lives in a namespace that is
# gone by then), and never across a file system boundary.
remove_tmp() {
  if findmnt -rno TARGET | grep -q "^$tmp"; then
    echo "probing: error: release-check: mounts remain under $tmp: not removed" >&2
    return
  fi
  rm -rf --one-file-system "$tmp"
}
trap remove_tmp EXIT

# Host: copies of pyenv's interpreters (bin, libpython, the standard library without tests; pip
# for the --user install), relocated with an $ORIGIN run path.
copy_python() {
  local src=$1 dst=$2 minor=$3
  mkdir -p "$dst/bin" "$dst/lib/python$minor/site-packages"
  cp -p "$src/bin/python$minor" "$dst/bin/"
  cp -a "$src"/lib/libpython3*.so* "$dst/lib/" 2>/dev/null || true
  tar -C "$src/lib" -cf - --exclude=test --exclude=tests --exclude=__pycache__ --exclude=site-packages \
    --exclude=idlelib --exclude=tkinter --exclude=turtledemo "python$minor" | tar -C "$dst/lib" -xf -
  (cd "$src/lib/python$minor/site-packages" && cp -a pip pip-*.dist-info "$dst/lib/python$minor/site-packages/")
  if readelf -d "$dst/bin/python$minor" | grep -Eq 'R(UN)?PATH.*\[/'; then
    patchelf --set-rpath '$ORIGIN/../lib' "$dst/bin/python$minor"
  fi
}
mkdir -p "$tmp/host/py"
cp "$whl" "$tgz" tools/release_dap.py "$tmp/host/"
targets=(/usr/bin/python3 ns:/usr/bin/python3)
userpy=
for minor in 3.8 3.9 3.10 3.11 3.12 3.13; do
  src=
  for d in /root/.pyenv/versions/$minor.*; do
    case ${d##*/} in *[a-z]*) continue ;; esac  # not 3.13t, 3.14.0a1...
    src=$d
  done
  [ -n "$src" ] && [ -x "$src/bin/python$minor" ] || continue
  copy_python "$src" "$tmp/host/py/$minor" $minor
  targets+=("$tmp/host/py/$minor/bin/python$minor")
  [ -n "$userpy" ] || userpy=$tmp/host/py/$minor/bin/python$minor
  if [ $minor = 3.11 ]; then
    cp -a "$tmp/host/py/3.11" "$tmp/host/py/3.11-stripped"
    strip --strip-all "$tmp/host/py/3.11-stripped/bin/python3.11" "$tmp/host/py/3.11-stripped"/lib/libpython3.11.so.1.0
    targets+=("$tmp/host/py/3.11-stripped/bin/python3.11")
  fi
done
[ -n "$userpy" ] || die "no pyenv CPython 3.8-3.13 to copy: install one (tools/install-python.sh)"
# The sid root's CPythons (3.13-3.15, built against its newer glibc: they run only there), each target chrooted into
# it as the user: a container whose /tmp is not ours (the probe is copied into it). Its root is
# only read, but for the targets' ready files and sockets in its /tmp, removed by name.
sid=$(tools/sid-root.sh --if-present)
for minor in 3.13 3.14 3.15; do
  [ -z "$sid" ] || [ ! -x "$sid/usr/bin/python$minor" ] || targets+=("$sid::/usr/bin/python$minor")
done
# and one in a chroot that mounts no /proc (every command but perf --cc, which says why not)
[ -z "$sid" ] || [ ! -x "$sid/usr/bin/python3.14" ] || targets+=("noproc:$sid::/usr/bin/python3.14")
echo "release-check: host: interpreters copied in $(($(date +%s) - t_start)) s ($(du -sh "$tmp/host/py" | cut -f1))"
chmod -R a+rX "$tmp/host"
rc=0
# Debian's python3 makes the venv (python3-venv); pip --user with Debian's is refused (PEP 668:
# externally managed), so pyenv's oldest copy does the --user install.
"$here/tools/release_check.sh" --run host "$tmp/host" /usr/bin/python3 "$userpy" "${targets[@]}" || rc=1
[ -z "$sid" ] || rmdir "$sid/tmp/probing-$uid" 2>/dev/null || true  # the targets' socket folder, if empty

# Debian 11 and 13: a copy of each bare root, the release and this script inside it, chrooted
# into in a private mount namespace with its own /proc.
in_root() {
  local name=$1 bare=$2 t0 f libc
  t0=$(date +%s)
  for f in usr/bin/gcc usr/bin/cc usr/bin/x86_64-linux-gnu-gcc-10 usr/bin/x86_64-linux-gnu-gcc-14 usr/include/python3.9/Python.h usr/include/python3.13/Python.h; do
    [ ! -e "$bare/$f" ] || die "the bare $name root $bare has $f: it must hold none of the build's packages"
  done
  cp -a "$bare" "$tmp/$name"
  mkdir -p "$tmp/$name/rc"
  cp "$whl" "$tgz" "$here/tools/release_check.sh" "$here/tools/release_dap.py" "$tmp/$name/rc/"
  chmod 755 "$tmp/$name/rc"
  libc=$(chroot "$tmp/$name" /usr/bin/ldd --version 2>/dev/null | sed -n '1s/.* //p')
  echo "release-check: $name: root copied in $(($(date +%s) - t0)) s ($(du -sh "$tmp/$name" | cut -f1), glibc $libc)"
  unshare -m --propagation private sh -c '
    mount -t proc proc "$1/proc" && exec chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      /bin/bash /rc/release_check.sh --run "$2" /rc /usr/bin/python3 /usr/bin/python3 /usr/bin/python3 ns:/usr/bin/python3
  ' rc "$tmp/$name" "$name" || rc=1
}
in_root bullseye "$bare"
if [ -n "$trixie" ]; then in_root trixie "$trixie"; fi
cat "$tmp/host/results" "$tmp/bullseye/rc/results" ${trixie:+"$tmp/trixie/rc/results"} 2>/dev/null > "$dist/release-check.tsv" || true
echo "release-check: $(grep -c 'ok$' "$dist/release-check.tsv") ok, $(grep -c 'FAILED$' "$dist/release-check.tsv") failed ($dist/release-check.tsv) in $(($(date +%s) - t_start)) s"
[ $rc -eq 0 ] || die "checks failed (above)"
echo "release-check: all passed"
