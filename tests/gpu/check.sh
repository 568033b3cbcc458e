#!/usr/bin/env bash
# tests/gpu/check.sh [TARBALL]: probing's release on a machine with an NVIDIA GPU, a python3
# with a CUDA build of torch, no compiler and no network. Unpacks the release tarball (default
# build/dist/probing-*-linux-x86_64.tar.gz of this tree, from `make dist`), starts a small CUDA
# training job (samples/cuda_train.py), and runs against it: inject, debug --dump (and
# --native), the GPU tables (system.gpus, system.gpu_processes, gpu_metrics), memory (torch's
# caching allocator), memory --snapshot (a pickle PyTorch's memory viewer reads), perf --torch
# (a Chrome trace), then two ranks of the job on the one GPU with gloo on CUDA tensors:
# cluster list, cluster stacks, perf --comm and cluster collectives. Prints one table:
# command, ok/FAIL, seconds; each FAIL's output after it. All within 5 minutes (CHECK_BUDGET_S);
# it only reads the GPU (nothing reset, reconfigured or clocked), and ends every process it
# started, by its pid.
# PYTHON=... picks the interpreter (default python3). Exit: 0 every check ok, 1 a check failed,
# 2 it could not start (no tarball, no python with torch), 3 no NVIDIA GPU or driver here (the
# steps before the GPU ran; the rest did not).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
budget=${CHECK_BUDGET_S:-300}
start=$SECONDS
tarball=${1:-}
if [ -z "$tarball" ]; then
  tarball=$(ls -t "$root"/build/dist/probing-*-linux-x86_64.tar.gz 2>/dev/null | head -1)
fi
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
  echo "check.sh: no release tarball: give its path, or build it with 'make dist' (build/dist/)" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/probing-gpu-check.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -d "$work" ] && rm -rf "$work/rel"
}
trap cleanup EXIT

rows=() fails=() n=0
# step NAME CMD...: runs CMD (bounded by what is left of the budget, at most 120 s), records
# ok/FAIL and its seconds; its output is kept in $work/N.log.
step() {
  local name=$1; shift
  n=$((n + 1))
  local left=$((budget - (SECONDS - start))) log="$work/$n.log"
  [ "$left" -gt 120 ] && left=120
  if [ "$left" -le 0 ]; then
    rows+=("$(printf '%-44s %-5s %6s' "$name" FAIL -)"); fails+=("$name: the 5-minute budget was spent")
    return 1
  fi
  local t0 rc
  t0=$(date +%s.%N)
  # In a bash of its own (the shell functions below are exported), so that timeout can end it.
  timeout -k 5 "$left" bash -c '"$@"' step "$@" >"$log" 2>&1
  rc=$?
  local dt
  dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if [ $rc -eq 0 ]; then
    rows+=("$(printf '%-44s %-5s %6s' "$name" ok "$dt")")
  else
    rows+=("$(printf '%-44s %-5s %6s' "$name" FAIL "$dt")")
    fails+=("$name (exit $rc):"$'\n'"$(tail -n 15 "$log" | sed 's/^/    /')")
  fi
  return $rc
}

report() {
  echo
  printf '%-44s %-5s %6s\n' command result sec
  printf '%-44s %-5s %6s\n' "--------------------------------------------" ----- ------
  printf '%s\n' "${rows[@]}"
  echo "total $((SECONDS - start)) s${1:-; logs in $work}"
  for f in "${fails[@]}"; do echo; echo "FAIL $f"; done
}

# ---- the release, the interpreter ----
unpack() {
  mkdir -p "$work/rel" && tar -xzf "$tarball" -C "$work/rel" || return 1
  P=$(ls "$work"/rel/probing-*/bin/probing) && "$P" --version
}
export work tarball PY root
export -f unpack
step "unpack $(basename "$tarball")" unpack || { report; exit 2; }
P=$(ls "$work"/rel/probing-*/bin/probing); export P
step "$PY: import torch" "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' || { report; exit 2; }
cat "$work/$n.log"

# ---- the GPU: only read, in a process of its own ----
gpu_here() {
  [ -e /dev/nvidiactl ] || { echo "no NVIDIA GPU or driver here (/dev/nvidiactl is absent)"; return 1; }
  "$PY" -c 'import sys, torch
if torch.version.cuda is None: sys.exit("torch %s is a CPU build" % torch.__version__)
if not torch.cuda.is_available(): sys.exit("torch sees no CUDA device")
print(torch.cuda.device_count(), "device(s):", torch.cuda.get_device_name(0))'
}
t0=$SECONDS
if ! why=$(gpu_here 2>&1); then
  rows+=("$(printf '%-44s %-5s %6s' "a CUDA device for torch" none "$((SECONDS - t0)).0")")
  report " "
  echo
  echo "check.sh: $(tail -n 1 <<<"$why"): the GPU checks did not run"
  rm -rf "$work"
  exit 3
fi
rows+=("$(printf '%-44s %-5s %6s' "a CUDA device: $why" ok "$((SECONDS - t0)).0")")

# ---- one CUDA training job ----
# wait_ready LOG PID: its "ready" line within 110 s (CUDA's start can be slow), unless it exits.
wait_ready() {
  local i
  for i in $(seq 1 220); do
    grep -q '^ready ' "$1" && return 0
    kill -0 "$2" 2>/dev/null || { echo "it exited:"; tail -n 20 "$1"; return 1; }
    sleep 0.5
  done
  echo "no 'ready' line in 110 s:"; tail -n 20 "$1"; return 1
}
export -f wait_ready
export PROBING_HISTORY_INTERVAL_S=1
CUDA_TRAIN_RECORD=1 "$PY" "$root/samples/cuda_train.py" --seconds 400 >"$work/job.out" 2>&1 &
job=$!; pids+=("$job"); export job
step "start samples/cuda_train.py (pid $job)" wait_ready "$work/job.out" "$job"
step "inject" "$P" -p "$job" inject
has() { # has PATTERN CMD...: CMD succeeds and its output matches PATTERN (grep -E)
  local pat=$1; shift
  local out; out=$("$@" 2>&1); local rc=$?
  echo "$out"
  [ $rc -eq 0 ] && grep -Eq "$pat" <<<"$out"
}
export -f has
step "debug --dump" has 'cuda_train.py' "$P" -p "$job" debug --dump
step "debug --dump --native" has 'cuda_train.py' "$P" -p "$job" debug --dump --native
step "query system.gpus" has '^0 ' "$P" -p "$job" query \
  "SELECT gpu, name, util_gpu, mem_used, mem_total, temperature_c, power_w, clock_sm_mhz, throttle, ecc_uncorrected, xid_count FROM system.gpus"
step "query system.gpu_processes (this job)" has '"pid":[[:space:]]*'"$job"'[^0-9]|"is_self":[[:space:]]*1' "$P" -p "$job" query \
  "SELECT gpu, pid, used_memory, is_self FROM system.gpu_processes" -f json
# system.gpus and system.gpu_processes against nvidia-smi's own reading (read-only queries): the
# NVML declarations of common/nvml.c are written by hand, so their figures are checked here.
vs_smi() {
  command -v nvidia-smi >/dev/null || { echo "no nvidia-smi here: nothing to compare"; return 0; }
  nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits >"$work/smi.csv" || return 1
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits >"$work/smi-apps.csv" || return 1
  "$P" -p "$job" query "SELECT gpu, uuid, name, mem_total FROM system.gpus" -f json >"$work/gpus.json" || return 1
  "$P" -p "$job" query "SELECT gpu, pid, used_memory FROM system.gpu_processes" -f json >"$work/procs.json" || return 1
  "$PY" - "$work" "$job" <<'PY'
import json, sys
work, job = sys.argv[1], int(sys.argv[2])
smi = [[f.strip() for f in l.split(",")] for l in open(work + "/smi.csv") if l.strip()]
ours = {g["gpu"]: g for g in json.load(open(work + "/gpus.json"))}
bad = 0
for idx, uuid, name, total in smi:
    g = ours.get(int(idx))
    ok = g and g["uuid"] == uuid and g["name"] == name and abs(g["mem_total"] / 2**20 - float(total)) <= 1
    print("gpu", idx, "nvidia-smi", uuid, name, total, "MiB; probing", g and (g["uuid"], g["name"], g["mem_total"] // 2**20), "ok" if ok else "DIFFERENT")
    bad += not ok
apps = {int(l.split(",")[0]): float(l.split(",")[1]) for l in open(work + "/smi-apps.csv") if l.strip() and l.split(",")[1].strip().isdigit()}
procs = {p["pid"]: p for p in json.load(open(work + "/procs.json"))}
print("nvidia-smi compute apps", apps, "; probing", {k: v["used_memory"] for k, v in procs.items()})
if apps and not set(apps) & set(procs):
    print("no pid in common"); bad += 1
for pid in set(apps) & set(procs):
    u = procs[pid]["used_memory"]
    if u is not None and abs(u / 2**20 - apps[pid]) > 256:
        print("pid", pid, "memory differs"); bad += 1
sys.exit(1 if bad else 0)
PY
}
export -f vs_smi
step "system.gpus, gpu_processes = nvidia-smi" vs_smi
gpu_history() {
  local i
  for i in $(seq 1 20); do
    kill -0 "$job" 2>/dev/null || { echo "the job has exited"; return 1; }
    "$P" -p "$job" query "SELECT count(*) AS n, max(gpu_util) AS util FROM gpu_metrics" -f csv | tee "$work/gm.csv"
    [ "$(sed -n 2p "$work/gm.csv" | cut -d, -f1)" -ge 2 ] 2>/dev/null && return 0
    sleep 1
  done
  return 1
}
export -f gpu_history
step "query gpu_metrics (history)" gpu_history
step "memory (torch's caching allocator)" has 'CUDA 0 .*caching allocator' "$P" -p "$job" memory --top 3
step "query python.cuda_memory" has '^[0-9]+ ' "$P" -p "$job" query \
  "SELECT device, allocated, reserved, max_allocated, inactive_split, alloc_retries, ooms FROM python.cuda_memory WHERE allocated > 0"
snapshot() {
  "$P" -p "$job" memory --top 1 --snapshot "$work/snapshot.pickle" >"$work/snap.out" 2>&1
  local rc=$?
  tail -n 2 "$work/snap.out"
  [ $rc -eq 0 ] || return 1
  "$PY" -c 'import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
print("segments", len(s["segments"]), "trace entries", sum(len(t) for t in s.get("device_traces", [])))
sys.exit(0 if s["segments"] else 1)' "$work/snapshot.pickle"
}
export -f snapshot
step "memory --snapshot" snapshot
torch_trace() {
  "$P" -p "$job" perf --torch --every 1 --trace "$work/trace.json" --steps 3 --timeout 60 || return 1
  "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"] if isinstance(d, dict) else d
print(len(ev), "events")
sys.exit(0 if len(ev) > 3 else 1)' "$work/trace.json" || return 1
  "$P" -p "$job" query "SELECT module, stage, round(avg(duration) * 1000, 3) AS ms FROM python.torch_trace GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 6"
  "$P" -p "$job" perf --torch --stop
}
export -f torch_trace
step "perf --torch --trace" torch_trace
kill "$job" 2>/dev/null

# ---- two ranks on the one GPU, gloo on CUDA tensors ----
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for r in 0 1; do
  RANK=$r LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$PY" "$root/samples/cuda_train.py" --seconds 300 >"$work/rank$r.out" 2>&1 &
  pids+=("$!"); eval "rank$r=$!"
done
export rank0 rank1
both_ready() { wait_ready "$work/rank0.out" "$rank0" && wait_ready "$work/rank1.out" "$rank1"; }
export -f both_ready
step "start 2 ranks, gloo (pids $rank0 $rank1)" both_ready
step "cluster list" has '2 ranks found' "$P" cluster list
step "cluster stacks" has '2 ranks answered' "$P" cluster stacks
step "cluster stacks --native" has '2 ranks answered' "$P" cluster stacks --native
step "query system.gpu_processes (both ranks)" has "$rank1" "$P" -p "$rank0" query \
  "SELECT gpu, pid, used_memory FROM system.gpu_processes"
comm() {
  "$P" -p "$rank0" perf --comm && "$P" -p "$rank1" perf --comm || return 1
  sleep 2
  "$P" cluster collectives
}
export -f comm
step "perf --comm, cluster collectives" comm
kill "$rank0" "$rank1" 2>/dev/null

report
[ ${#fails[@]} -eq 0 ]
