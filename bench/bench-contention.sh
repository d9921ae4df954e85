#!/usr/bin/env bash
# Two concurrent alltoall jobs whose flows collide on one TBF-shaped spine:
# steering (FABRICIQ_STEER=on) against static hashing (=off), both in
# control mode, A/B rounds interleaved in the same run.
#
# Topology (the routes make the collision, not ECMP luck): 4 hosts, one per
# leaf, 2 rails, 2 spines. Every leaf reaches the other hosts' rail1 over
# spine1 only and their rail0 over spine2 only, so every lane 1 of both jobs
# crosses spine1, shaped to BENCH_CT_SLOW (default 25mbit), while spine2
# runs at BENCH_CT_FAST (default 100mbit). Each job: 4 ranks (one per host),
# alltoall of BENCH_CT_SIZE (default 2M) with every iteration verified,
# 32 KiB chunks, 2 lanes per connection (lane 0 on rail0, lane 1 on rail1).
# Static hashing splits every message evenly, so both jobs wait for spine1;
# steering moves chunks to lane 0. Per round: the aggregate busbw (job A +
# job B, nccl-tests' alltoall factor); printed: each round, the medians,
# and the ratio steering / static (goal >= 1.25).
# What it measures is weighting lanes by delay over paths of unequal speed,
# not avoiding ECMP collisions: bench-ecmp.sh measures that, on equal
# spines, against static ECMP with 1 and K lanes and the optimum placement.
# Needs root and namespaces (the emulated cluster); says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"
SLOW=${BENCH_CT_SLOW:-25mbit}
FAST=${BENCH_CT_FAST:-100mbit}
SIZE=${BENCH_CT_SIZE:-2M}
ITERS=${BENCH_CT_ITERS:-20}
ROUNDS=${BENCH_CT_ROUNDS:-3}
SOCKBUF=${BENCH_CT_SOCKBUF:-128K} # 4 MiB would be ~1 s of queue at these rates
for f in "$CB" "$SO"; do [ -e "$f" ] || { echo "bench-contention: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-contention: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-ctbench-$$"
tmp=$(mktemp -d)
cleanup() { "$TB" down >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$TB" up --prefix ctb --hosts 4 --leaves 4 --spines 2 --services none --clock-offsets zero >"$tmp/up.log" 2>&1 ||
	{ echo "bench-contention: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
for l in 1 2 3 4; do
	"$TB" shape "leaf$l-spine1" "$SLOW" && "$TB" shape "leaf$l-spine2" "$FAST" || exit 1
	for h in 1 2 3 4; do
		[ "$h" = "$l" ] && continue
		"$TB" exec "leaf$l" ip route replace "198.19.0.$((2 * h))/31" via "198.18.$((100 + l)).3" dev s2 &&
			"$TB" exec "leaf$l" ip route replace "198.19.1.$((2 * h))/31" via "198.18.$((100 + l)).1" dev s1 || exit 1
	done
done
port=$((32000 + $$ % 1000))

# job NAME STEER: 4 ranks in the background, pids appended to $pids
job() {
	local name=$1 steer=$2
	port=$((port + 1))
	for r in 3 2 1 0; do
		"$TB" exec "n$((r + 1))" env FABRICIQ_MODE=control FABRICIQ_STEER="$steer" FABRICIQ_IFACES=rail0,rail1 \
			FABRICIQ_TELEMETRY=0 FABRICIQ_CHUNK_SIZE=32K FABRICIQ_SOCKET_BUFFER=$SOCKBUF FABRICIQ_PATH_PAGE="$tmp/none" \
			timeout 300 "$CB" -p "$SO" --rank $r --nranks 4 --bootstrap "198.18.0.11:$port" --coll alltoall \
			-b "$SIZE" -e "$SIZE" -n "$ITERS" -w 2 --timeout 250 >"$tmp/out.$name.$r" 2>"$tmp/err.$name.$r" &
		pids+=($!)
	done
}

# busbw MB/s of a job from rank 0's row (size, time in us; alltoall factor 3/4)
bw() { awk '!/^#/ && NF >= 8 && $8 == 0 { printf "%.2f\n", $1 * 3 / 4 / $5 }' "$1"; }

# round STEER: both jobs at once; prints "A_busbw B_busbw sum" (MB/s) or FAILED
round() {
	local steer=$1 rc=0 a b
	pids=()
	job A "$steer"
	job B "$steer"
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	a=$(bw "$tmp/out.A.0")
	b=$(bw "$tmp/out.B.0")
	if [ $rc -ne 0 ] || [ -z "$a" ] || [ -z "$b" ]; then
		echo FAILED
		cat "$tmp"/err.* | head -4 | sed 's/^/  /' >&2
		return 1
	fi
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f %.2f %.2f\n", a, b, a + b }'
}

echo "bench-contention: 2 jobs x 4 hosts x 2 rails, alltoall $SIZE x $ITERS, every rail1 over spine1 ($SLOW), rail0 over spine2 ($FAST)"
printf "%-6s %-7s %10s %10s %12s\n" round steer "A MB/s" "B MB/s" "sum MB/s"
on=() off=()
for ((k = 1; k <= ROUNDS; k++)); do
	for steer in off on; do
		res=$(round "$steer") || { echo "bench-contention: round $k steer=$steer failed"; exit 1; }
		read -r a b sum <<<"$res"
		printf "%-6s %-7s %10s %10s %12s\n" "$k" "$steer" "$a" "$b" "$sum"
		if [ "$steer" = on ]; then on+=("$sum"); else off+=("$sum"); fi
	done
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_on=$(med "${on[@]}")
m_off=$(med "${off[@]}")
awk -v on="$m_on" -v off="$m_off" 'BEGIN {
	printf "aggregate busbw, median: steering %.2f MB/s, static hashing %.2f MB/s\n", on, off
	r = off > 0 ? on / off : 0
	printf "steering / static: %.2fx (goal >= 1.25x)\n", r }'
