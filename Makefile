# sente: one binary (bin/sente), one static library of the modules, one
# Criterion test binary. `make help` lists the targets.

CC      ?= gcc
BUILD   ?= build
SAN     ?= 0
CUDA    ?= auto
MPI     ?= auto
CUDA_HOME ?= /usr/local/cuda

CSTD     = -std=c11 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Wshadow -Wno-unused-parameter
OPT      = -O2 -g
ifeq ($(SAN),1)
OPT      = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
SANFLAGS = -fsanitize=address,undefined
endif
CFLAGS  += $(CSTD) $(WARN) $(OPT) -I. -MMD -MP
LDLIBS   = -ldnnl -lsqlite3 -lmicrohttpd -lcjson -lz -lm -lpthread
LDFLAGS += $(SANFLAGS)

# ---- optional dependencies: one line each, found or not -------------------
NVCC := $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
CUDNN_H := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h))
NCCL_H  := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
MPICC   := $(shell command -v mpicc 2>/dev/null)
# The CUDA library folder (lib64, or lib as in pip and conda toolkits) and
# how to link libcudart (-lcudart, or -l:libcudart.so.N where only the
# versioned file is there): scripts/cuda_libdir.sh.
CUDA_LIBDIR_FOUND := $(shell sh scripts/cuda_libdir.sh $(CUDA_HOME) 2>/dev/null)
CUDA_LIBDIR  := $(or $(word 1,$(CUDA_LIBDIR_FOUND)),$(CUDA_HOME)/lib64)
CUDA_RT_LINK := $(or $(word 2,$(CUDA_LIBDIR_FOUND)),-lcudart)

# MPI (the learner's CPU collectives, and what mpirun launches): the flags
# come from the wrapper compiler, so any MPI with mpicc --showme works.
ifeq ($(MPI),0)
USE_MPI := 0
else
MPI_CFLAGS := $(if $(MPICC),$(shell $(MPICC) --showme:compile 2>/dev/null))
MPI_LIBS   := $(if $(MPICC),$(shell $(MPICC) --showme:link 2>/dev/null))
USE_MPI := $(if $(MPI_LIBS),1,0)
ifeq ($(MPI),1)
ifeq ($(USE_MPI),0)
$(error MPI=1 but mpicc --showme was not found (apt-get install libopenmpi-dev))
endif
endif
endif

ifeq ($(CUDA),0)
USE_CUDA := 0
else ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but nvcc was not found (looked on PATH and in $(CUDA_HOME)/bin))
endif
USE_CUDA := 1
else
USE_CUDA := $(if $(NVCC),1,0)
endif

ifneq ($(MAKELEVEL),0)
QUIET_DEPS := 1
endif
ifndef QUIET_DEPS
$(info sente: nvcc   $(if $(NVCC),found ($(NVCC)),not found)$(if $(filter 0,$(USE_CUDA)), -- CUDA backend not built,))
$(if $(filter 1,$(USE_CUDA)),$(info sente: CUDA libraries $(if $(CUDA_LIBDIR_FOUND),in $(CUDA_LIBDIR) ($(CUDA_RT_LINK)),not found under $(CUDA_HOME) (lib64, lib) -- linking will fail)))
$(info sente: cuDNN  $(if $(CUDNN_H),found ($(CUDNN_H)),not found$(if $(filter 1,$(USE_CUDA)), -- CUDA inference backend not built,)))
$(info sente: NCCL   $(if $(NCCL_H),found ($(NCCL_H))$(if $(filter 0,$(USE_CUDA)), -- unused without CUDA,),not found))
$(info sente: MPI    $(if $(filter 1,$(USE_MPI)),found ($(MPICC)),$(if $(MPICC),found but not used (MPI=0),not found) -- sente train runs single-process))
endif

# ---- sources ---------------------------------------------------------------
MODULES  = engine search nn nn/cpu nn/cuda selfplay train train/cuda gtp data match serve loop
LIB_SRC  = $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
CLI_SRC  = $(wildcard cli/*.c)
TEST_SRC = $(wildcard tests/*.c tests/*/*.c)
CU_SRC   = $(wildcard nn/cuda/*.cu train/cuda/*.cu)

# The dashboard's page and the vendored uPlot, as C arrays (serve/page.c).
SERVE_ASSETS = serve/page.html serve/vendor/uPlot.iife.min.js serve/vendor/uPlot.min.css
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/serve/assets.o
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)

ifeq ($(USE_CUDA),1)
NVCCFLAGS = -O2 -g -std=c++17 -I. -MMD -MP -Xcompiler -fPIC,-Wall \
	-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
CU_OBJ    = $(CU_SRC:%.cu=$(BUILD)/%.cu.o)
CFLAGS   += -DSENTE_HAVE_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS   += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR)
# The inference backend (nn/cuda/cuda_backend.c) needs cuDNN and cuBLAS,
# which it dlopens at its first use (linked, their load costs every process
# 0.35 s and 220 MB); without cuDNN only the device probe is built and
# --backend cuda says so.
ifneq ($(CUDNN_H),)
CFLAGS   += -DSENTE_HAVE_CUDNN=1 -DSENTE_CUDA_LIB_DIR='"$(CUDA_LIBDIR)"'
endif
LDLIBS   += $(CUDA_RT_LINK) -lstdc++
# NCCL (train/comm_nccl.c): with CUDA only.
ifneq ($(NCCL_H),)
CFLAGS   += -DSENTE_HAVE_NCCL=1
LDLIBS   += -lnccl
endif
endif

ifeq ($(USE_MPI),1)
CFLAGS   += -DSENTE_HAVE_MPI=1 $(MPI_CFLAGS)
LDLIBS   += $(MPI_LIBS)
endif

LIB  = $(BUILD)/libsente.a
BIN  = bin/sente
TESTBIN = $(BUILD)/tests/sente_tests

.PHONY: all test test-run asan bench run deps fuzz fuzz-run fuzz-merge clean help gpu-probe

all: $(BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The CPU peak's timing loops must keep their accumulators in registers,
# which -O1 (the sanitiser build) does not: they are always built at -O2.
$(BUILD)/nn/cpu/peak.o: CFLAGS += -O2

$(BUILD)/serve/assets.c: $(SERVE_ASSETS)
	@mkdir -p $(dir $@)
	(cd serve && for f in $(SERVE_ASSETS:serve/%=%); do xxd -i $$f; done) > $@.tmp && mv $@.tmp $@
$(BUILD)/serve/assets.o: $(BUILD)/serve/assets.c
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ) $(CU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

# cli/opt.c (the option tables) is tested directly, so it is linked in too.
CLI_TESTED_OBJ = $(BUILD)/cli/opt.o
$(TESTBIN): $(TEST_OBJ) $(CLI_TESTED_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(TEST_OBJ) $(CLI_TESTED_OBJ) $(LIB) $(LDLIBS) -lcriterion -o $@

# What sente sees of the CUDA devices (scripts/gpu_check.sh compares it
# with nvidia-smi).
GPU_PROBE = $(BUILD)/bin/gpu_probe
gpu-probe: $(GPU_PROBE)
$(GPU_PROBE): scripts/gpu_probe.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) -o $@

# The test binary runs from the repository root so that fixtures under
# tests/data are found; bin/sente is built too since some tests drive it.
test:
	@sh scripts/deps.sh --ensure
	@$(MAKE) --no-print-directory test-run

# Debian's python3, which has python3-selenium (a pyenv one on PATH may not).
PYTHON3 ?= $(firstword $(wildcard /usr/bin/python3) python3)
# The dashboard in headless chromium (skipped, saying so, without it);
# its screenshot lands in $(BUILD)/dashboard/.
# The test binary runs OpenMP as bin/sente does (cli/main.c sets PASSIVE
# when the variable is unset): with spinning workers, two test processes on
# two cores made a training step of the tiny test network take 0.56 s of CPU
# instead of 0.5 ms while a partner thread waited for the scheduler.
test-run: $(TESTBIN) $(BIN)
	@sh scripts/check_layers.sh
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE} SENTE_BIN=$(abspath $(BIN)) $(TESTBIN) --jobs 2
	$(PYTHON3) scripts/dashboard_test.py $(BIN) $(BUILD)/dashboard

# Same tests under AddressSanitizer and UndefinedBehaviorSanitizer, in their
# own build folder and with their own binary.
# Criterion counts a test by its result, not by its process's exit status,
# so a leak that LeakSanitizer reports when a test's process ends would
# pass unseen: the output is kept and any sanitizer report fails the target.
asan:
	@sh scripts/deps.sh --ensure
	@mkdir -p build-asan
	@{ LSAN_OPTIONS=suppressions=$(abspath scripts/lsan.supp):print_suppressions=0 \
		$(MAKE) --no-print-directory SAN=1 BUILD=build-asan BIN=build-asan/bin/sente test-run; \
		echo $$? > build-asan/test.status; } 2>&1 | tee build-asan/test.log
	@if grep -q 'ERROR: \(LeakSanitizer\|AddressSanitizer\)\|runtime error:' build-asan/test.log; then \
		echo "make asan: a sanitizer reported a problem (build-asan/test.log):"; \
		grep -A12 'ERROR: \(LeakSanitizer\|AddressSanitizer\)\|runtime error:' build-asan/test.log | head -60; \
		exit 1; fi
	@exit $$(cat build-asan/test.status)

RUN_MINUTES ?= 10

bench: $(BIN)
	$(BIN) bench board
	$(BIN) bench nn --threads 2
	$(BIN) bench search -v 800 --repeat 1

run:
	@sh scripts/deps.sh --ensure
	@$(MAKE) --no-print-directory $(BIN)
	$(BIN) run --game connect4 --dir runs/connect4 --minutes $(RUN_MINUTES)

deps:
	sh scripts/deps.sh --ensure

# libFuzzer targets: every fuzz/*.c built with clang against the sources.
FUZZ_SRC = $(wildcard fuzz/*.c)
FUZZ_BIN = $(FUZZ_SRC:fuzz/%.c=build-fuzz/%)
FUZZ_TIME ?= 60
fuzz: $(FUZZ_BIN)
# The library is compiled once for the fuzzers (coverage and sanitizers),
# then linked into each target.
FUZZ_CFLAGS = $(CSTD) -g -O1 -I. -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_OBJ = $(filter-out build-fuzz/obj/serve/% build-fuzz/obj/loop/%,$(LIB_SRC:%.c=build-fuzz/obj/%.o))
.SECONDARY: $(FUZZ_OBJ)
build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@
build-fuzz/%: fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJ) -ldnnl -lsqlite3 -lcjson -lz -lm -lpthread -o $@
fuzz-run: fuzz
	@for f in $(FUZZ_BIN); do n=$$(basename $$f | sed 's/^fuzz_//'); \
	  mkdir -p build-fuzz/corpus-$$n; \
	  echo "fuzzing $$n for $(FUZZ_TIME) s"; \
	  $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=0 build-fuzz/corpus-$$n fuzz/corpus/$$n || exit 1; done
# Keeps what fuzz-run found: of build-fuzz/corpus-NAME (gone with
# `make clean`), the inputs of at most FUZZ_MERGE_MAX bytes that add
# coverage to the seeds are copied into fuzz/corpus/NAME (libFuzzer
# -merge=1), to be reviewed and committed.
FUZZ_MERGE_MAX ?= 2048
fuzz-merge: fuzz
	@for f in $(FUZZ_BIN); do n=$$(basename $$f | sed 's/^fuzz_//'); \
	  [ -d build-fuzz/corpus-$$n ] || continue; \
	  rm -rf build-fuzz/merge-$$n; mkdir -p build-fuzz/merge-$$n fuzz/corpus/$$n; \
	  find build-fuzz/corpus-$$n -type f -size -$$(($(FUZZ_MERGE_MAX) + 1))c \
	    -exec cp -t build-fuzz/merge-$$n {} +; \
	  before=$$(ls fuzz/corpus/$$n | wc -l); \
	  $(CURDIR)/$$f -merge=1 fuzz/corpus/$$n build-fuzz/merge-$$n >build-fuzz/merge-$$n.log 2>&1 || \
	    { cat build-fuzz/merge-$$n.log; exit 1; }; \
	  echo "$$n: $$(( $$(ls fuzz/corpus/$$n | wc -l) - before )) inputs kept in fuzz/corpus/$$n"; done

clean:
	rm -rf build build-asan build-fuzz bin

help:
	@echo "make [all]   build bin/sente (CUDA=0 to skip CUDA, CUDA=1 to insist)"
	@echo "make test    install missing packages, build, run the Criterion suite"
	@echo "make asan    the same suite under ASan + UBSan (build-asan/)"
	@echo "make bench   benchmarks as JSON lines"
	@echo "make run     the main job on the embedded default"
	@echo "make fuzz    build libFuzzer targets; make fuzz-run FUZZ_TIME=60 runs them"
	@echo "make fuzz-merge  keep what fuzz-run found (small inputs) in fuzz/corpus/"
	@echo "make deps    install what is missing (apt-get, as root)"
	@echo "make clean   remove build outputs"

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(CU_OBJ:.o=.d)
