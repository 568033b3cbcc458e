#!/usr/bin/env bash
# Installs the Debian packages that probing's build, tests, demo and benchmarks use, when any is
# missing. `make deps` runs it; `make demo` and `make test` run it before they build (plain `make`
# never does: it stops with one line naming what is missing). Idempotent and quiet when everything
# is there. `tools/deps.sh --list` prints the list; `--check` says what is missing and exits 1.
#
# Packages are installed with --no-install-recommends, so everything the project uses is named
# here, including what used to arrive as a recommend (libc6-dev-arm64-cross for the aarch64 cross
# build). Node.js counts as present when a `node` and `npm` are on PATH (a machine may have
# NodeSource's build); otherwise Debian's nodejs and npm are installed.
set -euo pipefail
want=(
  # build: compiler, pkg-config and the libraries linked through it (Makefile PKGS)
  build-essential make pkg-config libcjson-dev libuv1-dev libsqlite3-dev libedit-dev
  # the cJSON the probe carries beside itself gets a private soname (Makefile PROBE_CJSON)
  patchelf
  # every name says its folder: tools/check_names.sh reads the definitions with Universal Ctags
  universal-ctags
  # probing serve: its HTTP server (CLI only) and xxd, which compiles its pages in
  libmicrohttpd-dev xxd
  # debug --dump --native: file:line of native frames from DWARF, read by the CLI (elfutils);
  # libc's own DWARF (its detached debug file), which the native tests' file:line checks read
  # (test_cli_libs.py, test_srcline_cache.py: a fresh machine failed them without it)
  libdw-dev libc6-dbg
  # --format pprof: profile.proto compiled by protoc-c, encoded with protobuf-c, gzip'd by zlib;
  # its test reads it back with Google's Python protobuf
  libprotobuf-c-dev protobuf-c-compiler zlib1g-dev python3-protobuf
  # probing serve's tests: the docs' curl examples (docs/http.md)
  curl
  # probing top's test runs it in a real terminal (tests/e2e/test_top.py)
  tmux
  # tests: pytest (and pytest-xdist: the e2e tests' workers) and the interpreters' helpers, ptrace
  # tools, users and namespaces (setpriv, unshare)
  python3 python3-pytest python3-pytest-xdist python3-prometheus-client gdb strace util-linux mount procps git ca-certificates
  # a target whose locale writes decimal commas (localedef builds de_DE from these sources)
  locales
  # fuzzing (clang's libFuzzer runtime) and the aarch64 cross build of the injector
  clang libclang-rt-14-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  # the C style, checked by make format-check (.clang-format)
  clang-format
  # end-to-end: PyTorch 1.13 for perf --torch, headless Chromium for the flame graph and VS Code
  python3-torch chromium
  # NumPy values in --locals (tests/e2e/test_dump.py, samples/numpy_values.py; torch pulls it in
  # only as a dependency)
  python3-numpy
  # the extension in a real VS Code (make vscode-real): code-server's search runs Debian's ripgrep
  ripgrep
  # cluster across nodes (tests/e2e/test_cluster_nodes.py): network namespaces, a bridge, veth
  # pairs (ip), and an sshd per node reached with ssh
  iproute2 openssh-server openssh-client
  # real launchers (tests/e2e/test_cluster_launchers.py): Open MPI's mpirun and mpi4py for an MPI
  # job; SLURM's slurmctld, slurmd and clients (srun, sbatch, squeue) with munge for a SLURM job
  openmpi-bin python3-mpi4py slurm-wlm munge
  # a real asyncio server with stuck requests for debug --dump --tasks (tests/e2e/test_asyncio_server.py)
  python3-aiohttp
  # benchmarks: debugpy beside probing
  python3-debugpy
  # make fresh-check: the throwaway Debian root; make dist's Debian 11 build root and
  # release-check's Debian 11 and 13 roots
  mmdebstrap
  # make release-check: Debian's python3 makes the venv the release is installed into
  python3-venv
  # make dist-aarch64 and release-check-aarch64: the arm64 roots made through qemu-user's binfmt
  # handler (mmdebstrap needs arch-test for a foreign root), the emulated aarch64 machine, and
  # debugfs (e2fsprogs) to write its PID 1 into the root image
  qemu-user-static arch-test qemu-system-arm e2fsprogs
)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  want+=(nodejs npm)
fi
if [ "${1:-}" = --list ]; then printf '%s\n' "${want[@]}"; exit 0; fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "${1:-}" = --check ]; then
  echo "probing: error: Debian packages missing: ${missing[*]}: run 'make deps'" >&2
  exit 1
fi
echo "probing: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "probing: error: packages missing (${missing[*]}) and not root: run 'apt-get install ${missing[*]}' as root" >&2
    exit 1
  fi
else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
# Another apt run (an unattended upgrade, a second make) may hold dpkg's lock: wait for it.
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! $SUDO apt-get "${apt_opts[@]}" update -qq >"$log" 2>&1; then
  echo "probing: error: apt-get update failed: $(tail -1 "$log")" >&2
  exit 1
fi
# The tests start their own sshd inside namespaces they make; installing openssh-server must not
# leave a daemon listening on the machine's port 22. A policy-rc.d that refuses service starts
# (Debian's invoke-rc.d and deb-systemd-invoke honour it) covers the install; the unit is then
# disabled, so a reboot does not start it either. Only when this run installs the package.
policy=/usr/sbin/policy-rc.d ours_policy=0 new_sshd=0
case " ${missing[*]} " in *" openssh-server "*) new_sshd=1;; esac
if [ $new_sshd = 1 ] && [ ! -e $policy ]; then
  printf '#!/bin/sh\n# probing tools/deps.sh: no service starts while it installs\nexit 101\n' |
    $SUDO tee $policy >/dev/null && $SUDO chmod 755 $policy && ours_policy=1
fi
rc=0
$SUDO apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${missing[@]}" \
  >"$log" 2>&1 || rc=$?
[ $ours_policy = 1 ] && $SUDO rm -f $policy
if [ $rc -ne 0 ]; then
  echo "probing: error: apt-get install failed: $(grep -E '^E:' "$log" | head -1)" >&2
  exit 1
fi
if [ $new_sshd = 1 ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
fi
