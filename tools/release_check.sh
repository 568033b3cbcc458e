#!/usr/bin/env bash
# tools/release_check.sh: `make release-check` (basics). Installs build/dist's release as a user
# installs it, as a non-root user (nobody, through setpriv), with none of this tree:
#   venv:  python3.13 -m venv + pip install --no-index WHEEL (no PyPI here)
#   user:  python3.13 -m pip install --user --no-index WHEEL (probing in ~/.local/bin)
#   tar:   the tarball unpacked in a temporary folder, bin/probing run from there
# then, for each, `debug --dump` and `debug --dump --native` against targets run by the same user:
# pyenv's 3.8 and 3.13 (PIE, shared libpython) and Debian's /usr/bin/python3 (3.11, non-PIE,
# static libpython); and probing.init() from the venv. Runs in a private mount namespace where
# /root is an empty tmpfs with only ~/.pyenv bound back (the user cannot enter root's home).
# Prints one line per check; exits 1 if any fails. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "probing: error: release-check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (a non-root user is made to install and run): run it as root"
whl=$(ls build/dist/probing-*-py3-none-manylinux_*_x86_64.whl 2>/dev/null | head -1)
tgz=$(ls build/dist/probing-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
[ -n "$whl" ] && [ -n "$tgz" ] || die "no release in build/dist: run 'make dist' first"
# The temporary folder is made and removed OUT of the mount namespace, after the namespace (and
# every mount in it) is gone: a recursive delete must never meet a bind mount (an earlier draft
# removed it from inside, through a bind of ~/.pyenv, and deleted interpreters).
if [ -z "${RELEASE_CHECK_NS:-}" ]; then
  tmp=$(mktemp -d /tmp/probing-release-check.XXXXXX)
  chmod 755 "$tmp"
  rc=0
  RELEASE_CHECK_NS=1 RELEASE_CHECK_TMP=$tmp unshare -m --propagation private "$0" "$@" || rc=$?
  if findmnt -rno TARGET | grep -q "^$tmp"; then
    echo "probing: error: release-check: mounts remain under $tmp: not removed" >&2; exit 1
  fi
  rm -rf --one-file-system "$tmp"
  exit $rc
fi
tmp=$RELEASE_CHECK_TMP
pyenv_root=/root/.pyenv
py38=$(ls -d $pyenv_root/versions/3.8.*/bin/python3.8 | tail -1)
py313=$(ls -d $pyenv_root/versions/3.13.*/bin/python3.13 | tail -1)
# /root (mode 700) hidden by an empty tmpfs, ~/.pyenv bound back READ-ONLY, and no mount left
# under $tmp (the staging bind is unmounted once /root/.pyenv holds its own).
mkdir "$tmp/pyenv-stage"
mount --bind "$pyenv_root" "$tmp/pyenv-stage"
mount -t tmpfs -o mode=755 tmpfs /root
mkdir /root/.pyenv
mount --bind "$tmp/pyenv-stage" /root/.pyenv
mount -o remount,bind,ro /root/.pyenv
umount "$tmp/pyenv-stage"
rmdir "$tmp/pyenv-stage"
uid=65534
mkdir -p "$tmp/home" "$tmp/tar"
cp "$whl" "$tgz" "$tmp/"
chown -R $uid:$uid "$tmp/home" "$tmp/tar"
as() { setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$tmp/home" "$@"; }
fails=0
ok() { printf 'release-check: %-60s ok\n' "$1"; }
bad() { printf 'release-check: %-60s FAILED\n%s\n' "$1" "$2" | head -20; fails=$((fails + 1)); }

# Installs.
out=$(as "$py313" -m venv "$tmp/home/venv" 2>&1 && as "$tmp/home/venv/bin/pip" install -q --no-index "$tmp/$(basename "$whl")" 2>&1) \
  && ok "venv: pip install --no-index $(basename "$whl")" || bad "venv: pip install" "$out"
out=$(as "$py313" -m pip install -q --user --no-index "$tmp/$(basename "$whl")" 2>&1) \
  && ok "user: pip install --user --no-index" || bad "user: pip install --user" "$out"
out=$(as tar xf "$tmp/$(basename "$tgz")" -C "$tmp/tar" 2>&1) && ok "tar: unpacked" || bad "tar: unpack" "$out"
declare -A cli=(
  [venv]="$tmp/home/venv/bin/probing"
  [user]="$tmp/home/.local/bin/probing"
  [tar]=$(ls -d "$tmp"/tar/probing-*/bin/probing)
)
for k in venv user tar; do
  out=$(as "${cli[$k]}" --version 2>&1) && ok "$k: probing --version ($out)" || bad "$k: probing --version" "$out"
done

# Targets run by the same user; each install's CLI dumps each.
target='import time
def release_check_marker():
    while True:
        time.sleep(0.05)
release_check_marker()'
for py in "$py38" "$py313" /usr/bin/python3; do
  # Not through as(): $! must be the target itself (setpriv and env exec it), not a subshell.
  setpriv --reuid=$uid --regid=$uid --clear-groups env -i PATH=/usr/bin:/bin HOME="$tmp/home" \
    "$py" -c "$target" &
  pid=$!
  sleep 1
  v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  for k in venv user tar; do
    for mode in "" --native; do
      what="$k: debug --dump $mode on $(basename "$py") $v"
      out=$(as "${cli[$k]}" -p $pid debug --dump $mode 2>&1) && grep -q release_check_marker <<<"$out" \
        && ok "$what" || bad "$what" "$out"
    done
  done
  kill $pid; wait $pid 2>/dev/null || true
done
# probing.init() from the wheel's package, in the venv's own interpreter (3.13).
what="venv: probing.init() in the venv's python"
out=$(as "$tmp/home/venv/bin/python" -c 'import probing; i = probing.init(); print(i.socket)' 2>&1) \
  && ok "$what" || bad "$what" "$out"
[ $fails -eq 0 ] || die "$fails checks failed (above)"
echo "release-check: all passed"
