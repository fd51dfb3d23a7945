#!/usr/bin/env bash
# gpu-run.sh [tests|bench|all] [OUTDIR]: runs the GPU binaries that `make gpu-build` (tests) and
# `make gpu-bench` (bench) put in .gpu/, on a machine with an NVIDIA GPU and no Go toolchain.
# Run it from a copy of the repository (some tests read their package's files, as under go test,
# so each test binary runs in its package's folder). Logs go to OUTDIR (default $OUT, else
# .out/gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${2:-${OUT:-.out/gpu}}
gpu=${GPU_DIR:-.gpu}
mkdir -p "$out"
out=$(cd "$out" && pwd)
gpu=$(cd "$gpu" && pwd)
status=0

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
	uname -srm
} | tee "$out/machine.txt"

# run LOG BINARY ARGS...: runs a binary, appending its output to LOG; a failure is remembered.
run() {
	local log=$1
	shift
	if [[ ! -x $1 ]]; then
		echo "gpu-run: $1 not built, skipped" | tee -a "$log"
		return
	fi
	"$@" 2>&1 | tee -a "$log"
	[[ ${PIPESTATUS[0]} == 0 ]] || status=1
}

# in_package LOG PACKAGE BINARY ARGS...: run, in the package's folder.
in_package() {
	local log=$1 pkg=$2
	shift 2
	pushd "$pkg" >/dev/null || return
	run "$log" "$@"
	popd >/dev/null || return
}

if [[ $what == tests || $what == all ]]; then
	export GMLAKE_REQUIRE_GPU=1 # no skipping on the machine meant to have the GPU
	# TestGPUInvalidHandles hands the driver dead handles; it runs alone, last, so that a driver
	# that crashes on them cannot take the other results with it.
	in_package "$out/gpu-test.log" driver/cuda "$gpu/cuda.test" -test.v -test.count=1 -test.skip TestGPUInvalidHandles
	in_package "$out/gpu-test.log" . "$gpu/gmlake.test" -test.v -test.count=1
	in_package "$out/gpu-test.log" gpu "$gpu/gpu.test" -test.v -test.count=1
	in_package "$out/gpu-test.log" gpu/cublas "$gpu/cublas.test" -test.v -test.count=1
	in_package "$out/gpu-test.log" gpu/cudnn "$gpu/cudnn.test" -test.v -test.count=1
	GMLAKE_REQUIRE_NVRTC=1 in_package "$out/gpu-test.log" gpu/kernels "$gpu/kernels.test" -test.v -test.count=1
	in_package "$out/gpu-test.log" dataparallel/nccl "$gpu/nccl.test" -test.v -test.count=1
	in_package "$out/gpu-test.log" driver/cuda "$gpu/cuda.test" -test.v -test.count=1 -test.run TestGPUInvalidHandles
	in_package "$out/gpu-test.log" driver/cuda "$gpu/cuda.test" -test.run '^$' -test.bench . -test.benchtime "${BENCHTIME:-200x}"
fi

if [[ $what == bench || $what == all ]]; then
	run "$out/gpu-replay.log" "$gpu/gpu-replay" --dir "$gpu/traces" --direct-limit "${DIRECT_LIMIT:-30s}" \
		--json "$out/gpu-replay.jsonl" --markdown "$out/gpu-replay.md"
fi
exit $status
