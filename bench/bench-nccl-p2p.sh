#!/usr/bin/env bash
# The plugin against raw TCP between the same endpoints (loopback), same
# pattern (ping-pong, busy polling), same run:
#  - bandwidth: 64 MiB messages, one-way GB/s; goal plugin/raw >= 0.90;
#    beside it raw TCP with MSG_ZEROCOPY (the plugin would use it only if
#    measured faster; on local delivery the kernel copies anyway and says so)
#  - latency: 8-byte messages, half round trip; goal plugin/raw <= 1.2,
#    against raw TCP on one connection (replies carry the ACKs) and on two
#    one-way connections (the shape of every ncclNet plugin: NCCL's send and
#    receive comms are separate connections; the plugin's receiving lanes
#    peek small chunks so the kernel's ACK leaves after the reply: see
#    lane_tcp.c). The plugin side is fq-netlat
#    (ping-pong through the plugin's exported API, timed per iteration);
#    the figure is the per-iteration median (a descheduled process on the
#    shared cores costs a mean a whole time slice, a median nothing), the
#    mean is printed beside it.
# Plugin and raw runs alternate; each figure is the median of
# BENCH_P2P_REPEAT (default 3) runs (latency: BENCH_P2P_LAT_REPEAT, default 7).
# The machine's cores are shared: this measures CPU cost as much as wire.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/tools/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
RAW="$top_builddir/bench/fq-rawtcp"
LAT="$top_builddir/bench/fq-netlat"
REPEAT=${BENCH_P2P_REPEAT:-3}
LAT_REPEAT=${BENCH_P2P_LAT_REPEAT:-7}
for f in "$CB" "$SO" "$RAW" "$LAT"; do [ -e "$f" ] || { echo "bench-nccl-p2p: $f not built"; exit 1; }; done
export FABRICIQ_IFACES=lo FABRICIQ_TELEMETRY=0
port=$((30000 + $$ % 10000))

# plugin SIZE ITERS WARMUP -> "time_us gbps"
plugin() {
	port=$((port + 1))
	"$CB" -p "$SO" --rank 1 --nranks 2 --bootstrap 127.0.0.1:$port --coll pingpong -b "$1" -e "$1" -n "$2" -w "$3" >/dev/null &
	"$CB" -p "$SO" --rank 0 --nranks 2 --bootstrap 127.0.0.1:$port --coll pingpong -b "$1" -e "$1" -n "$2" -w "$3" |
		awk '!/^#/ { print $5, $6 }'
	wait
}
# raw SIZE ITERS WARMUP -> fq-rawtcp's line: "SIZE MEAN_US GBPS MEDIAN_US
# P10_US [zerocopy N sends, M copied]" (FQ_RAWTCP_* from the caller)
raw() {
	port=$((port + 1))
	"$RAW" server $port "$1" "$2" "$3" &
	"$RAW" client 127.0.0.1 $port "$1" "$2" "$3"
	wait
}
median() { sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for _ in $(seq "$REPEAT"); do
	plugin $((64 << 20)) 10 2 | awk '{ print $2 }' >>"$tmp/bp"
	FABRICIQ_LANES=1 plugin $((64 << 20)) 10 2 | awk '{ print $2 }' >>"$tmp/bp1"
	raw $((64 << 20)) 10 2 | awk '{ print $3 }' >>"$tmp/br"
	FQ_RAWTCP_ZEROCOPY=1 raw $((64 << 20)) 10 2 |
		awk '{ s = $3; for (i = 6; i <= NF; i++) s = s " " $i; print s }' >>"$tmp/bz"
done
p_bw=$(median <"$tmp/bp") p1_bw=$(median <"$tmp/bp1") r_bw=$(median <"$tmp/br")
z_bw=$(awk '{ print $1 }' "$tmp/bz" | median) z_note=$(tail -1 "$tmp/bz" | cut -d' ' -f2-)
echo "64 MiB ping-pong, one-way bandwidth: plugin ${FABRICIQ_LANES:-2} lanes $p_bw GB/s, 1 lane $p1_bw GB/s, raw TCP $r_bw GB/s"
awk -v p="$p_bw" -v q="$p1_bw" -v r="$r_bw" 'BEGIN {
	printf "bandwidth ratio plugin/raw: %.3f (1 lane: %.3f) (goal >= 0.90)\n", p / r, q / r }'
# MSG_ZEROCOPY is used only if measured faster: raw TCP with it, same run
awk -v z="$z_bw" -v r="$r_bw" -v n="$z_note" 'BEGIN {
	printf "raw TCP with MSG_ZEROCOPY: %s GB/s, %.3f of plain sends (last run: %s)\n", z, z / r, n }'
# latency: rounds of plugin (2 lanes, 1 lane), raw, raw split, alternating;
# each line "MEDIAN_US MEAN_US"
lat_plugin() { "$LAT" "$SO" 8 5000 500 | awk '{ print $3, $2 }'; }
lat_raw() { raw 8 5000 500 | awk '{ print $4, $2 }'; }
for _ in $(seq "$LAT_REPEAT"); do
	lat_plugin >>"$tmp/p"
	FABRICIQ_LANES=1 lat_plugin >>"$tmp/p1"
	lat_raw >>"$tmp/r"
	FQ_RAWTCP_SPLIT=1 lat_raw >>"$tmp/s"
done
med() { awk -v f="$2" '{ print $f }' "$tmp/$1" | median; }
p_lat=$(med p 1) p1_lat=$(med p1 1) r_lat=$(med r 1) s_lat=$(med s 1)
echo "8-byte ping-pong, half round trip (median per iteration; median of $LAT_REPEAT runs):" \
	"plugin ${FABRICIQ_LANES:-2} lanes $p_lat us, 1 lane $p1_lat us;" \
	"raw TCP $r_lat us (one connection), $s_lat us (two one-way connections)"
echo "  the same as means over each run: plugin $(med p 2) us, 1 lane $(med p1 2) us, raw $(med r 2) us, split $(med s 2) us"
awk -v p="$p_lat" -v r="$r_lat" -v s="$s_lat" 'BEGIN {
	printf "latency ratio plugin/raw: %.3f vs one connection, %.3f vs two one-way connections (goal <= 1.2)\n", p / r, p / s }'
