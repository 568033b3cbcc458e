#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/pyrt: the interpreter reader (probe/pyrt/) against every CPython 3.8-3.13 that
# tools/pythons.sh finds: an embedding test program per version (test_embed.c, linked with that
# version's libpython), the ctypes-driven test (test_ctypes.py) in the same interpreter, the
# same ctypes test in Debian's /usr/bin/python3 with the 3.11 build, and one run of the embed
# test under clang -fsanitize=address,undefined and once with the pipe fallback for reads
# (PYRT_ASAN=3.X picks the version, 0 skips both).
# Last line: "pyrt: N passed, M failed"; exit status 0 only when nothing failed.
set -u
export PYTHONDONTWRITEBYTECODE=1 # keep tests/pyrt free of __pycache__
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${PYRT_BUILD:-$root/build/test-pyrt}
CC=${CC:-cc}
ASAN_VER=${PYRT_ASAN:-3.12}
WARN="-Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wformat=2 -Wvla -Wwrite-strings -Wundef -Werror"
pass=0
fail=0

# Adds the counts of a "...: N passed, M failed" line from log $1; a run without one failed.
tally() {
  local line
  line=$(grep -E ': [0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
  if [ -z "$line" ]; then
    echo "pyrt: no result line from $2 (crash or timeout?)"
    fail=$((fail + 1))
    return
  fi
  pass=$((pass + $(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
  fail=$((fail + $(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed$/\1/')))
}

# build <dir> <include dir> <cc> <extra cflags>: objects of probe/pyrt/*.c (but the tasks' JSON
# builder), probe/sig/pyrt_sig.c, common/*.c.
build() {
  local dir=$1 inc=$2 cc=$3 extra=$4 f o
  rm -rf "$dir"
  mkdir -p "$dir"
  for f in "$root"/probe/pyrt/*.c "$root"/probe/sig/pyrt_sig.c "$root"/common/*.c "$here"/test_entry.c "$here"/test_embed.c; do
    # the tasks' JSON builder (cJSON) is the dump's, not the readers' these tests drive
    [ "$(basename "$f")" = atasks_json.c ] && continue
    o="$dir/$(basename "$f" .c).o"
    $cc -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -O2 -g $WARN $extra \
      -I"$root" -I"$root/common" -I"$root/probe" -I"$inc" -I"$inc/internal" -c "$f" -o "$o" || return 1
  done
}

objs() { ls "$1"/*.o | grep -v '/test_e[a-z]*\.o$' | grep -v -e '/table\.o$' -e '/frameid\.o$'; }

run_logged() { # run_logged <log> <name> cmd...
  local log=$1 name=$2
  shift 2
  timeout 180 "$@" >"$log" 2>&1
  local rc=$?
  cat "$log"
  [ $rc -eq 124 ] && echo "pyrt: $name timed out"
  tally "$log" "$name"
}

while read -r minor inc exe; do
  [ -n "$minor" ] || continue
  echo "== CPython $minor ($exe)"
  dir="$out/$minor"
  libdir=$(dirname "$(dirname "$exe")")/lib
  # An embedded interpreter finds its prefix by looking for "python3" on PATH: name it, or a PATH
  # without pyenv's shims gives pyenv's libpython Debian's /usr/lib/python3.X.
  home=$(dirname "$(dirname "$exe")")
  if ! build "$dir" "$inc" "$CC" ""; then
    echo "pyrt: build failed for $minor"; fail=$((fail + 1)); continue
  fi
  if [ -e "$libdir/libpython$minor.so" ]; then
    if $CC -o "$dir/test-embed" $(objs "$dir") "$dir/test_embed.o" -L"$libdir" -lpython"$minor" \
      -Wl,-rpath,"$libdir" -lpthread -ldl -lm -lutil; then
      run_logged "$dir/embed.log" "embed $minor" env PYTHONHOME="$home" "$dir/test-embed" "$here"
    else
      echo "pyrt: link failed (embed $minor)"; fail=$((fail + 1))
    fi
  else
    echo "pyrt: no $libdir/libpython$minor.so: embed test skipped"
  fi
  if $CC -shared -o "$dir/pyrt-test-$minor.so" $(objs "$dir") "$dir/test_entry.o" -lpthread; then
    run_logged "$dir/ctypes.log" "ctypes $minor" "$exe" "$here/test_ctypes.py" "$dir/pyrt-test-$minor.so" "$here"
    run_logged "$dir/sig.log" "sig $minor" "$exe" "$here/test_sig.py" "$dir/pyrt-test-$minor.so"
  else
    echo "pyrt: link failed (ctypes $minor)"; fail=$((fail + 1))
  fi
  if [ "$minor" = "$ASAN_VER" ] && [ -x "$dir/test-embed" ]; then
    echo "== CPython $minor with the pipe fallback for fault-proof reads"
    PROBING_PYRT_READ=pipe run_logged "$dir/embed-pipe.log" "pipe $minor" env PYTHONHOME="$home" "$dir/test-embed" "$here"
  fi
  if [ "$minor" = "$ASAN_VER" ] && command -v clang >/dev/null; then
    echo "== CPython $minor under clang -fsanitize=address,undefined"
    adir="$out/$minor-asan"
    san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    if build "$adir" "$inc" clang "$san"; then
      if clang $san -o "$adir/test-embed" $(objs "$adir") "$adir/test_embed.o" -L"$libdir" \
        -lpython"$minor" -Wl,-rpath,"$libdir" -lpthread -ldl -lm -lutil; then
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
          run_logged "$adir/embed.log" "asan $minor" env PYTHONHOME="$home" "$adir/test-embed" "$here"
      else
        echo "pyrt: link failed (asan $minor)"; fail=$((fail + 1))
      fi
    else
      echo "pyrt: asan build failed"; fail=$((fail + 1))
    fi
  fi
done < <("$root/tools/pythons.sh")

# Debian's own interpreter (statically linked, 3.11.2) with the build made from pyenv's 3.11
# headers: the layout of the probe's 3.11 build must hold there too.
if [ -x /usr/bin/python3 ]; then
  dminor=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ -e "$out/$dminor/pyrt-test-$dminor.so" ]; then
    echo "== Debian /usr/bin/python3 ($dminor) with the $dminor build"
    run_logged "$out/debian.log" "debian python3" /usr/bin/python3 "$here/test_ctypes.py" \
      "$out/$dminor/pyrt-test-$dminor.so" "$here"
    run_logged "$out/debian-sig.log" "debian python3 sig" /usr/bin/python3 "$here/test_sig.py" \
      "$out/$dminor/pyrt-test-$dminor.so"
  fi
fi

# The Debian sid root's interpreters (tools/pythons.sh --sid: 3.13.x, 3.14, 3.15), which run
# only inside that root: the ctypes and signal tests there, in a pivot_root'ed mount namespace
# (tests/e2e/sidroot.py). Not the embedding test: linking a program with the root's libpython
# needs the root's glibc, which the host's linker does not have.
while read -r id inc exe; do
  [ -n "$id" ] || continue
  minor=${id%-sid}
  echo "== CPython $id ($exe in the sid root)"
  dir="$out/$id"
  if ! build "$dir" "$inc" "$CC" "-idirafter $(dirname "$inc") -D_Py_STDC_VERSION=__STDC_VERSION__"; then
    echo "pyrt: build failed for $id"; fail=$((fail + 1)); continue
  fi
  if $CC -shared -o "$dir/pyrt-test-$minor.so" $(objs "$dir") "$dir/test_entry.o" -lpthread; then
    run_logged "$dir/ctypes.log" "ctypes $id" /usr/bin/python3 "$root/tests/e2e/sidroot.py" "$id" \
      "$here/test_ctypes.py" "$dir/pyrt-test-$minor.so" "$here"
    run_logged "$dir/sig.log" "sig $id" /usr/bin/python3 "$root/tests/e2e/sidroot.py" "$id" \
      "$here/test_sig.py" "$dir/pyrt-test-$minor.so"
  else
    echo "pyrt: link failed (ctypes $id)"; fail=$((fail + 1))
  fi
done < <("$root/tools/pythons.sh" --sid)

echo "pyrt: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
