#!/usr/bin/env bash
# Per-chunk CPU cost of the plugin's telemetry (global-time stamp through
# the clock page at send and receive, one-way delay into the histogram),
# in instructions (callgrind), against the same chunk path without it,
# measured in the same run. Startup is cancelled by differencing two runs.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CC="$top_builddir/bench/fq-chunkcost"
[ -x "$CC" ] || { echo "bench-nccl-chunkcost: $CC not built"; exit 1; }
command -v valgrind >/dev/null || { echo "bench-nccl-chunkcost: SKIP: valgrind not installed"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ir() { # MODE N -> total instructions
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$CC" "$1" "$2" "$tmp/clock" >/dev/null 2>&1 || return 1
	awk '/^summary:/ { print $2 }' "$tmp/cg"
}
N1=20000 N2=120000
for mode in base telemetry; do
	a=$(ir $mode $N1) b=$(ir $mode $N2) || { echo "bench-nccl-chunkcost: callgrind failed"; exit 1; }
	eval "$mode=$(( (b - a) / (N2 - N1) ))"
done
echo "instructions per chunk: data path without telemetry $base, with telemetry $telemetry"
echo "telemetry adds $((telemetry - base)) instructions per chunk"
awk -v b="$base" -v t="$telemetry" 'BEGIN { printf "ratio with/without telemetry: %.2f\n", t / b }'
