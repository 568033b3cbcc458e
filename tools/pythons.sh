#!/usr/bin/env bash
# Prints one line per CPython interpreter found on this machine:
#   <id> <include dir> <interpreter>
#   tools/pythons.sh          this machine's own: one line per minor 3.8-3.13 (pyenv's first;
#                             Debian's python3 headers serve its own minor when pyenv has none)
#   tools/pythons.sh --sid    the Debian sid root's (tools/sid-root.sh, when it is already
#                             built): 3.14, 3.15 and "3.13-sid" (a late 3.13); the interpreter
#                             path is the one inside the root, where alone it runs (glibc 2.38)
#   tools/pythons.sh --build  what the probe is built for: this machine's minors, then the sid
#                             root's minors this machine lacks (3.14, 3.15; 3.13 too) with the root's
#                             headers; a note on stderr when the root is absent
# PYTHONS="3.11 3.14" narrows any list (an id or its minor: "3.13" also keeps "3.13-sid").
# Used by the Makefile and the tests.
set -u
here=$(cd "$(dirname "$0")" && pwd)
want() { [ -z "${PYTHONS:-}" ] || [[ " $PYTHONS " == *" $1 "* ]] || [[ " $PYTHONS " == *" ${1%-sid} "* ]]; }

host() {
  local root minor best d
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for minor in 3.8 3.9 3.10 3.11 3.12 3.13; do
    want "$minor" || continue
    best=""
    for d in "$root"/versions/"$minor".*; do
      [ -d "$d/include/python$minor" ] || continue
      case "$d" in *t|*-dev|*a[0-9]*|*b[0-9]*|*rc[0-9]*) continue;; esac
      best=$d
    done
    if [ -n "$best" ]; then
      echo "$minor $best/include/python$minor $best/bin/python$minor"
    elif [ -d "/usr/include/python$minor/internal" ] && [ -x "/usr/bin/python$minor" ]; then
      echo "$minor /usr/include/python$minor /usr/bin/python$minor"
    fi
  done
}

# The sid root's interpreters: "<id> <include dir on this machine> <path inside the root>".
sid() {
  local r minor id
  r=$("$here/sid-root.sh" --if-present) || return 0
  [ -n "$r" ] || return 0
  for minor in 3.13 3.14 3.15; do
    id=$minor
    [ "$minor" = 3.13 ] && id=3.13-sid
    want "$id" || continue
    [ -d "$r/usr/include/python$minor/internal" ] && [ -x "$r/usr/bin/python$minor" ] &&
      echo "$id $r/usr/include/python$minor /usr/bin/python$minor"
  done
}

case "${1:-}" in
  "") host ;;
  --sid) sid ;;
  --build)
    h=$(host)
    [ -n "$h" ] && echo "$h"
    if [ -z "$("$here/sid-root.sh" --if-present)" ]; then
      want 3.14 || want 3.15 && echo "pythons: no sid root yet: CPython 3.14/3.15 not built ('make test' or tools/sid-root.sh builds it)" >&2
    fi
    # The root's minors this machine lacks, built with the root's headers (3.13 too, when
    # pyenv has no 3.13: the probe for "3.13-sid" is then built from its own headers).
    sid | while read -r id inc _exe; do
      m=${id%-sid}
      printf '%s\n' "$h" | grep -q "^$m " || echo "$m $inc $_exe"
    done ;;
  *) echo "usage: tools/pythons.sh [--sid|--build]" >&2; exit 2 ;;
esac
