#!/usr/bin/env bash
# Large-message throughput over the emulated fabric, not loopback: 2 ranks
# on 2 testbed hosts (n1, n2), the plugin's 64 MiB sendrecv ping-pong
# (fabriciq-collbench --coll pingpong, FABRICIQ_LANES lanes, default 2; and 1
# lane, one TCP flow like the baseline) against
# a raw TCP stream between the same endpoints (fq-rawtcp, same ping-pong,
# one connection, run inside the same namespaces with `tb exec`).
# Goal: plugin/raw >= 0.90.
#
# Topology: one rail per host, one leaf, one spine, every host link
# TBF-shaped to BENCH_TB_RATE (default 1gbit), so the host link (the wire)
# and not the machine's 2 shared cores is the limit for both: the plugin's
# lanes and raw TCP's one stream share the same shaped link. (With two
# rails the plugin would stripe over both and raw TCP could use only one.)
# BENCH_TB_RATE=off leaves the links unshaped: then both are CPU-bound on
# veth, which measures CPU cost per byte, not the wire.
# Plugin and raw runs alternate, BENCH_TB_ROUNDS times (default 3); each
# figure is the median. Needs root and namespaces; says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
RAW="$top_builddir/bench/fq-rawtcp"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"
RATE=${BENCH_TB_RATE:-1gbit}
ROUNDS=${BENCH_TB_ROUNDS:-3}
SIZE=$((64 << 20))
ITERS=${BENCH_TB_ITERS:-3}
for f in "$CB" "$SO" "$RAW"; do [ -e "$f" ] || { echo "bench-nccl-testbed: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-nccl-testbed: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
PFX=nbt${FQTB_TAG:-}
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-$PFX-$$"
tmp=$(mktemp -d)
cleanup() { "$TB" down >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
shape=(--host-rate "$RATE")
[ "$RATE" = off ] && shape=()
"$TB" up --prefix "$PFX" --hosts 2 --rails 1 --leaves 1 --spines 1 --services none --clock-offsets zero \
	"${shape[@]}" >"$tmp/up.log" 2>&1 ||
	{ echo "bench-nccl-testbed: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
# rail0 of host i is 198.19.0.(2i+1)
N1=198.19.0.3 N2=198.19.0.5
port=$((32000 + $$ % 1000))

# plugin [LANES] -> one-way GB/s (rank 0 on n1, rank 1 on n2)
plugin() {
	local lanes=${1:-${FABRICIQ_LANES:-2}}
	port=$((port + 1))
	"$TB" exec n2 env FABRICIQ_LANES="$lanes" FABRICIQ_IFACES=rail0 FABRICIQ_TELEMETRY=0 timeout 120 "$CB" -p "$SO" --rank 1 --nranks 2 \
		--bootstrap "$N1:$port" --coll pingpong -b $SIZE -e $SIZE -n "$ITERS" -w 1 >/dev/null 2>"$tmp/err.1" &
	"$TB" exec n1 env FABRICIQ_LANES="$lanes" FABRICIQ_IFACES=rail0 FABRICIQ_TELEMETRY=0 timeout 120 "$CB" -p "$SO" --rank 0 --nranks 2 \
		--bootstrap "$N1:$port" --coll pingpong -b $SIZE -e $SIZE -n "$ITERS" -w 1 2>"$tmp/err.0" |
		awk '!/^#/ { print $6 }'
	wait
}
# raw -> one-way GB/s (server on n2, client on n1, the same rail addresses)
raw() {
	port=$((port + 1))
	"$TB" exec n2 timeout 120 "$RAW" server $port $SIZE "$ITERS" 1 &
	sleep 0.2
	"$TB" exec n1 timeout 120 "$RAW" client "$N2" $port $SIZE "$ITERS" 1 | awk '{ print $3 }'
	wait
}
median() { sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }

for r in $(seq "$ROUNDS"); do
	p=$(plugin) q=$(raw) p1=$(plugin 1)
	[ -n "$p" ] && [ -n "$q" ] && [ -n "$p1" ] || {
		echo "bench-nccl-testbed: round $r failed (plugin '$p', raw '$q', 1 lane '$p1')"
		sed 's/^/  /' "$tmp"/err.* | head -5
		exit 1
	}
	echo "$p" >>"$tmp/p" && echo "$q" >>"$tmp/r" && echo "$p1" >>"$tmp/p1"
done
p_bw=$(median <"$tmp/p") r_bw=$(median <"$tmp/r") p1_bw=$(median <"$tmp/p1")
echo "testbed (2 hosts, 1 rail, host links ${RATE}): 64 MiB ping-pong one-way bandwidth," \
	"plugin ${FABRICIQ_LANES:-2} lanes $p_bw GB/s [$(paste -sd' ' "$tmp/p")]," \
	"1 lane $p1_bw GB/s [$(paste -sd' ' "$tmp/p1")]," \
	"raw TCP $r_bw GB/s [$(paste -sd' ' "$tmp/r")], median of $ROUNDS alternating rounds"
awk -v p="$p_bw" -v q="$p1_bw" -v r="$r_bw" -v rate="$RATE" 'BEGIN {
	printf "testbed bandwidth ratio plugin/raw: %.3f (1 lane: %.3f) (goal >= 0.90)", p / r, q / r
	if (rate ~ /gbit$/) printf "; raw uses %.0f %% of the %s link", 100 * r * 8 / (rate + 0), rate
	printf "\n" }'
