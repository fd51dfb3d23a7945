#!/usr/bin/env bash
# gpu-run.sh [tests|bench|all] [OUTDIR]: runs the GPU binaries that `make build-cuda` (tests) and
# `make gpu-bench` (bench) put in .gpu/, on a machine with an NVIDIA GPU and no Go toolchain.
# Run it from the repository root (or a copy holding .gpu/ and scripts/). Logs go to OUTDIR
# (default $OUT, else .out/gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${2:-${OUT:-.out/gpu}}
gpu=${GPU_DIR:-.gpu}
mkdir -p "$out"
status=0

{
	date -u +%Y-%m-%dT%H:%M:%SZ
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
	uname -srm
} | tee "$out/machine.txt"

if [[ $what == tests || $what == all ]]; then
	# TestGPUInvalidHandles hands the driver dead handles; it runs alone, last, so that a driver
	# that crashes on them cannot take the other results with it.
	for bin in "$gpu"/*.test; do
		name=$(basename "$bin" .test)
		"$bin" -test.v -test.count=1 -test.skip TestGPUInvalidHandles 2>&1 | tee "$out/test-$name.log"
		[[ ${PIPESTATUS[0]} == 0 ]] || status=1
	done
	if [[ -x $gpu/cuda.test ]]; then
		"$gpu/cuda.test" -test.v -test.count=1 -test.run TestGPUInvalidHandles 2>&1 | tee -a "$out/test-cuda.log"
		[[ ${PIPESTATUS[0]} == 0 ]] || status=1
	fi
fi

if [[ $what == bench || $what == all ]] && [[ -x $gpu/gpu-replay ]]; then
	"$gpu/gpu-replay" --traces "$gpu/traces" --json "$out/gpu-replay.jsonl" --markdown "$out/gpu-replay.md" \
		2>&1 | tee "$out/gpu-replay.log"
	[[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
exit $status
