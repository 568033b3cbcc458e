#!/usr/bin/env bash
# Installs the `probing` Python package and its start-up hook (probing.pth) for each CPython
# minor version given, under $DESTDIR$PREFIX/lib/python3.X/site-packages (the layout of a venv,
# pyenv and `pip install --prefix`), with _config.py pointing at $PREFIX/lib/probing.
# usage: tools/install-python.sh DESTDIR PREFIX 3.8 3.9 ...
set -euo pipefail
destdir=$1 prefix=$2; shift 2
src=$(cd "$(dirname "$0")/../probe/python" && pwd)
for minor in "$@"; do
  dirs=("$destdir$prefix/lib/python$minor/site-packages")
  # Debian's own python3 reads /usr/local/lib/python3.X/dist-packages instead.
  [ -d "$destdir$prefix/lib/python$minor/dist-packages" ] && dirs+=("$destdir$prefix/lib/python$minor/dist-packages")
  for site in "${dirs[@]}"; do
    install -d "$site/probing"
    install -m 644 "$src"/probing/*.py "$site/probing/"
    printf 'LIBDIR = %s\n' "'$prefix/lib/probing'" > "$site/probing/_config.py"
    install -m 644 "$src/probing.pth" "$site/probing.pth"
  done
done
