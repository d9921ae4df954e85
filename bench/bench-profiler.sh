#!/usr/bin/env bash
# The profiler plugin's cost (issue 18), each against a baseline measured
# in the same run:
#  1. per event and per small operation against a do-nothing profiler
#     (bench/prof-null, fq-profcost): the calls NCCL's threads make;
#  2. the events per second one thread can record before the plugin drops
#     any, with its telemetry thread running (fq-profcost --ramp: paced
#     8-byte allreduces' events, 22 each, doubling the rate until the
#     plugin's own drop counters, logged at finalize, are not 0; a
#     stand-in agent reads the telemetry);
#  3. collbench's busbw with the plugin against the same driver with the
#     do-nothing profiler, 2 ranks over loopback, no telemetry (64 MiB and
#     8 B allreduce; baseline and plugin alternating ABBA, BENCH_PROF_ROUNDS
#     rounds, default 3; median and spread);
#  4. the same with 4 ranks on the emulated cluster, every part real and
#     the telemetry going to each node's agent (bench-profiler-testbed.sh;
#     needs root and namespaces, says why and goes on if not).
# Goal: at most 1 % busbw lost at 64 MiB, at 8 B at most 2 % of the
# per-op time. Run it alone (flock /work/testbed.lock on a shared machine):
# the figures move with whatever else runs on the cores.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
export top_srcdir top_builddir
. "$top_srcdir/tests/lib/tap.sh" >/dev/null 2>&1 || true
PC="$top_builddir/bench/fq-profcost"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
NET="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
PROF="$(cd "$top_builddir" && pwd)/nccl-profiler/.libs/libnccl-profiler-fabriciq.so"
NULLP="$(cd "$top_builddir" && pwd)/bench/.libs/libfqprofnull.so"
ROUNDS=${BENCH_PROF_ROUNDS:-3}
for f in "$PC" "$CB" "$NET" "$PROF" "$NULLP"; do [ -e "$f" ] || { echo "bench-profiler: $f not built"; exit 1; }; done
"$PC" "$NULLP" "$PROF" 1000000 || exit 1
FABRICIQ_CLOCK_PAGE=/nonexistent "$PC" --ramp "$PROF" 3 || exit 1
FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY_INTERVAL_MS=100 "$PC" --ramp "$PROF" 3 | tail -1 |
	sed 's/^ramp:/ramp, telemetry every 100 ms:/'
(
	export FABRICIQ_IFACES=lo FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
	# busbw SIZE ITERS PROFILER: rank 0's "busbw time_us"
	busbw() {
		local size=$1 n=$2 port p1 out
		port=$(free_port 2>/dev/null || echo 29$((RANDOM % 900 + 100)))
		"$CB" -p "$NET" --rank 1 --nranks 2 --bootstrap "127.0.0.1:$port" --coll allreduce -b "$size" -e "$size" \
			-n "$n" -w 2 --profiler "$3" >/dev/null 2>&1 &
		p1=$!
		out=$("$CB" -p "$NET" --rank 0 --nranks 2 --bootstrap "127.0.0.1:$port" --coll allreduce -b "$size" -e "$size" \
			-n "$n" -w 2 --profiler "$3" 2>/dev/null | awk '!/^#/ { print $7, $5 }')
		wait $p1
		echo "$out"
	}
	stats() {
		awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s %s %s", m, v[1], v[NR] }'
	}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	for r in $(seq "$ROUNDS"); do
		for spec in "64M 10" "8 2000"; do
			set -- $spec
			busbw "$1" "$2" "$NULLP" >>"$tmp/base-$1"
			busbw "$1" "$2" "$PROF" >>"$tmp/prof-$1"
			busbw "$1" "$2" "$PROF" >>"$tmp/prof-$1"
			busbw "$1" "$2" "$NULLP" >>"$tmp/base-$1"
		done
	done
	for size in 64M 8; do
		read -r bb bb0 bb1 <<<"$(stats "$tmp/base-$size" 1)"
		read -r pb pb0 pb1 <<<"$(stats "$tmp/prof-$size" 1)"
		read -r bt bt0 bt1 <<<"$(stats "$tmp/base-$size" 2)"
		read -r pt pt0 pt1 <<<"$(stats "$tmp/prof-$size" 2)"
		awk -v s="$size" -v n="$(wc -l <"$tmp/base-$size")" -v bb="$bb" -v bb0="$bb0" -v bb1="$bb1" -v pb="$pb" \
			-v pb0="$pb0" -v pb1="$pb1" -v bt="$bt" -v bt0="$bt0" -v bt1="$bt1" -v pt="$pt" -v pt0="$pt0" \
			-v pt1="$pt1" 'BEGIN {
			printf "allreduce %s, 2 ranks, loopback, no telemetry, %d runs each: baseline busbw %.3f GB/s (%.3f-%.3f), time %.1f us (%.1f-%.1f); fabriciq busbw %.3f GB/s (%.3f-%.3f), time %.1f us (%.1f-%.1f): busbw ratio %.3f, time %+.1f %%\n",
				s, n, bb, bb0, bb1, bt, bt0, bt1, pb, pb0, pb1, pt, pt0, pt1, (bb > 0 ? pb / bb : 0), (bt > 0 ? (pt - bt) / bt * 100 : 0) }'
	done
)
bash "$top_srcdir/bench/bench-profiler-testbed.sh"
echo "(baseline: the same driver and proxy thread with a do-nothing profiler; compare each difference with"
echo " the spread of the runs: the machine's cores are shared)"
