#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs code-server (VS Code in a browser, from npm) for the real-VS-Code test
# (tests/vscode/, `make vscode-real`), once per version, OUTSIDE the clone:
#   ${PROBING_CACHE:-~/.cache/probing}/code-server-<version>/node_modules/code-server
# Idempotent: prints that directory and does nothing else when a complete install is there.
#
# code-server's postinstall downloads ripgrep from GitHub, which a build machine may not reach,
# so the packages are installed with --ignore-scripts, Debian's ripgrep (/usr/bin/rg) takes the
# place of the downloaded one, and the native modules VS Code's server loads are built here
# against the system Node (npm's nodedir; node-gyp, build-essential).
#   tools/code-server.sh [VERSION]      (default: the version the test is pinned to)
set -euo pipefail
V="${1:-4.100.3}"
CACHE="${PROBING_CACHE:-$HOME/.cache/probing}"
DIR="$CACHE/code-server-$V"
CS="$DIR/node_modules/code-server"
if [ -f "$DIR/.complete" ] && [ -x "$CS/out/node/entry.js" ]; then
  echo "$CS"
  exit 0
fi
command -v rg >/dev/null || { echo "probing: error: ripgrep (rg) is missing: run tools/deps.sh (apt-get install ripgrep)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
want_major=$(npm view "code-server@$V" engines.node 2>/dev/null | tr -dc '0-9' || true)
if [ -n "$want_major" ] && [ "$want_major" != "$node_major" ]; then
  echo "probing: error: code-server $V wants Node $want_major, this is Node $node_major: pick a code-server version for Node $node_major ('npm view code-server versions')" >&2
  exit 1
fi
echo "probing: installing code-server $V into $DIR (once; takes a few minutes)" >&2
mkdir -p "$CACHE"
TMP="$(mktemp -d "$CACHE/.code-server-$V.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
log="$TMP/install.log"
step() {  # step WHAT CMD...: runs CMD quietly, prints the log's tail when it fails
  echo "  $1" >&2
  shift
  if ! "$@" >>"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "probing: error: code-server install failed at: $*: see the lines above" >&2
    exit 1
  fi
}
npmi() { npm install --no-audit --no-fund --ignore-scripts --loglevel=error "$@"; }

step "npm install code-server@$V" npmi --prefix "$TMP" "code-server@$V"
C="$TMP/node_modules/code-server"
# argon2 hashes passwords; it is loaded at start-up even with --auth none. Build it here
# (node-pre-gyp falls back to building from source when it cannot download).
step "build argon2" bash -c "cd '$TMP' && npm rebuild --foreground-scripts argon2 && node -e 'require(\"argon2\")'"
# VS Code's server and its built-in extensions (what code-server's postinstall.sh does).
step "npm install lib/vscode" bash -c "cd '$C/lib/vscode' && $(declare -f npmi); npmi --omit=dev"
# node-gyp straight (npm's own copy), not `npm rebuild`: node-pty's postinstall step wants
# more than the build. @parcel/watcher comes prebuilt (an optional dependency); kerberos (proxy
# authentication) is left out.
gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
nodedir="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"   # headers in $nodedir/include/node
[ -f "$nodedir/include/node/node.h" ] || { echo "probing: error: no Node headers in $nodedir/include/node: install Debian's nodejs (it ships them)" >&2; exit 1; }
for m in @vscode/spdlog node-pty native-watchdog @vscode/deviceid; do
  step "build $m" bash -c "cd '$C/lib/vscode/node_modules/$m' && node '$gyp' rebuild --nodedir='$nodedir'"
done
mkdir -p "$C/lib/vscode/node_modules/@vscode/ripgrep/bin"
ln -sf "$(command -v rg)" "$C/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
ln -sfn node_modules "$C/lib/vscode/node_modules.asar"
ln -sf code-linux.sh "$C/lib/vscode/bin/remote-cli/code-server"
ln -sf browser-linux.sh "$C/lib/vscode/bin/helpers/browser.sh"
step "npm install lib/vscode/extensions" bash -c "cd '$C/lib/vscode/extensions' && $(declare -f npmi); npmi --omit=dev && node postinstall.mjs"
# It starts: the version it prints is the one asked for.
got=$(node "$C/out/node/entry.js" --version 2>>"$log" | grep -Eo '^[0-9]+\.[0-9]+\.[0-9]+' | head -1) || true
if [ "$got" != "$V" ]; then
  tail -20 "$log" >&2
  echo "probing: error: the code-server just installed says version '$got', expected $V: see the lines above" >&2
  exit 1
fi
touch "$TMP/.complete"
rm -rf "$DIR"
mv "$TMP" "$DIR"
trap - EXIT
echo "$DIR/node_modules/code-server"
