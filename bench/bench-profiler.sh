#!/usr/bin/env bash
# The profiler plugin's cost: per event and per small operation against a
# do-nothing profiler (bench/prof-null, fq-profcost, same run); and
# collbench's busbw with the plugin against the same driver with the
# do-nothing profiler, 2 ranks over loopback (64 MiB and 8 B allreduce,
# same run; the emulated cluster's 4 ranks are not run here). The goal (issue 18): at
# most 1 % busbw lost at 64 MiB, at 8 B at most 2 % of the per-op time.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/lib/tap.sh" >/dev/null 2>&1 || true
PC="$top_builddir/bench/fq-profcost"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
NET="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
PROF="$(cd "$top_builddir" && pwd)/nccl-profiler/.libs/libnccl-profiler-fabriciq.so"
NULLP="$(cd "$top_builddir" && pwd)/bench/.libs/libfqprofnull.so"
for f in "$PC" "$CB" "$NET" "$PROF" "$NULLP"; do [ -e "$f" ] || { echo "bench-profiler: $f not built"; exit 1; }; done
"$PC" "$NULLP" "$PROF" 1000000 || exit 1
export FABRICIQ_IFACES=lo FABRICIQ_CLOCK_PAGE=/nonexistent FABRICIQ_TELEMETRY=0
# busbw SIZE ITERS [--profiler P]: rank 0's busbw (GB/s) and time (us)
busbw() {
	local size=$1 n=$2 port p1 out
	shift 2
	port=$(free_port 2>/dev/null || echo 29$((RANDOM % 900 + 100)))
	"$CB" -p "$NET" --rank 1 --nranks 2 --bootstrap "127.0.0.1:$port" --coll allreduce -b "$size" -e "$size" \
		-n "$n" -w 2 "$@" >/dev/null 2>&1 &
	p1=$!
	out=$("$CB" -p "$NET" --rank 0 --nranks 2 --bootstrap "127.0.0.1:$port" --coll allreduce -b "$size" -e "$size" \
		-n "$n" -w 2 "$@" 2>/dev/null | awk '!/^#/ { print $7, $5 }')
	wait $p1
	echo "$out"
}
for spec in "64M 10" "8 2000"; do
	set -- $spec
	read -r b0 t0 <<<"$(busbw $1 $2 --profiler "$NULLP")"
	read -r b1 t1 <<<"$(busbw $1 $2 --profiler "$PROF")"
	read -r b2 t2 <<<"$(busbw $1 $2 --profiler "$NULLP")"
	awk -v s="$1" -v b0="$b0" -v b1="$b1" -v b2="$b2" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
		b = (b0 + b2) / 2; t = (t0 + t2) / 2
		printf "allreduce %s, 2 ranks, loopback, driver with a do-nothing profiler: busbw %.3f GB/s (%.3f, %.3f), time %.1f us (%.1f, %.1f); with fabriciq: busbw %.3f (ratio %.3f), time %.1f us (%+.1f %%)\n",
			s, b, b0, b2, t, t0, t2, b1, (b > 0 ? b1 / b : 0), t1, (t > 0 ? (t1 - t) / t * 100 : 0) }'
done
echo "(both sides run the driver's proxy thread; loopback figures on a shared machine move between runs:"
echo " compare the difference with the spread of the two baseline runs)"
