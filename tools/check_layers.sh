#!/usr/bin/env bash
# The probe's folders are layers (docs/architecture.md, "The house"): a file may include a
# header of its own folder or of a lower layer, never of a higher one or of a folder on its own
# layer, so no circle can run between folders. Also: injector/ never includes probe/, dap/
# never includes either, and the CLI's private library (injector/cli/ext/) never includes the
# CLI's headers (the renderers' flame.h is below it). Prints each include that breaks this and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
# Bottom to top; folders on one line share a layer.
layers=(
  "core"
  "pyrt"
  "sig"
  "gil"
  "prof crash"
  "sql"
  "torch debugger"
  "server"
  ". reader"
)
declare -A rank
for i in "${!layers[@]}"; do for d in ${layers[$i]}; do rank[$d]=$i; done; done
bad=0
while IFS= read -r f; do
  rel=${f#probe/}
  from=${rel%%/*}; [ "$from" = "$rel" ] && from=.
  [ -n "${rank[$from]+x}" ] || { echo "probing: error: $f: folder probe/$from/ has no layer in tools/check_layers.sh" >&2; bad=1; continue; }
  while IFS= read -r inc; do
    to=${inc%%/*}
    [ "$inc" = probe.h ] && [ "$from" != . ] && to=.  # the probe's entry points: the top
    [ "$to" = "$inc" ] && continue       # same folder (or common/): by name alone
    [ "$to" = dap ] && continue          # the protocol, below everything
    [ -n "${rank[$to]+x}" ] || continue  # not a probe folder
    if [ "$to" != "$from" ] && [ "${rank[$to]}" -ge "${rank[$from]}" ]; then
      echo "probing: error: $f includes \"$inc\": probe/$to/ is not below probe/$from/ (tools/check_layers.sh)" >&2
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find probe -name '*.[ch]' -not -path 'probe/python/*' | sort)
# Top-level folders: the CLI and injector are apart from the probe; the protocol apart from both.
if grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"probe/' injector dap --include='*.[ch]'; then
  echo "probing: error: the lines above include the probe's headers from injector/ or dap/" >&2
  bad=1
fi
if grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"injector/' dap probe --include='*.[ch]'; then
  echo "probing: error: the lines above include injector/ headers from dap/ or probe/" >&2
  bad=1
fi
# The CLI's private library (injector/cli/ext/, probing-cli.so) is below the CLI it serves; the
# renderers (injector/render/: pure functions of folded stacks) are below both.
if grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"(cli\.h|injector/(cli|ptrace)/)' injector/cli/ext --include='*.[ch]'; then
  echo "probing: error: the lines above include the CLI's headers from its private library (injector/cli/ext/)" >&2
  bad=1
fi
exit $bad
