#!/usr/bin/env bash
# Installs the Debian packages probing needs to build, test and demo, when any is missing.
# Used by `make deps` (which `make`, `make test` and `make demo` run first). Idempotent and quiet
# when everything is there.
set -euo pipefail
want=(build-essential pkg-config libcjson-dev libuv1-dev libsqlite3-dev libedit-dev
      python3 python3-pytest gdb strace clang gcc-aarch64-linux-gnu util-linux procps nodejs
      python3-debugpy python3-torch chromium)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "probing: installing missing Debian packages: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "probing: error: packages missing (${missing[*]}) and not root: run 'apt-get install ${missing[*]}' as root" >&2
    exit 1
  fi
else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
