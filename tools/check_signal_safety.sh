#!/usr/bin/env bash
# The signal handlers' contract (docs/architecture.md), checked on the objects that run in
# signal context: none of them references an allocator, a lock, the dynamic loader, libunwind,
# stdio formatting or a GIL-taking CPython call, and the unwinder's objects (unwind.o, its CFI
# reader unwind_cfi.o and its caches unwind_cache.o) reference nothing beyond their allow-lists
# (read.o's functions and each other's among them: read.o is checked itself). The
# objects: probe/sig/'s handlers and readers, and the layers of probe/pyrt/ they run (read.o:
# the fault-proof read; lines.o: line tables; frames.o: the frame walker the snapshot shares).
# Usage: check_signal_safety.sh OBJDIR... (the folders that hold probe/sig/'s objects: the
# version-independent one and one CPython's; probe/pyrt/'s objects are looked for next to each,
# in ../pyrt).
set -euo pipefail
dirs=()
for d in "$@"; do dirs+=("$d" "$d/../pyrt"); done
find_obj() {
  for d in "${dirs[@]}"; do [ -f "$d/$1.o" ] && { echo "$d/$1.o"; return; }; done
  echo "probing: error: $1.o not in ${dirs[*]}: build the probe first" >&2
  exit 1
}
deny='^(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|pthread_mutex_.*|pthread_rwlock_.*|pthread_cond_.*|pthread_spin_.*|sem_wait|dl_iterate_phdr|dladdr.*|dlsym|dlopen|dlclose|_dl_find_object|_U.*|unw_.*|backtrace.*|printf|fprintf|snprintf|vsnprintf|sprintf|PyGILState_Ensure|PyEval_.*|PyObject_.*|__tls_get_addr)$'
declare -A allow=(
  [unwind]='^(__errno_location|getpid|memcpy|memset|memcmp|process_vm_readv|pyrt_read|pyrt_own_copy|pyrt_iov_pages|sig_unwind_cfi_[a-z_]+|sig_unwind_cache_[a-z_]+|sig_unwind_hdr_parse)$'
  [unwind_cfi]='^(memcpy|memset|memcmp|pyrt_read)$'
  [unwind_cache]='^(memcpy|memset)$'
)
bad=0
for o in unwind unwind_cfi unwind_cache unwind_maps prof_sig stack_sig crash_sig pyrt_sig read lines frames; do
  f=$(find_obj $o)
  hits=$(nm -u "$f" | awk '{print $2}' | grep -E "$deny" || true)
  if [ -n "$hits" ]; then
    echo "probing: error: $o.o (signal context) references $(echo $hits): not async-signal-safe" >&2
    bad=1
  fi
done
# A sanitizer build (make asan) instruments every access with calls to its runtime: those are
# the build's, not the code's. On aarch64 gcc calls libgcc's outline atomics (-moutline-atomics,
# the default since gcc 10: __aarch64_cas4_acq_rel...): one LSE instruction or an LL/SC loop each,
# no lock, no allocation.
instr='^(__asan_.*|__ubsan_.*|__sanitizer_.*|_GLOBAL_OFFSET_TABLE_|__aarch64_(cas|swp|ldadd|ldclr|ldeor|ldset)(1|2|4|8|16)_(relax|acq|rel|acq_rel))$'
for o in "${!allow[@]}"; do
  extra=$(nm -u "$(find_obj $o)" | awk '{print $2}' | grep -vE "${allow[$o]}" | grep -vE "$instr" || true)
  if [ -n "$extra" ]; then
    echo "probing: error: $o.o references $(echo $extra) beyond its allow-list (tools/check_signal_safety.sh)" >&2
    bad=1
  fi
done
exit $bad
