# gmlake — see README.md. `make test` is what CI runs (via .ci/run).
GO      ?= go
PKGS    := ./...
FUZZTIME ?= 15s

.PHONY: test vet race fuzz-short

test: vet race fuzz-short

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 $(PKGS)

# Each fuzz target runs briefly; `make fuzz-long` (reliability) runs them for real.
fuzz-short:
	$(GO) test -run=NONE -fuzz=FuzzEngine -fuzztime=$(FUZZTIME) ./stitch
	$(GO) test -run=NONE -fuzz=FuzzProgram -fuzztime=$(FUZZTIME) ./reliability
	$(GO) test -run=NONE -fuzz=FuzzDriver -fuzztime=$(FUZZTIME) ./driver/host

# ---- Reliability (reliability/doc.go): a fault at every driver call, concurrency under -race, soak of
# every trace with and without iteration marks (GMLAKE_SOAK_MARKS=0/1 picks one), bad input, seeded
# simulation; ends with one summary line (faults injected, operations verified, leaks, violations). reliability-long: the same with GMLAKE_LONG=1 (1000-iteration soak,
# 2000-event fault sweep, long concurrency), no -race. fuzz-long: $(FUZZLONG) of FuzzProgram, then
# $(SIMTIME) of seeded simulation (operations verified and ops/s printed).
FUZZLONG        ?= 10m
SIMTIME         ?= 20m
RELIABILITY_LOG ?= $${TMPDIR:-/tmp}/gmlake-reliability.log
RELIABILITY_SHOW := '^(\s*--- FAIL|soak:|simulation:|FAIL|ok )|known engine'
# Sums the summary lines of the runs into one.
RELIABILITY_SUM   = awk -F'[ =]' '/^reliability:/ { for (i = 2; i < NF; i += 2) { if (!(($$i) in s)) k[++n] = $$i; s[$$i] += $$(i+1) } } \
	END { printf "reliability:"; for (j = 1; j <= n; j++) printf " %s=%d", k[j], s[k[j]]; print "" }'

.PHONY: reliability reliability-long fuzz-long
# The soak is sequential: it runs without -race (which would only slow it), the rest under -race.
reliability:
	@rm -f $(RELIABILITY_LOG); \
	$(GO) test -race -count=1 -v -timeout 30m -skip 'TestSoak' ./reliability >>$(RELIABILITY_LOG) 2>&1; a=$$?; \
	$(GO) test -count=1 -v -timeout 30m -run 'TestSoak' ./reliability >>$(RELIABILITY_LOG) 2>&1; b=$$?; \
	grep -E $(RELIABILITY_SHOW) $(RELIABILITY_LOG); $(RELIABILITY_SUM) $(RELIABILITY_LOG); [ $$a -eq 0 ] && [ $$b -eq 0 ]

reliability-long:
	@GMLAKE_LONG=1 $(GO) test -count=1 -v -timeout 0 ./reliability >$(RELIABILITY_LOG) 2>&1; s=$$?; \
	grep -E $(RELIABILITY_SHOW) $(RELIABILITY_LOG); $(RELIABILITY_SUM) $(RELIABILITY_LOG); exit $$s

fuzz-long:
	$(GO) test -run=NONE -fuzz=FuzzProgram -fuzztime=$(FUZZLONG) ./reliability
	GMLAKE_SIM_DURATION=$(SIMTIME) $(GO) test -count=1 -timeout 0 -run '^TestSimulation$$' ./reliability

# ---- Benchmarks: every trace in $(TRACES) through every allocator (simulated devices), minimum
# capacity included; prints a table and writes bench/RESULTS.md with PyTorch's figures beside ours.
.PHONY: bench
# Traces the project's own fine-tuning loops recorded (gpu-train --trace on the H200), not in ../shared.
OWN_TRACES = stitch/testdata/gpt2xl-lora-h200-gpu-train.trace.gz gpu/results/2026-11-29-40GiB/traces/*.trace.gz
bench:
	$(GO) run ./bench/cmd/gmlake-bench replay --min-capacity --repeat 4 --quiet \
		--allocators gmlake,gmlake-unmarked,gorgonia,caching,direct \
		--markdown bench/RESULTS.md --anchors $(TRACES)/pytorch-anchors.jsonl \
		$(wildcard $(TRACES)/*.trace.gz $(TRACES)/*.pickle.gz)
	$(GO) run ./bench/cmd/gmlake-bench replay --min-capacity --repeat 4 --quiet \
		--allocators gmlake,gmlake-unmarked,gorgonia,caching --markdown bench/RESULTS-own.md \
		$(OWN_TRACES)

# The committed reports above (and SHARDING.* below) are regenerated and compared with what is
# committed, ignoring wall times and the date: stale figures fail (CI runs it).
.PHONY: results-check
results-check:
	./scripts/results-fresh.sh

# ---- Sharded data parallelism by simulation: per-rank traces of ZeRO fine-tuning for N = 1..16
# through the simulated allocators (dist/shardsim); writes bench/SHARDING.md and SHARDING.jsonl.
.PHONY: shard-sim
shard-sim:
	$(GO) run ./bench/cmd/shard-sim --markdown bench/SHARDING.md > bench/SHARDING.jsonl

# ---- CUDA (build tag `cuda`). No GPU or CUDA install needed to build: cuda-headers takes cuda.h,
# cudaTypedefs.h and the libcuda.so link stub from Debian's nvidia-cuda-dev into $(CUDA_DIR).
# GPU binaries go to $(GPU_DIR); copy or carry that folder to a GPU machine (see gpu-test).
CUDA_DIR ?= .cuda
GPU_DIR  ?= .gpu
TRACES   ?= ../shared/traces
CUDA_ENV  = CGO_ENABLED=1 CGO_CFLAGS="-I$(CURDIR)/$(CUDA_DIR)/usr/include" \
	CGO_LDFLAGS="-L$(CURDIR)/$(CUDA_DIR)/usr/lib/x86_64-linux-gnu/stubs"
# The packages with files behind a positive `cuda` constraint. Not ./...: gorgonia.org/gorgonia uses
# the same tag for its own CUDA engine (cuDNN 8 headers, which Debian does not ship), so any package
# importing gorgonia cannot build with -tags cuda.
CUDA_PKGS = $(shell grep -rlE --include='*.go' '^//go:build (.*[^!])?cuda\b' --exclude-dir=.git \
	--exclude-dir=$(CUDA_DIR) --exclude-dir=$(GPU_DIR) . | xargs -n1 dirname | sort -u)

.PHONY: cuda-headers build-cuda gpu-test gpu-bench

cuda-headers:
	./scripts/cuda-headers.sh $(CUDA_DIR)

# Vets and builds every cuda-tagged package, builds the GPU binaries, and runs the cuda-tagged tests
# here: without a GPU they skip or take the host fallback, which proves the binaries start anywhere.
# Then driver/cuda's GPU tests run for real against a fake libcuda over host memory
# (driver/cuda/testdata/fakecuda.c), so the cgo layer and the engine on it are tested in CI too.
FAKE_CUDA = $(GPU_DIR)/fake/libcuda.so.1
build-cuda: cuda-headers
	$(CUDA_ENV) $(GO) vet -tags cuda $(CUDA_PKGS)
	$(CUDA_ENV) $(GO) build -tags cuda $(CUDA_PKGS)
	mkdir -p $(GPU_DIR)
	$(CUDA_ENV) $(GO) test -c -tags cuda -o $(GPU_DIR)/cuda.test ./driver/cuda
	$(CUDA_ENV) $(GO) test -c -tags cuda -o $(GPU_DIR)/gmlake.test .
	$(CUDA_ENV) $(GO) build -tags cuda -o $(GPU_DIR)/gpu-replay ./bench/cmd/gpu-replay
	$(CUDA_ENV) $(GO) test -c -tags cuda -o $(GPU_DIR)/nccl.test ./dist/nccl
	$(CUDA_ENV) $(GO) test -tags cuda -race -count=1 $(CUDA_PKGS)
	mkdir -p $(dir $(FAKE_CUDA))
	$(CC) -shared -fPIC -O2 -Wall -I$(CUDA_DIR)/usr/include -o $(FAKE_CUDA) driver/cuda/testdata/fakecuda.c
	GMLAKE_LIBCUDA=$(CURDIR)/$(FAKE_CUDA) GMLAKE_REQUIRE_GPU=1 $(CUDA_ENV) \
		$(GO) test -tags cuda -race -count=1 ./driver/cuda
	GMLAKE_LIBCUDA=$(CURDIR)/$(FAKE_CUDA) GMLAKE_REQUIRE_GPU=1 $(CUDA_ENV) \
		$(GO) test -tags cuda -race -count=1 -run TestDefaultDriverCUDA .

# On a GPU machine this runs the GPU tests; elsewhere they skip. To run them on a GPU machine
# without Go: `make build-cuda`, copy .gpu/ and scripts/ there, run `scripts/gpu-run.sh tests`.
gpu-test: build-cuda
	./scripts/gpu-run.sh tests $(OUT_DIR)/gpu

# Replays the traces with real GPU memory (gmlake, Gorgonia's pool, cuMemAlloc); results in
# $(OUT_DIR)/gpu. Without a GPU only the simulated half runs. Elsewhere: copy .gpu/ (traces
# included) and scripts/ to the GPU machine and run `scripts/gpu-run.sh bench`.
gpu-bench: build-cuda
	mkdir -p $(GPU_DIR)/traces
	cp $(TRACES)/*.trace.gz $(GPU_DIR)/traces/
	./scripts/gpu-run.sh bench $(OUT_DIR)/gpu

# ---- GPU kernels: every CUDA source in gpu/kernels must compile. NVRTC (a compiler library, no GPU
# needed) is taken from Debian's CUDA 11.8 packages into $(NVRTC_DIR) by gpu/tools/nvrtc-lib.sh.
NVRTC_DIR ?= $(GPU_DIR)/nvrtc
NVRTC_LIB  = $(CURDIR)/$(NVRTC_DIR)/usr/lib/x86_64-linux-gnu

.PHONY: kernels-check
kernels-check:
	./gpu/tools/nvrtc-lib.sh $(NVRTC_DIR) >/dev/null
	GMLAKE_NVRTC=$(NVRTC_LIB)/libnvrtc.so.11.2 GMLAKE_REQUIRE_NVRTC=1 $(GO) test -count=1 -run 'TestKernelsCompile|TestCompileError' ./gpu/kernels

# Gorgonia graphs on the GPU (gpu/graphexec) build under the `gmlakegpu` tag, not `cuda`, which
# switches gorgonia to its own CUDA engine (see gpu/doc.go). gpu-graph-check vets and runs them
# here (GPU tests skip); gpu-graph-build puts the GPU test binaries and the fixtures they read into
# $(GPU_DIR)/gpu for a GPU machine: `cd .gpu/gpu && GMLAKE_FIXTURES=$$PWD/fixtures ./graphexec.test -test.v`.
.PHONY: gpu-graph-check gpu-graph-build
gpu-graph-check: cuda-headers
	$(CUDA_ENV) $(GO) vet -tags gmlakegpu ./gpu/...
	$(CUDA_ENV) $(GO) test -tags gmlakegpu -race -count=1 ./gpu/...

gpu-graph-build: cuda-headers
	mkdir -p $(GPU_DIR)/gpu/fixtures
	cp -r ../shared/fixtures/hf/gpt2-tiny ../shared/fixtures/hf/llama-tiny $(GPU_DIR)/gpu/fixtures/
	$(CUDA_ENV) $(GO) test -c -tags cuda -o $(GPU_DIR)/gpu/gpu.test ./gpu
	$(CUDA_ENV) $(GO) test -c -tags gmlakegpu -o $(GPU_DIR)/gpu/graphexec.test ./gpu/graphexec

# Fine-tuning on the GPU under gmlake, the Gorgonia pool and direct cuMemAlloc (gpu/cmd/gpu-train).
# gpu-train-build puts the binary, the GPU tests, the demo's GPU build (finetune: runs on the GPU
# when there is one) and the fixtures into $(GPU_DIR)/gpu2 (carry that
# folder to a GPU machine); gpu-train-bench also runs it here, when this machine has the GPU, and
# rewrites gpu/RESULTS.md (LoRA without recomputation: the largest batch under 40 GiB) and
# gpu/RESULTS-offload.md (recomputation + offload: step time). On a GPU machine without Go, from a copy holding $(GPU_DIR)/gpu2:
# `gpu/tools/gpu-train-results.sh .gpu/gpu2/gpu-train gpu/RESULTS.md $(GPU_TRAIN_FLAGS)`.
GPU_TRAIN_FLAGS ?= --capacity 40GiB --no-recompute --steps 24 --bisect-limit 60s
GPU_TRAIN_OFFLOAD_FLAGS ?= --capacity 40GiB --offload --steps 24 --no-max-batch
.PHONY: gpu-train-build gpu-train-bench
gpu-train-build: cuda-headers
	mkdir -p $(GPU_DIR)/gpu2/fixtures
	cp -r ../shared/fixtures/hf/gpt2-tiny ../shared/fixtures/hf/llama-tiny $(GPU_DIR)/gpu2/fixtures/
	$(CUDA_ENV) $(GO) build -tags gmlakegpu -ldflags='-s -w' -o $(GPU_DIR)/gpu2/gpu-train ./gpu/cmd/gpu-train
	$(CUDA_ENV) $(GO) test -c -tags gmlakegpu -ldflags='-s -w' -o $(GPU_DIR)/gpu2/graphexec.test ./gpu/graphexec
	$(CUDA_ENV) $(GO) test -c -tags gmlakegpu -ldflags='-s -w' -o $(GPU_DIR)/gpu2/gpu.test ./gpu
	$(CUDA_ENV) $(GO) build -tags gmlakegpu -ldflags='-s -w' -o $(GPU_DIR)/gpu2/finetune ./examples/finetune

gpu-train-bench: gpu-train-build
	gpu/tools/gpu-train-results.sh $(GPU_DIR)/gpu2/gpu-train gpu/RESULTS.md $(GPU_TRAIN_FLAGS)
	gpu/tools/gpu-train-results.sh $(GPU_DIR)/gpu2/gpu-train gpu/RESULTS-offload.md $(GPU_TRAIN_OFFLOAD_FLAGS)

# ---- Data parallelism on several GPUs (dist/gpudp over dist/nccl, tag gmlakegpu): dist-gpu-check
# vets and tests every dist package here (GPU tests skip); dist-gpu-build puts the test binaries and
# the dp-bench command in $(GPU_DIR)/dist for a machine with several GPUs (see dist/gpudp).
.PHONY: dist-gpu-check dist-gpu-build
dist-gpu-check: cuda-headers
	$(CUDA_ENV) $(GO) vet -tags gmlakegpu ./dist/...
	$(CUDA_ENV) $(GO) test -tags gmlakegpu -race -count=1 ./dist/...

dist-gpu-build: cuda-headers
	mkdir -p $(GPU_DIR)/dist
	$(CUDA_ENV) $(GO) test -c -tags gmlakegpu -o $(GPU_DIR)/dist/gpudp.test ./dist/gpudp
	$(CUDA_ENV) $(GO) test -c -tags gmlakegpu -o $(GPU_DIR)/dist/nccl.test ./dist/nccl
	$(CUDA_ENV) $(GO) build -tags gmlakegpu -o $(GPU_DIR)/dist/dp-bench ./dist/cmd/dp-bench

# ---- The main demo: LoRA fine-tuning of a small GPT on gmlake's stitched host memory with
# recomputation, offload and variable lengths; prints the allocator table and writes the trace and
# the memory timeline to $(OUT_DIR).
OUT_DIR ?= .out
.PHONY: demo
demo:
	mkdir -p $(OUT_DIR)
	$(GO) run ./examples/finetune --trace $(OUT_DIR)/finetune.trace.gz --plot $(OUT_DIR)/finetune-memory.png
