#!/usr/bin/env bash
# steady-lines.sh STEADY_REPLAY TRACE ALLOCATOR [EVICT_BYTES]: what one steady alloc+free pair of
# TRACE costs ALLOCATOR under a cache simulator, when the executor's work between two requests has
# evicted the allocator's data (results/bench/STEADY-CPU.md). STEADY_REPLAY is a build of
# ./bench/cmd/steady-replay. Prints instructions, instruction-cache lines missed and data lines
# missed (read, write) per pair, at the last level of a simulated cache of a 48 KiB L1 data
# cache and a 2 MiB L2 (one core of a GPU host), EVICT_BYTES (default 4 MiB) written between
# requests. Counted by difference, the whole run less a run that stops after the warm-up, less
# the eviction's own, with the garbage collector off in both: callgrind's collection toggles are
# not reliable over Go's stack switches. The difference counts the whole process, the runtime's
# own threads too, which do more when the machine is loaded: run it on an idle machine (under load
# the counts rose by half).
set -euo pipefail
bin=$1 trace=$2 alloc=$3 evict=${4:-4194304}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # count OUT ARGS...: callgrind of steady-replay ARGS, its output in OUT
	local out=$1
	shift
	GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --cache-sim=yes \
		--D1=49152,12,64 --LL=2097152,16,64 --callgrind-out-file="$out" "$bin" "$@" >"$out.log" 2>&1
}
count "$tmp/full" -evict "$evict" "$trace" "$alloc"
count "$tmp/warm" -evict "$evict" -warm-only "$trace" "$alloc"
# Ir ILmr DLmr DLmw of the program's totals and of evict's own, as four numbers.
events() { callgrind_annotate "$1" 2>/dev/null | grep -E "$2" | grep -v '=>' | head -1 |
	sed 's/([^)]*)//g; s/,//g' | awk '{print $1, $7, $8, $9}'; }
pairs=$(awk '/^steady pairs/ {print $3}' "$tmp/full.log")
echo "$(events "$tmp/full" 'PROGRAM TOTALS') $(events "$tmp/warm" 'PROGRAM TOTALS') $(events "$tmp/full" 'main\.evict ')" |
	awk -v p="$pairs" -v name="$(basename "$trace") $alloc" '{
		printf "%s: %d pairs, per pair %.0f instructions, %.1f instruction lines, %.1f data lines read, %.1f written\n",
			name, p, ($1-$5-$9)/p, ($2-$6-$10)/p, ($3-$7-$11)/p, ($4-$8-$12)/p }'
