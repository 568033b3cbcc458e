#!/usr/bin/env bash
# make fresh-check: proves that the README's two commands pass, the first time, on a fresh machine
# of ours (Debian 12, x86-64, root). It builds a throwaway Debian 12 root holding only a fresh
# machine's basics (build-essential, make, git, ca-certificates, python3, curl; Node.js and npm as
# the machine has them; the pyenv interpreters bind-mounted read-only with the shared libraries
# their modules load), clones this repository's HEAD into it, and runs `make demo` then
# `make test` there (CI=true), in its own mount and PID namespaces with the root pivoted to /,
# timing each. Exit 0 only when
# both pass. Nothing else of the host is visible in the root: a package that tools/deps.sh forgets
# fails here, however complete the host is.
#
# The basics' root is cached as a tarball in $PROBING_CACHE (default ~/.cache/probing), keyed by its
# package list, and unpacked afresh for each run (mmdebstrap takes a few minutes the first time).
# FRESH_KEEP=1 keeps the unpacked root for a look after a failure. See docs/testing.md.
set -euo pipefail
# The whole script is one block, read before it runs: editing this file during a run (a
# 30-minute one) cannot change what the run does.
{
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${PROBING_CACHE:-$HOME/.cache/probing}
die() { echo "probing: error: fresh-check: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, mount and PID namespaces): run it as root"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
command -v unshare >/dev/null || die "unshare is missing: run 'make deps'"
git -C "$repo" rev-parse HEAD >/dev/null 2>&1 || die "$repo is not a git checkout"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "probing: fresh-check: note: uncommitted changes are not checked (a fresh clone of HEAD is)" >&2
fi

# --- the basics of a fresh machine ---
basics=(build-essential make git ca-certificates python3 curl procps mount)
pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
# The pyenv interpreters come with the machine; so do the Debian libraries their modules load.
pylibs=()
if [ -d "$pyenv_root/versions" ]; then
  mapfile -t pylibs < <(
    for v in "$pyenv_root"/versions/3.*; do
      ldd "$v"/bin/python3* "$v"/lib/libpython3*.so* "$v"/lib/python3*/lib-dynload/*.so 2>/dev/null
    done | awk '/=> \//{print $3}' | sort -u | xargs -r -n1 readlink -f | sort -u |
      xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | sort -u)
fi
pkgs=$(printf '%s\n' "${basics[@]}" "${pylibs[@]}" | sort -u | paste -sd, -)
key=$(printf '%s bookworm v1' "$pkgs" | sha256sum | cut -c1-12)
base="$cache/fresh-bookworm-$key.tar"
mkdir -p "$cache"

t0=$(date +%s)
if [ ! -s "$base" ]; then
  echo "fresh-check: building the basics' root (mmdebstrap, once; cached as $base)"
  sources=/etc/apt/sources.list.d/debian.sources
  [ -f "$sources" ] || sources=/etc/apt/sources.list
  mmdebstrap --quiet --variant=apt --include="$pkgs" bookworm "$cache/.building-$key.tar" "$sources" ||
    die "mmdebstrap failed: see its output above"
  mv "$cache/.building-$key.tar" "$base"
  # A root of another package list is stale now.
  find "$cache" -maxdepth 1 -name 'fresh-bookworm-*.tar' ! -name "$(basename "$base")" -delete
fi
t_base=$(( $(date +%s) - t0 ))

work=$(mktemp -d /var/tmp/probing-fresh.XXXXXX)
root="$work/root"
cleanup() {
  if [ "${FRESH_KEEP:-0}" = 1 ]; then echo "fresh-check: root kept in $root"; else rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir -p "$root"
tar -C "$root" -xf "$base"

# Node.js and npm as this machine has them (NodeSource's package, or Debian's).
if command -v node >/dev/null; then
  node_pkg=$(dpkg -S "$(readlink -f "$(command -v node)")" 2>/dev/null | cut -d: -f1 | head -1)
  if [ -n "$node_pkg" ]; then
    dpkg -L "$node_pkg" | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "${f#/}"; done |
      tar -C / -cf - --no-recursion -T - | tar -C "$root" -xf -
  fi
  # npm may have been upgraded in place since (a machine upgrades it when it starts): take the
  # global modules as they are.
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  [ -d "$npm_dir" ] && mkdir -p "$root$(dirname "$npm_dir")" &&
    tar -C "$(dirname "$npm_dir")" -cf - "$(basename "$npm_dir")" | tar -C "$root$(dirname "$npm_dir")" -xf -
fi
cp /etc/resolv.conf /etc/hosts "$root/etc/"
# The machine's trust and network settings: local CAs (a TLS-inspecting egress, say) and the
# environment variables that point tools at them or at a proxy, as CI's environment has them.
if [ -d /usr/local/share/ca-certificates ]; then
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
mapfile -t passenv < <(env | grep -E '^[A-Za-z_]*(CERT|CA_BUNDLE|_CA_|proxy|PROXY)[A-Za-z_]*=' || true)
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$root/root/.npmrc"
mkdir -p "$root$pyenv_root"

# A fresh clone of HEAD, as a new user makes it.
git clone -q "$repo" "$root/work/probing"
head=$(git -C "$root/work/probing" rev-parse --short HEAD)
log="$cache/fresh-check-$(date +%Y%m%d-%H%M%S).log"
echo "fresh-check: clone of $head in $root/work/probing; log $log"

inner=$(cat <<'EOF'
set -u
cd /work/probing
run() {
  local s=$(date +%s) rc
  echo "=== $ $*"
  "$@"; rc=$?
  echo "=== $* -> exit $rc in $(( $(date +%s) - s )) s"
  return $rc
}
EOF
)
# FRESH_CMD replaces the two commands: a quick look inside the root (FRESH_CMD='ls /'), or every
# failure in one run (FRESH_CMD='run make demo && run make -k test'); `run CMD` times CMD.
inner="$inner
${FRESH_CMD:-run make demo && run make test}"
t1=$(date +%s)
set +e
unshare --mount --propagation private --pid --fork -- env "${passenv[@]}" bash -c '
  set -e
  root=$1 pyroot=$2 inner=$3
  # The root is a mount point of its own, as a machine'"'"'s / is (unshare --propagation inside needs it).
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  if [ -d "$pyroot" ]; then mount --bind "$pyroot" "$root$pyroot"; mount -o remount,bind,ro "$root$pyroot"; fi
  # pivot_root, not chroot: the root becomes the namespace'"'"'s / as on a machine, so /proc/N/maps
  # and /proc/N/root read there as they do on a real one.
  cd "$root"
  mkdir -p .oldroot
  pivot_root . .oldroot
  cd /
  /.oldroot/usr/bin/umount -l /.oldroot
  rmdir /.oldroot
  exec /usr/bin/env -i $(env | grep -E "^[A-Za-z_]*(CERT|CA_BUNDLE|_CA_|proxy|PROXY)[A-Za-z_]*=") HOME=/root TERM=dumb CI=true LANG=C.UTF-8 \
    PATH="$pyroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    bash -c "$inner"
' fresh "$root" "$pyenv_root" "$inner" >"$log" 2>&1
rc=$?
set -e
t_run=$(( $(date +%s) - t1 ))

grep '^=== .* -> exit' "$log" | sed 's/^=== /fresh-check: /'
echo "fresh-check: basics' root ready in ${t_base} s; make demo + make test ran for ${t_run} s"
if [ $rc -ne 0 ]; then
  echo "--- last lines of $log ---" >&2
  tail -40 "$log" >&2
  die "the README's commands failed in a fresh root (exit $rc): see $log"
fi
echo "fresh-check: passed ($head)"
exit 0
}
