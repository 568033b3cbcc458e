# SPDX-License-Identifier: MIT
# probing: one non-recursive Makefile. `make` builds the CLI and one probe library per CPython
# minor version found (tools/pythons.sh; PYTHONS="3.11 3.12" narrows it). Outputs go to
# build/<variant>/ laid out like an install: bin/probing, lib/probing/libprobing-3.X.so.
#   make [all] | test | demo | bench | asan | fuzz | install PREFIX=... | clean | V=1
# Plain `make` only builds: a missing library stops it with one line naming the Debian packages.
# `make deps` installs them (tools/deps.sh); `make demo` and `make test` run it first, then build
# in a recursive $(MAKE), so the build sees flags computed after the install.

.DEFAULT_GOAL := all
VARIANT ?= release
B := build/$(VARIANT)
CC ?= cc
OBJCOPY ?= objcopy
PREFIX ?= /usr/local
DESTDIR ?=
ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS := libcjson libuv sqlite3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# Linked into the probe only: nothing today (native stacks come from probe/sig/unwind.c, which
# signal handlers can run: libunwind could take the loader's lock there).
PROBE_PKGS :=
PROBE_PKG_CFLAGS := $(shell pkg-config --cflags $(PROBE_PKGS) 2>/dev/null)
PROBE_PKG_LIBS := $(shell pkg-config --libs $(PROBE_PKGS) 2>/dev/null)
# The probe links SQLite statically, its symbols hidden (--exclude-libs): its own instance, apart
# from the libsqlite3 a target may load itself (Python's sqlite3 module), so that the limits the
# probe sets (sqlite3_hard_heap_limit64 is process-wide within an instance) never touch the
# target's own databases. docs/tables.md "Limits".
PROBE_SQLITE_A := $(shell pkg-config --variable=libdir sqlite3 2>/dev/null)/libsqlite3.a
# The probe is self-contained, so that it loads into a container whose root has none of our
# libraries: it NEEDs only libc, libm and the loader, plus what it carries beside itself
# (tools/check_needed.sh, run by check-needed). libuv is linked statically too (Debian's PIC
# libuv_a.a), its symbols hidden like SQLite's: a target's own libuv stays apart from ours.
# cJSON has no static archive in Debian: its shared library is carried beside the probes under a
# private soname (libcjson-probing.so.1, found through the run path $ORIGIN; the injector copies
# it along with the probe), so it never clashes with a libcjson.so.1 the target loads itself.
PROBE_UV_A := $(B)/obj/libuv-probe.a
PROBE_UV_SYS_A := $(shell pkg-config --variable=libdir libuv 2>/dev/null)/libuv_a.a
# libuv_a.a is PIE code: its PC-relative references to libc's data are renamed to hidden
# definitions of the probe (probe/core/uv_static.c says why each is safe).
PROBE_UV_SYMS := environ stderr in6addr_any
PROBE_CJSON_SO := $(shell pkg-config --variable=libdir libcjson 2>/dev/null)/libcjson.so.1
PROBE_CJSON := $(B)/lib/probing/libcjson-probing.so.1
PROBE_LINK_LIBS := $(filter-out -lsqlite3 -luv -lcjson,$(PKG_LIBS)) $(PROBE_SQLITE_A) \
                   -lm -Wl,--exclude-libs,libsqlite3.a:libuv-probe.a -Wl,-rpath,'$$ORIGIN'
# Linked into probing-serve only (serve's HTTP server); the probe must never link it.
CLI_PKGS := libmicrohttpd
CLI_PKG_CFLAGS := $(shell pkg-config --cflags $(CLI_PKGS) 2>/dev/null)
CLI_PKG_LIBS := $(shell pkg-config --libs $(CLI_PKGS) 2>/dev/null)
# Linked into the CLI's private library only (probing-cli.so, below): the repl's line
# editing, file:line of native frames from DWARF (with SQLite, for cluster query --reduce),
# pprof's profile.proto (protobuf-c) gzip-compressed (zlib).
EXT_PKGS := libedit libdw libprotobuf-c zlib
EXT_PKG_CFLAGS := $(shell pkg-config --cflags $(EXT_PKGS) 2>/dev/null)
EXT_PKG_LIBS := $(shell pkg-config --libs $(EXT_PKGS) 2>/dev/null)
# pkg-config module -> Debian package, for the one-line error when a library is missing.
DEB_libcjson := libcjson-dev
DEB_libuv := libuv1-dev
DEB_sqlite3 := libsqlite3-dev
DEB_libedit := libedit-dev
DEB_libmicrohttpd := libmicrohttpd-dev
DEB_libdw := libdw-dev
DEB_libprotobuf-c := libprotobuf-c-dev
DEB_zlib := zlib1g-dev
MISSING_PKGS := $(strip $(foreach m,$(PKGS) $(PROBE_PKGS) $(CLI_PKGS) $(EXT_PKGS),\
  $(if $(shell pkg-config --exists $(m) 2>/dev/null && echo y),,$(m))))

WARN := -Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wformat=2 -Wvla \
        -Wwrite-strings -Wundef
ifeq ($(CI),true)
WARN += -Werror
endif
ifeq ($(VARIANT),debug)
OPT := -O0 -g3
else ifeq ($(VARIANT),asan)
OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
OPT := -O2 -g -DNDEBUG
endif
# Includes name their folder: "dap/dap.h" (from the top), "sql/store.h" (from probe/), "pb.h"
# (common/); a header of the same folder by its name alone.
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden $(OPT) $(WARN) -I. -Icommon \
               -Iprobe $(PKG_CFLAGS) -MMD -MP
CFLAGS_EXTRA ?=
LDFLAGS_EXTRA ?=
ifeq ($(VARIANT),asan)
LDFLAGS_EXTRA += -fsanitize=address,undefined
# A sanitized probe needs the sanitizers' runtimes too (targets preload them: make asan).
PROBE_NEEDED_ALLOW := libasan.so.* libubsan.so.*
endif

COMMON_SRCS := $(wildcard common/*.c)
# The protocol only (framing, envelopes, the client), used by both sides; the probe's server
# (session, dispatch, one file per request) is probe/server/.
DAP_SRCS := $(wildcard dap/*.c)
DAP_CLIENT_SRCS := $(DAP_SRCS)
# injector/: the ptrace injector (ptrace/, the only part cross-built for aarch64), the flame
# graph renderers (render/: pure functions of folded stacks) and the CLI (cli/: main.c, a file
# per command, cluster/, perf/ and serve/ in folders of their own).
INJ_SRCS := $(wildcard injector/ptrace/*.c injector/ptrace/arch/*.c)
RENDER_SRCS := $(wildcard injector/render/*.c)
EXT_SRCS := $(wildcard injector/cli/ext/*.c)
CLI_SRCS := $(filter-out $(EXT_SRCS),$(wildcard injector/cli/*.c injector/cli/*/*.c))
SERVE_SRCS := $(wildcard injector/cli/serve/*.c)
# The probe's sources that include CPython's headers are built once per CPython minor version;
# the rest once, without CPython's include path (so a misplaced one fails to compile).
PROBE_PY_SRCS := $(shell tools/probe_sources.sh py)
PROBE_PLAIN_SRCS := $(shell tools/probe_sources.sh plain)
# The server without its transport (listen.c): what the unit tests and fuzzers drive with fakes.
SERVER_SRCS := $(filter-out probe/server/listen.c,$(wildcard probe/server/*.c probe/server/req/*.c))

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))

# ---- version-independent objects (CLI, injector, dap, common) ----
$(B)/obj/%.o: %.c | check-libs
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS_EXTRA) -c $< -o $@

# `probing serve`'s static pages (injector/cli/serve/web/), compiled into the CLI as C arrays (xxd).
WEB_FILES := $(sort $(wildcard injector/cli/serve/web/*))
$(B)/gen/web_assets.c: tools/web_embed.sh $(WEB_FILES)
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	$(Q)tools/web_embed.sh $@ $(WEB_FILES)

# Two links of the CLI: `probing` without the HTTP server (libmicrohttpd pulls in GnuTLS and a
# dozen libraries every command would load), whose `serve` execs the full one, installed beside
# the probes as lib/probing/probing-serve (injector/cli/main.c, CLI_SERVE_EXEC).
CLI_BIN := $(B)/bin/probing
SERVE_BIN := $(B)/lib/probing/probing-serve
CLI_LIGHT_SRCS := $(filter-out injector/cli/main.c $(SERVE_SRCS),$(CLI_SRCS))
$(B)/obj/injector/cli/main-light.o: injector/cli/main.c | check-libs
	@mkdir -p $(dir $@)
	@echo "  CC      $< (without serve)"
	$(Q)$(CC) $(BASE_CFLAGS) -DCLI_SERVE_EXEC -c $< -o $@
# Both link cJSON and libc only (SQLite is the private library's): what every command loads.
CLI_LIBS := $(filter-out -lsqlite3 -luv,$(PKG_LIBS))
$(CLI_BIN): $(B)/obj/injector/cli/main-light.o $(call obj,$(CLI_LIGHT_SRCS) $(RENDER_SRCS) $(INJ_SRCS) $(DAP_CLIENT_SRCS) $(COMMON_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -o $@ $^ $(CLI_LIBS) $(LDFLAGS_EXTRA) -lpthread
$(SERVE_BIN): $(call obj,$(CLI_SRCS) $(RENDER_SRCS) $(INJ_SRCS) $(DAP_CLIENT_SRCS) $(COMMON_SRCS) $(B)/gen/web_assets.c)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -o $@ $^ $(CLI_LIBS) $(CLI_PKG_LIBS) $(LDFLAGS_EXTRA) -lpthread
$(call obj,injector/cli/serve/serve.c): CFLAGS_EXTRA += $(CLI_PKG_CFLAGS)
# The CLI's private library (injector/cli/ext/, ext.h): what needs libdw, libelf, libedit or
# SQLite (and the six libraries behind them), dlopened by the few commands that use it
# (injector/cli/ext_load.c), so that inject, debug --dump and the rest start without them.
# -z defs: it calls nothing of the CLI (an executable exports nothing to it).
EXT_LIB := $(B)/lib/probing/probing-cli.so
# pprof's messages (injector/cli/ext/profile.proto), compiled to C by protoc-c at build time.
PROTO_GEN := $(B)/gen/profile.pb-c.c
$(B)/gen/profile.pb-c.h: $(PROTO_GEN)
$(PROTO_GEN): injector/cli/ext/profile.proto | check-libs
	@mkdir -p $(dir $@)
	@echo "  PROTOC  $<"
	$(Q)protoc-c --c_out=$(B)/gen --proto_path=injector/cli/ext $<
$(call obj,$(PROTO_GEN)): CFLAGS_EXTRA += $(EXT_PKG_CFLAGS)
$(call obj,injector/cli/ext/pprof.c): $(B)/gen/profile.pb-c.h
$(EXT_LIB): $(call obj,$(EXT_SRCS) common/evalpart.c common/regfile.c $(PROTO_GEN) \
                       injector/render/flame_tree.c injector/render/intern.c)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -shared -Wl,-soname,probing-cli.so -Wl,-z,defs -o $@ $^ $(EXT_PKG_LIBS) \
	    $(filter -lcjson -lsqlite3,$(PKG_LIBS)) $(LDFLAGS_EXTRA)
$(call obj,$(EXT_SRCS)): CFLAGS_EXTRA += $(EXT_PKG_CFLAGS) -I$(B)/gen

# ---- one probe library per CPython minor version ----
# --build: this machine's CPython 3.8-3.13, then 3.14/3.15 from the Debian sid root's headers
# when tools/sid-root.sh has built it (plain `make` never builds it: `make test` does).
PY_LINES := $(shell PYTHONS="$(PYTHONS)" tools/pythons.sh --build)
# "3.11=/path/include/python3.11" per minor, computed once: the include dir of minor M is
# $(call pyinc,M).
PY_PAIRS := $(shell printf '%s %s %s\n' $(PY_LINES) | awk 'NF == 3 {print $$1 "=" $$2}')
PY_MINORS := $(foreach p,$(PY_PAIRS),$(firstword $(subst =, ,$(p))))
pyinc = $(patsubst $(1)=%,%,$(filter $(1)=%,$(PY_PAIRS)))

# 3.15's pyport.h tests _Py_STDC_VERSION before pymacro.h defines it (-Wundef): defined here
# as pymacro.h does (an identical redefinition).
PY_FIXES := -D_Py_STDC_VERSION=__STDC_VERSION__
pyflags = -I$(call pyinc,$(1)) -I$(call pyinc,$(1))/internal -idirafter $(dir $(call pyinc,$(1))) $(PY_FIXES)

# Per CPython minor M: the probe's objects in obj/pyM/, the out-of-process reader's
# (debug --dump --no-inject; probe/reader/reader.c: the same frame walker built with
# PYRT_REMOTE, loaded by the CLI, never by a target) in obj/rdM/. PYV, set per object folder,
# picks the minor's headers; the recipes below are shared by every minor.
READER_SRCS := probe/pyrt/read.c probe/pyrt/lines.c probe/pyrt/frames.c probe/pyrt/memlocals.c \
               probe/pyrt/numpy.c \
               probe/sig/pyrt_sig.c \
               probe/sig/unwind.c probe/sig/unwind_cfi.c probe/sig/unwind_cache.c \
               probe/sig/unwind_maps.c probe/sig/unwind_table.c probe/reader/reader.c \
               probe/pyrt/asyncio_mem.c probe/pyrt/atasks.c probe/pyrt/atasks_json.c common/err.c
probe_objs = $(patsubst %.c,$(B)/obj/py$(1)/%.o,$(PROBE_PY_SRCS))
reader_objs = $(patsubst %.c,$(B)/obj/rd$(1)/%.o,$(READER_SRCS))
PROBE_LIBS := $(foreach v,$(PY_MINORS),$(B)/lib/probing/libprobing-$(v).so)
READER_LIBS := $(foreach v,$(PY_MINORS),$(B)/lib/probing/libprobing-read-$(v).so)
PROBE_SHARED_OBJS := $(call obj,$(PROBE_PLAIN_SRCS) $(DAP_SRCS) $(COMMON_SRCS)) $(PROBE_CJSON) $(PROBE_UV_A)

define COMPILE_PY
@mkdir -p $(dir $@)
	@echo "  CC$(PYV)  $<"
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS_EXTRA) $(PROBE_PKG_CFLAGS) $(call pyflags,$(PYV)) -c $< -o $@
endef
define COMPILE_RD
@mkdir -p $(dir $@)
	@echo "  CCrd$(PYV) $<"
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS_EXTRA) -DPYRT_REMOTE $(call pyflags,$(PYV)) -c $< -o $@
endef
define LINK_PROBE
@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -shared -Wl,-soname,$(notdir $@) -o $@ $^ $(PROBE_LINK_LIBS) $(PROBE_PKG_LIBS) $(LDFLAGS_EXTRA) -lpthread -ldl
endef
define LINK_READER
@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -shared -Wl,-soname,$(notdir $@) -o $@ $^ $(PKG_LIBS) $(LDFLAGS_EXTRA)
endef

# One line per rule and minor (make has no pattern with two stems), naming the recipes above
# unexpanded ($(value ...)): they expand when they run.
$(foreach v,$(PY_MINORS),$(eval $(B)/obj/py$(v)/% $(B)/obj/rd$(v)/%: PYV := $(v)))
$(foreach v,$(PY_MINORS),$(eval $(B)/obj/py$(v)/%.o: %.c | check-libs ; $(value COMPILE_PY)))
$(foreach v,$(PY_MINORS),$(eval $(B)/obj/rd$(v)/%.o: %.c | check-libs ; $(value COMPILE_RD)))
$(foreach v,$(PY_MINORS),$(eval $(B)/lib/probing/libprobing-$(v).so: $(call probe_objs,$(v)) $(PROBE_SHARED_OBJS) ; $(value LINK_PROBE)))
$(foreach v,$(PY_MINORS),$(eval $(B)/lib/probing/libprobing-read-$(v).so: $(call reader_objs,$(v)) ; $(value LINK_READER)))
$(PROBE_UV_A): $(PROBE_UV_SYS_A) | check-libs
	@mkdir -p $(dir $@)
	@echo "  OBJCOPY $@"
	$(Q)$(OBJCOPY) $(foreach s,$(PROBE_UV_SYMS),--redefine-sym $(s)=probe_uv_$(s)) $< $@
$(PROBE_CJSON): $(PROBE_CJSON_SO) | check-libs
	@mkdir -p $(dir $@)
	@echo "  CARRY   $@"
	$(Q)cp -L $< $@.tmp && patchelf --set-soname $(notdir $@) $@.tmp && mv $@.tmp $@

PYPKG_SRCS := $(wildcard probe/python/probing/*.py) probe/python/probing.pth

# What every build checks of the probe (each its own target; `all` runs them all).
# CHECKS: what `make` checks after the build (tools/dist.sh keeps those of the binaries only).
CHECKS ?= check-exports check-needed check-signal-safety check-layers check-names
.PHONY: all deps check-libs format-check test test-suite unit pyrt e2e demo demo-run bench asan fuzz fuzz-replay \
        install clean cross-aarch64 checks $(CHECKS) fresh-check dist dist-check release-check \
        dist-aarch64 dist-check-aarch64 release-check-aarch64
all: $(CLI_BIN) $(SERVE_BIN) $(EXT_LIB) $(PROBE_LIBS) $(READER_LIBS) checks

# Installs every Debian package that the build, tests, demo and benchmarks use (root or sudo).
deps:
	@tools/deps.sh

# Stops the build before any compile when a library's development package is missing.
check-libs:
	@if [ -n "$(MISSING_PKGS)" ]; then \
	  echo "probing: error: missing libraries ($(MISSING_PKGS)): run 'make deps' or 'apt-get install $(foreach m,$(MISSING_PKGS),$(DEB_$(m)))'" >&2; \
	  exit 1; fi
	@command -v protoc-c >/dev/null || { \
	  echo "probing: error: protoc-c is missing (it compiles pprof's profile.proto): run 'make deps' or 'apt-get install protobuf-c-compiler'" >&2; \
	  exit 1; }
	@command -v patchelf >/dev/null || { \
	  echo "probing: error: patchelf is missing (it names the cJSON the probe carries): run 'make deps' or 'apt-get install patchelf'" >&2; \
	  exit 1; }
	@if [ -z "$(PY_MINORS)" ]; then \
	  echo "probing: error: no CPython 3.8-3.15 headers found (pyenv or Debian's python3-dev): run 'make deps' or install an interpreter with its headers" >&2; \
	  exit 1; fi

# The probe is a guest: it exports exactly the entry points probe/probe.h declares
# (docs/style.md); its folders are layers (tools/check_layers.sh); every name says its folder
# (tools/check_names.sh); its signal handlers' objects reference nothing that could block
# (tools/check_signal_safety.sh).
checks: $(CHECKS)
check-exports: $(PROBE_LIBS)
	@tools/check_exports.sh $(PROBE_LIBS)
check-needed: $(PROBE_LIBS)
	@NEEDED_ALLOW="$(PROBE_NEEDED_ALLOW)" tools/check_needed.sh $(PROBE_LIBS)
check-signal-safety: $(PROBE_LIBS)
	@for v in $(PY_MINORS); do tools/check_signal_safety.sh $(B)/obj/probe/sig $(B)/obj/py$$v/probe/sig || exit 1; done
check-layers:
	@tools/check_layers.sh
check-names:
	@tools/check_names.sh
# ---- tests ----
# The signal-side unwinder without its module table's builder or maps finder: what the unit
# tests and the eh_frame fuzzer drive.
UNWIND_SRCS := probe/sig/unwind.c probe/sig/unwind_cfi.c probe/sig/unwind_cache.c
UNIT_SRCS := $(wildcard tests/unit/*.c)
# The CLI as `probing` links it (without main.c) and serve's command line (args.c, no HTTP):
# the commands' parse halves and the cluster's grouping are unit-tested without a process.
UNIT_CLI_SRCS := $(CLI_LIGHT_SRCS) injector/cli/serve/args.c
# The rollups of history tables (SQLite, no task thread): tests/unit/test_rollup.c.
UNIT_PROBE_SRCS := probe/sql/rollup.c probe/debugger/bpcond.c
UNIT_BIN := $(B)/tests/unit-tests
# What the unit tests and the fuzz harnesses both build, with tests/unit's fakes in place of the
# rest of the probe: the protocol, the server without its transport, and the pure parts.
TESTED_SRCS := $(DAP_SRCS) $(SERVER_SRCS) $(COMMON_SRCS) probe/pyrt/snapshot.c probe/pyrt/atasks.c \
               probe/pyrt/atasks_json.c probe/core/settings.c probe/core/settings_compat.c \
               probe/core/rows.c probe/gil/eval_result.c probe/prof/modules.c injector/cli/srccache.c
FAKE_SRCS := $(wildcard tests/unit/fake_*.c)
# The unit tests add the injector, the renderers, the unwinder and the CLI (UNIT_SRCS holds the
# fakes).
$(UNIT_BIN): $(call obj,$(UNIT_SRCS) $(TESTED_SRCS) $(INJ_SRCS) $(RENDER_SRCS) $(UNWIND_SRCS) \
                         probe/sig/unwind_maps.c probe/pyrt/read.c \
                         $(filter-out $(TESTED_SRCS),$(UNIT_CLI_SRCS)) $(UNIT_PROBE_SRCS))
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -o $@ $^ $(PKG_LIBS) $(LDFLAGS_EXTRA) -lpthread -Wl,--wrap=calloc \
	  -Wl,--wrap=realloc -Wl,--wrap=strdup

unit: all $(UNIT_BIN)
	$(UNIT_BIN)

# PYTEST_ARGS: pytest's options and, to run part of the suite, its files (tests/...); without
# a file, all of tests/e2e. E2E_SLOWEST: how many of the slowest tests to list at the end
# (`make test` lists 40: where CI's time goes), every test's time then written to
# $(B)/e2e-times.xml and $(B)/e2e-times-serial.xml (JUnit XML).
# E2E_JOBS: how many pytest-xdist workers share the tests (two per core, at most 8: the tests
# mostly wait on their targets), a file's tests on one worker; then the files marked serial
# (pytestmark = pytest.mark.serial: node-wide listings, the machine's shared directories, timings,
# rates and overheads) run alone, one at a time. E2E_JOBS=1: everything in one pytest, in order.
E2E_SLOWEST ?= 0
E2E_JOBS ?= $(shell n=$$(( $$(nproc) * 2 )); echo $$(( n > 8 ? 8 : n )))
E2E_PATHS = $(if $(filter tests/%,$(PYTEST_ARGS)),,tests/e2e)

# A stand-in for libnvidia-ml.so.1 with two fake GPUs (tests/gpu/nvml_stub.c), for the tests
# only: tests/e2e/test_gpu.py points targets and probing serve at it with PROBING_NVML_LIB.
NVML_STUB := $(B)/tests/libnvml-stub.so
$(NVML_STUB): tests/gpu/nvml_stub.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) -std=c11 -D_GNU_SOURCE -fPIC -shared -fvisibility=hidden $(OPT) $(WARN) -o $@ $<

E2E_PYTEST = PROBING_BUILD=$(abspath $(B)) /usr/bin/python3 -m pytest -q -p no:cacheprovider
E2E_TIMES = $(if $(filter-out 0,$(E2E_SLOWEST)),--durations=$(E2E_SLOWEST) \
  --junitxml=$(abspath $(B))/e2e-times$(1).xml)
# Exit 5 is pytest's "no test collected" (a file given that is all serial, or none serial).
e2e: all $(NVML_STUB)
ifeq ($(E2E_JOBS),1)
	$(E2E_PYTEST) $(call E2E_TIMES) $(E2E_PATHS) $(PYTEST_ARGS)
else
	@/usr/bin/python3 -c "import xdist" 2>/dev/null || { echo "probing: error: make e2e:" \
	  "python3-pytest-xdist is missing: run 'make deps', or E2E_JOBS=1 for one process" >&2; exit 1; }
	@echo "make e2e: the tests on $(E2E_JOBS) workers (pytest-xdist), then the serial files alone"
	@rc=0; $(E2E_PYTEST) -p xdist -n $(E2E_JOBS) --dist loadfile -m "not serial" $(call E2E_TIMES) \
	  $(E2E_PATHS) $(PYTEST_ARGS) || rc=$$?; [ $$rc = 5 ] && rc=0; \
	echo "make e2e: the serial files (pytest.mark.serial), one test at a time"; \
	$(E2E_PYTEST) -m serial $(call E2E_TIMES,-serial) $(E2E_PATHS) $(PYTEST_ARGS) || \
	  { r=$$?; [ $$r = 5 ] || rc=$$r; }; exit $$rc
endif

# DAP conformance through Microsoft's client library (tests/dap/, Node's test runner), every
# message checked against the DAP schema. npm ci only when node_modules is missing or older
# than the lockfile. DAP_PYTHONS="3.12 debian" narrows the interpreters, DAP_JOBS the parallelism.
.PHONY: dap-test
dap-test: all
	@if [ ! -f tests/dap/node_modules/.package-lock.json ] || \
	    [ tests/dap/package-lock.json -nt tests/dap/node_modules/.package-lock.json ]; then \
	  cd tests/dap && npm ci --no-audit --no-fund; fi
	cd tests/dap && PROBING_BUILD=$(abspath $(B)) node --test --test-concurrency=2 --test-reporter=spec test/

# probing serve's pages in Debian's headless Chromium through playwright-core (tests/web/, pinned
# by its package-lock.json; the browser is /usr/bin/chromium, nothing downloaded at run time).
# Screenshots go to build/web/. npm ci only when node_modules is missing or older than the lock.
.PHONY: web-test
web-test: all
	@if [ ! -f tests/web/node_modules/.package-lock.json ] || \
	    [ tests/web/package-lock.json -nt tests/web/node_modules/.package-lock.json ]; then \
	  cd tests/web && npm ci --no-audit --no-fund; fi
	cd tests/web && PROBING_BUILD=$(abspath $(B)) node --test --test-reporter=spec serve.test.js

# The VS Code extension (vscode-extension/, TypeScript strict, no runtime dependencies).
# `make vsix` packages it with @vscode/vsce into build/; `make vscode-test` builds the .vsix,
# then runs its unit tests (a fake `vscode` module, a fake CLI) and its integration test against
# real targets with this build's CLI and probes (DAP_PYTHONS narrows the interpreters).
# npm ci only when node_modules is missing or older than the lockfile.
VSIX_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' vscode-extension/package.json)
VSIX := build/probing-$(VSIX_VERSION).vsix
.PHONY: vsix vscode-deps vscode-test
vscode-deps:
	@if [ ! -f vscode-extension/node_modules/.package-lock.json ] || \
	    [ vscode-extension/package-lock.json -nt vscode-extension/node_modules/.package-lock.json ]; then \
	  cd vscode-extension && npm ci --no-audit --no-fund; fi
vsix: vscode-deps
	@mkdir -p build
	cd vscode-extension && node_modules/.bin/tsc -p . && \
	  printf '{"prefix": "%s"}\n' '$(PREFIX)' > out/prefix.json && \
	  node_modules/.bin/vsce package --no-dependencies --allow-missing-repository -o ../$(VSIX)
# `make vsix-linux-x64` (after `make dist`): the platform-specific .vsix that carries the release's
# CLI and probes, used when `probing` is not on PATH (tools/vsix_platform.sh).
VSIX_X64 := build/probing-linux-x64-$(VSIX_VERSION).vsix
VSIX_ARM64 := build/probing-linux-arm64-$(VSIX_VERSION).vsix
.PHONY: vsix-linux-x64 vsix-linux-arm64
vsix-linux-x64: vsix
	tools/vsix_platform.sh linux-x64 $(VSIX_X64)
# The same for linux-arm64 (after `make dist-aarch64`); release-check-aarch64 runs its bundled CLI
# in the emulated aarch64 machine when it is there.
vsix-linux-arm64: vsix
	tools/vsix_platform.sh linux-arm64 $(VSIX_ARM64)
vscode-test: all vsix
	cd vscode-extension && PROBING_BUILD=$(abspath $(B)) node --test --test-concurrency=2 \
	  --test-reporter=spec test/unit/ test/integration/

# The extension in a real VS Code (tests/vscode/): code-server from npm, installed once per
# version outside the clone (~/.cache/probing, tools/code-server.sh), our .vsix in it, Debian's
# headless chromium driven by playwright-core (npm ci from the committed lockfile).
CODE_SERVER_VERSION := 4.100.3
.PHONY: vscode-real
vscode-real: all vsix
	@if [ ! -f tests/vscode/node_modules/.package-lock.json ] || \
	    [ tests/vscode/package-lock.json -nt tests/vscode/node_modules/.package-lock.json ]; then \
	  cd tests/vscode && npm ci --no-audit --no-fund; fi
	cs=$$(tools/code-server.sh $(CODE_SERVER_VERSION)) && cd tests/vscode && \
	  CODE_SERVER=$$cs PROBING_BUILD=$(abspath $(B)) VSIX=$(abspath $(VSIX)) PROBING_SHOTS=$(abspath build/vscode-real) \
	  node --test --test-reporter=spec real.test.js
# The same with the platform-specific .vsix and no probing on PATH nor set: the CLI and probe it
# carries are used (after `make dist`).
.PHONY: vscode-real-bundled
vscode-real-bundled: all vsix-linux-x64
	@if [ ! -f tests/vscode/node_modules/.package-lock.json ] || \
	    [ tests/vscode/package-lock.json -nt tests/vscode/node_modules/.package-lock.json ]; then \
	  cd tests/vscode && npm ci --no-audit --no-fund; fi
	cs=$$(tools/code-server.sh $(CODE_SERVER_VERSION)) && cd tests/vscode && \
	  CODE_SERVER=$$cs PROBING_BUILD=$(abspath $(B)) VSIX=$(abspath $(VSIX_X64)) PROBING_VSCODE_BUNDLED=1 \
	  PROBING_SHOTS=$(abspath build/vscode-real-bundled) node --test --test-reporter=spec real.test.js

# ---- fuzzing: libFuzzer builds for `make fuzz`; a plain replay of the corpus for `make test` ----
FUZZ_SECONDS ?= 60
FUZZ_HARNESSES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
# The harnesses add the readers of files they fuzz (ELF, core files).
FUZZ_DEPS := $(TESTED_SRCS) $(FAKE_SRCS) tests/fuzz/fuzz_sink.h injector/ptrace/elf.c injector/cli/corefile.c
FUZZ_INC := -I. -Icommon -Iprobe -Itests/unit $(PKG_CFLAGS) -D_GNU_SOURCE
# Sources one harness needs beyond FUZZ_DEPS (the unwinder: its reads of the target come from
# the harness's own pyrt_read over the input). Its replay runs under clang's ASan and UBSan:
# the overruns and overflows its corpus holds (crash-*) are silent without them (and gcc's UBSan
# misses one of them).
$(B)/fuzz/replay-eh_frame build/fuzz/fuzz-eh_frame: $(UNWIND_SRCS) probe/sig/unwind_table.c
$(B)/fuzz/replay-eh_frame: FUZZ_REPLAY_CC := clang
$(B)/fuzz/replay-eh_frame: FUZZ_REPLAY_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
$(B)/fuzz/replay-%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(or $(FUZZ_REPLAY_CC),$(CC)) -std=c11 -O1 -g $(FUZZ_REPLAY_SAN) $(FUZZ_INC) -o $@ $(filter %.c,$^) $(PKG_LIBS)
build/fuzz/fuzz-%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS)
	@mkdir -p $(dir $@)
	@echo "  CLANG   $@"
	$(Q)clang -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined,float-cast-overflow \
	    -fno-sanitize-recover=all $(FUZZ_INC) -o $@ $(filter %.c,$^) $(PKG_LIBS)
fuzz-replay: $(patsubst %,$(B)/fuzz/replay-%,$(FUZZ_HARNESSES))
	@for h in $(FUZZ_HARNESSES); do $(B)/fuzz/replay-$$h tests/fuzz/corpus/$$h/* || exit 1; done
fuzz: $(patsubst %,build/fuzz/fuzz-%,$(FUZZ_HARNESSES))
	@for h in $(FUZZ_HARNESSES); do \
	  echo "fuzzing $$h for $(FUZZ_SECONDS) s"; \
	  build/fuzz/fuzz-$$h -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
	    tests/fuzz/corpus/$$h || exit 1; \
	done

# ASan+UBSan: unit tests and the end-to-end tests (make e2e: on workers, then the serial files)
# against sanitized builds; targets preload the sanitizer runtimes; the CLI runs with leak
# detection on.
ASAN_RT := $(shell $(CC) -print-file-name=libasan.so) $(shell $(CC) -print-file-name=libubsan.so)
asan:
	$(MAKE) VARIANT=asan all build/asan/tests/unit-tests build/asan/tests/libnvml-stub.so
	ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 build/asan/tests/unit-tests
	PROBING_TARGET_PRELOAD="$(ASAN_RT)" ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $(MAKE) --no-print-directory VARIANT=asan \
	  e2e CHECKS=

# The injector (injector/ptrace/) and common/ only: the CLI and the renderers run where the
# user is, and are not cross-built.
cross-aarch64:
	@for f in $(INJ_SRCS) $(COMMON_SRCS); do \
	  echo "  CCarm64 $$f"; \
	  mkdir -p $(B)/aarch64/$$(dirname $$f); \
	  aarch64-linux-gnu-gcc -std=c11 -D_GNU_SOURCE $(WARN) -Werror -O2 -I. -Icommon -c $$f \
	    -o $(B)/aarch64/$${f%.c}.o || exit 1; \
	done

# The interpreter reader against every CPython found (embedding and ctypes tests).
pyrt: all
	PYRT_BUILD=$(abspath $(B))/test-pyrt tests/pyrt/run.sh

# The README's two commands: install what is missing, then build and run in a fresh make, whose
# pkg-config flags see the packages just installed. `make test` runs the stages one by one and
# says how long each took (CI's budget, docs/testing.md); the build's checks run once, with `all`,
# which builds on every core (the stages after it run one at a time; e2e on its workers).
TEST_STAGES := format-check all cross-aarch64 unit fuzz-replay pyrt e2e dap-test vscode-test \
               vscode-real web-test dist dist-check release-check vscode-real-bundled
test: deps
	@tools/sid-root.sh >/dev/null
	@t00=$$(date +%s); for s in $(TEST_STAGES); do t0=$$(date +%s); \
	  case $$s in format-check) c= ;; all) c=-j$$(nproc) ;; e2e) c="CHECKS= E2E_SLOWEST=40" ;; \
	    *) c=CHECKS= ;; esac; \
	  $(MAKE) --no-print-directory $$s $$c || { \
	    echo "make test: $$s failed after $$(( $$(date +%s) - t0 )) s" >&2; exit 1; }; \
	  echo "make test: $$s passed in $$(( $$(date +%s) - t0 )) s"; \
	done; echo "make test: all stages passed in $$(( $$(date +%s) - t00 )) s"
test-suite: $(TEST_STAGES)

demo: deps
	@$(MAKE) --no-print-directory demo-run
demo-run: all
	@B=$(B) tools/demo.sh

# The set-up itself, proven in a throwaway Debian 12 root with only a fresh machine's basics
# (tools/fresh-check.sh, docs/testing.md): a fresh clone of HEAD runs `make demo` then `make test`.
fresh-check:
	tools/fresh-check.sh

# Every tracked .c and .h file as clang-format writes it (.clang-format; docs/style.md).
format-check:
	@tools/format_check.sh

bench: all
	/usr/bin/python3 tests/bench/bench.py $(B) $(BENCH_PYTHON)
	/usr/bin/python3 tests/bench/bench_sql.py $(B) $(BENCH_PYTHON)
	/usr/bin/python3 tests/bench/bench_debug.py $(B)
	/usr/bin/python3 tests/bench/bench_gate.py $(B)
	/usr/bin/python3 tests/bench/bench_perf.py $(B) $(BENCH_PYTHON)
	/usr/bin/python3 tests/bench/bench_torch.py $(B)
	/usr/bin/python3 tests/bench/bench_comm.py $(B)
	/usr/bin/python3 tests/bench/bench_cluster.py $(B) $(BENCH_PYTHON)
	/usr/bin/python3 tests/bench/bench_serve.py $(B) $(BENCH_PYTHON)
	/usr/bin/python3 tests/bench/bench_memory.py $(B) $(BENCH_PYTHON)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/probing
	install -m 755 $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/probing
	install -m 644 $(PROBE_LIBS) $(PROBE_CJSON) $(READER_LIBS) $(EXT_LIB) $(DESTDIR)$(PREFIX)/lib/probing/
	install -m 755 $(SERVE_BIN) $(DESTDIR)$(PREFIX)/lib/probing/
	tools/install-python.sh "$(DESTDIR)" "$(PREFIX)" $(PY_MINORS)

# The release (docs/testing.md "Release"): built in a Debian 11 bullseye root (glibc 2.31,
# tools/bullseye-root.sh) into build/dist/: probing-VERSION-linux-x86_64.tar.gz and one wheel
# probing-VERSION-py3-none-manylinux_2_XX_x86_64.whl (tools/dist.sh, tools/dist_pack.py).
# dist-check proves what the release needs at run time (tools/dist_check.py), then that it
# catches each kind of breach in a broken copy (--self-test).
dist:
	tools/dist.sh
dist-check:
	tools/dist_check.py
	tools/dist_check.py --self-test
# The release installed as a non-root user installs it (venv, pip --user, the tarball), on this
# Debian 12 and in a bare Debian 11 root, and run against that user's targets
# (tools/release_check.sh; root; after `make dist`; about two minutes; a stage of `make test`).
release-check:
	tools/release_check.sh
# The same release for linux-aarch64 (docs/testing.md "aarch64"): cross-built against an arm64
# bullseye root into build/dist-aarch64 (DIST_ARCH=aarch64 tools/dist.sh), checked as dist-check
# checks, then installed and run in an emulated aarch64 machine booting Debian 11's arm64 kernel
# (tools/release_check_aarch64.sh; root; 2.5-4 min once the roots are cached; not in `make test`).
dist-aarch64:
	DIST_ARCH=aarch64 tools/dist.sh
dist-check-aarch64:
	DIST_ARCH=aarch64 tools/dist_check.py build/dist-aarch64
release-check-aarch64:
	tools/release_check_aarch64.sh

clean:
	rm -rf build

# The dependency files of this variant's objects only.
-include $(shell find $(B) -name '*.d' 2>/dev/null)
