#!/usr/bin/env bash
# tools/vsix_platform.sh TARGET OUT: `make vsix-linux-x64`, `make vsix-linux-arm64`. The
# platform-specific .vsix: the plain extension's files (after `make vsix`) plus the release's CLI
# and probes from `make dist`'s tarball (`make dist-aarch64`'s for linux-arm64) under bundled/ (bundled/bin/probing, bundled/lib/probing/), packaged by @vscode/vsce
# with --target TARGET (VS Code's platform name, linux-x64 or linux-arm64), so that VS Code installs it on
# that platform only. The extension runs the bundled CLI when `probing` is neither on PATH nor
# installed (vscode-extension/src/cli.ts, cliSearchDirs). Staged in build/vsix-TARGET/.
set -euo pipefail
die() { echo "probing: error: vsix: $*" >&2; exit 1; }
target=$1 out=$2
cd "$(dirname "$0")/.."
case $target in
  linux-x64) arch=x86_64 dist=build/dist make_dist="make dist" ;;
  linux-arm64) arch=aarch64 dist=build/dist-aarch64 make_dist="make dist-aarch64" ;;
  *) die "unknown target $target: linux-x64 or linux-arm64" ;;
esac
tgz=$(ls $dist/probing-*-linux-$arch.tar.gz 2>/dev/null | head -1)
[ -n "$tgz" ] || die "no release for $arch in $dist: run '$make_dist' first"
[ -f vscode-extension/out/extension.js ] || die "the extension is not built: run 'make vsix' first"
stage=build/vsix-$target
rm -rf "$stage"
mkdir -p "$stage/bundled"
cp vscode-extension/package.json vscode-extension/README.md vscode-extension/LICENSE \
  vscode-extension/.vscodeignore "$stage/"
cp -r vscode-extension/out "$stage/out"
top=$(tar tzf "$tgz" | sed -n '1s,/.*,,p')
tar xzf "$tgz" -C "$stage/bundled" --strip-components=1 "$top/bin" "$top/lib/probing"
[ -x "$stage/bundled/bin/probing" ] || die "$tgz has no bin/probing"
vsce=$PWD/vscode-extension/node_modules/.bin/vsce
(cd "$stage" && "$vsce" package --no-dependencies --allow-missing-repository --target "$target" \
  -o "$OLDPWD/$out") >&2
echo "$out: $(du -k "$out" | cut -f1) KiB ($(cd "$stage/bundled" && find . -type f | wc -l) files of the release)"
