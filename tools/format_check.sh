#!/usr/bin/env bash
# make format-check: every tracked C file as clang-format writes it (.clang-format at the top).
# One line per file that is not, and how to fix it; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || {
  echo "format-check: clang-format is not installed: run tools/deps.sh (Debian package clang-format)" >&2
  exit 1
}
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run --Werror "$f" > /dev/null 2>&1; then
    echo "format-check: $f is not formatted: run 'clang-format -i $f'" >&2
    bad=1
  fi
done < <(git ls-files '*.c' '*.h')
[ "$bad" = 0 ] && echo "format-check: $(git ls-files '*.c' '*.h' | wc -l) files formatted"
exit "$bad"
