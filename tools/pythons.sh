#!/usr/bin/env bash
# Prints one line per CPython minor version (3.8 to 3.13) found on this machine:
#   <minor> <include dir> <interpreter>
# pyenv's interpreters come first; Debian's python3 headers serve its own minor when pyenv has
# none. PYTHONS="3.11 3.12" narrows the list. Used by the Makefile and the tests.
set -u
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for minor in 3.8 3.9 3.10 3.11 3.12 3.13; do
  if [ -n "${PYTHONS:-}" ] && ! [[ " $PYTHONS " == *" $minor "* ]]; then continue; fi
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
