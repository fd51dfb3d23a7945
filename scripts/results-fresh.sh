#!/usr/bin/env bash
# results-fresh.sh: checks that the committed benchmark reports (results/bench/RESULTS.md, RESULTS-generated.md,
# results/bench/RESULTS-own.md, results/bench/RESULTS-heldout.md, results/bench/SHARDING.md, results/bench/SHARDING.jsonl,
# results/dataparallel/SHARDING-zero3.md and .jsonl) are what the code gives today:
# it regenerates them with the make targets that write them (into a scratch copy) and compares,
# ignoring what depends on the machine or the clock (the "Written by ... on DATE, host ..." line
# and the ns/pair column, wall time). Everything else is the same on any machine, however fast or
# busy: every minimum-capacity bisection runs to its step, bounded by a count of replays, never by
# a time. A report that differs means the code changed its figures and `make bench` /
# `make shard-sim` were not re-run: the README quotes these files.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
files=(results/bench/RESULTS.md results/bench/RESULTS-own.md results/bench/RESULTS-generated.md results/bench/RESULTS-heldout.md results/bench/SHARDING.md results/bench/SHARDING.jsonl results/dataparallel/SHARDING-zero3.md results/dataparallel/SHARDING-zero3.jsonl)
for f in "${files[@]}"; do cp "$f" "$scratch/$(basename "$f").committed"; done
make --no-print-directory bench shard-sim BENCH_JOBS="$(nproc)" >"$scratch/log" 2>&1 || { cat "$scratch/log"; exit 1; }

# mask drops the timing line and every table column whose header is "ns/pair".
mask() {
	awk -F'|' -v OFS='|' '
		/^Written by `make bench`/ { next }
		/^\|/ {
			if ($0 ~ /^\|[-:| ]+\|$/ && drop) { $drop = ""; print; next }
			if ($0 !~ /^\|[-:| ]+\|$/) {
				if (!intable) { drop = 0; for (i = 1; i <= NF; i++) if ($i ~ /^ *ns\/pair *$/) drop = i }
				intable = 1
				if (drop) $drop = ""
			}
			print; next
		}
		{ intable = 0; drop = 0; print }' "$1"
}
status=0
for f in "${files[@]}"; do
	committed="$scratch/$(basename "$f").committed"
	if ! diff -u <(mask "$committed") <(mask "$f") >"$scratch/diff"; then
		echo "results-fresh: $f is stale (make bench / make shard-sim, then commit):"
		head -40 "$scratch/diff"
		status=1
	fi
	cp "$committed" "$f" # leave the working tree as it was
done
[[ $status == 0 ]] && echo "results-fresh: ${files[*]} match the code"
exit $status
