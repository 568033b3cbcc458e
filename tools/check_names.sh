#!/usr/bin/env bash
# Every name says its folder (docs/architecture.md, "The house"; docs/style.md, "Layout and
# names"): each folder's external functions carry the one prefix of the table below, which no
# other folder's functions start with (the longest prefix that fits names the owner: the
# reader's probing_read_ is not the probe's probing_), and a header declares only functions and
# variables defined in its own folder. Definitions are read with Universal Ctags, run by `make`
# beside tools/check_layers.sh. Prints each name that breaks this and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
ctags --version 2>/dev/null | grep -q '^Universal Ctags' || {
  echo "probing: error: Universal Ctags is missing (tools/check_names.sh reads definitions with it): run 'make deps' or 'apt-get install universal-ctags'" >&2
  exit 1
}
# folder (its subfolders too, unless listed themselves) and its prefix.
table=(
  "common pb_"
  "dap dap_"
  "probe probing_"
  "probe/core core_"
  "probe/pyrt pyrt_"
  "probe/sig sig_"
  "probe/gil gil_"
  "probe/prof prof_"
  "probe/crash crash_"
  "probe/sql sql_"
  "probe/torch torch_"
  "probe/debugger dbg_"
  "probe/server srv_"
  "probe/reader probing_read_"
  "injector/ptrace ptrace_"
  "injector/render flame_"
  "injector/cli cli_"
  "injector/cli/ext ext_"
)
# The C entry point and what a library's loader calls by name.
allowed=" main "
ctags -x --_xformat='%K|%{file}|%F|%N' --kinds-C=fpvx --language-force=C \
  $(find common dap probe injector -name '*.[ch]' -not -path 'probe/python/*' | sort) 2>/dev/null |
  awk -F'|' -v table="$(printf '%s\n' "${table[@]}")" -v allowed="$allowed" '
    BEGIN {
      n = split(table, rows, "\n")
      for (i = 1; i <= n; i++) if (split(rows[i], f, " ") == 2) { pre[f[1]] = f[2]; owner[f[2]] = f[1] }
      bad = 0
    }
    function unit(path,   d, u) {
      d = path; sub(/\/[^\/]*$/, "", d)
      for (;;) {
        if (d in pre) return d
        if (d !~ /\//) return ""
        sub(/\/[^\/]*$/, "", d)
      }
    }
    function prefix_owner(name,   p, best) {
      best = ""
      for (p in owner) if (index(name, p) == 1 && length(p) > length(best)) best = p
      return best == "" ? "" : owner[best]
    }
    $2 == "file" { next }     # static
    {
      kind = $1; path = $3; name = $4; u = unit(path)
      if (u == "") { if (!(path in nopre)) printf "probing: error: %s: its folder has no prefix in tools/check_names.sh\n", path > "/dev/stderr"; nopre[path] = 1; bad = 1; next }
      if (kind == "function") { defs[name] = (name in defs ? defs[name] " " : "") u; where[name] = path }
      else if (kind == "variable") { vdefs[name] = (name in vdefs ? vdefs[name] " " : "") u }
      else if (path ~ /\.h$/) { decl[++nd] = name; dkind[nd] = kind; dpath[nd] = path; dunit[nd] = u }
    }
    END {
      for (name in defs) {
        if (index(allowed, " " name " ")) continue
        split(defs[name], us, " "); u = us[1]; o = prefix_owner(name)
        if (o == "") { printf "probing: error: %s (%s): no folder'"'"'s prefix (%s is %s/'"'"'s)\n", name, where[name], pre[u], u > "/dev/stderr"; bad = 1 }
        else if (o != u) { printf "probing: error: %s (%s): the prefix of %s/, defined in %s/ (prefix %s)\n", name, where[name], o, u, pre[u] > "/dev/stderr"; bad = 1 }
      }
      for (i = 1; i <= nd; i++) {
        name = decl[i]; d = (dkind[i] == "prototype") ? defs[name] : vdefs[name]
        sub(/^ +/, "", d)
        if (d == "" || index(" " d " ", " " dunit[i] " ")) continue
        printf "probing: error: %s declares %s, defined in %s/, not in %s/\n", dpath[i], name, d, dunit[i] > "/dev/stderr"; bad = 1
      }
      exit bad
    }' || {
  echo "probing: error: the names above do not say their folder: rename them with their folder's prefix, or move the declaration to the folder that defines it (tools/check_names.sh)" >&2
  exit 1
}
