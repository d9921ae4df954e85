#!/usr/bin/env bash
# The plugin against raw TCP between the same endpoints (loopback), same
# pattern (ping-pong, busy polling), same run:
#  - bandwidth: 64 MiB messages, one-way GB/s; goal plugin/raw >= 0.90
#  - latency: 8-byte messages, half round trip; goal plugin/raw <= 1.2,
#    against raw TCP on one connection (replies carry the ACKs) and on two
#    one-way connections (the shape of every ncclNet plugin: NCCL's send and
#    receive comms are separate connections).
# Each figure is the median of BENCH_P2P_REPEAT (default 3) runs.
# The machine's cores are shared: this measures CPU cost as much as wire.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
CB="$top_builddir/nccl-plugin/collbench/fabriciq-collbench"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
RAW="$top_builddir/bench/fq-rawtcp"
REPEAT=${BENCH_P2P_REPEAT:-3}
for f in "$CB" "$SO" "$RAW"; do [ -e "$f" ] || { echo "bench-nccl-p2p: $f not built"; exit 1; }; done
export FABRICIQ_IFACES=lo FABRICIQ_TELEMETRY=0
port=$((30000 + $$ % 10000))

# plugin SIZE ITERS WARMUP -> "time_us gbps"
plugin() {
	port=$((port + 1))
	"$CB" -p "$SO" --rank 1 --nranks 2 --bootstrap 127.0.0.1:$port -c pingpong -b "$1" -e "$1" -n "$2" -w "$3" >/dev/null &
	"$CB" -p "$SO" --rank 0 --nranks 2 --bootstrap 127.0.0.1:$port -c pingpong -b "$1" -e "$1" -n "$2" -w "$3" |
		awk '!/^#/ { print $5, $6 }'
	wait
}
raw() {
	port=$((port + 1))
	"$RAW" server $port "$1" "$2" "$3" &
	"$RAW" client 127.0.0.1 $port "$1" "$2" "$3" | awk '{ print $2, $3 }'
	wait
}
median() { sort -g | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
measure() { # FN SIZE ITERS WARMUP FIELD
	for _ in $(seq "$REPEAT"); do "$1" "$2" "$3" "$4"; done | awk -v f="$5" '{ print $f }' | median
}

p_bw=$(measure plugin $((64 << 20)) 10 2 2)
p1_bw=$(FABRICIQ_LANES=1 measure plugin $((64 << 20)) 10 2 2)
r_bw=$(measure raw $((64 << 20)) 10 2 2)
echo "64 MiB ping-pong, one-way bandwidth: plugin ${FABRICIQ_LANES:-2} lanes $p_bw GB/s, 1 lane $p1_bw GB/s, raw TCP $r_bw GB/s"
awk -v p="$p_bw" -v q="$p1_bw" -v r="$r_bw" 'BEGIN {
	printf "bandwidth ratio plugin/raw: %.3f (1 lane: %.3f) (goal >= 0.90)\n", p / r, q / r }'
p_lat=$(measure plugin 8 2000 200 1)
r_lat=$(measure raw 8 2000 200 1)
s_lat=$(FQ_RAWTCP_SPLIT=1 measure raw 8 2000 200 1)
echo "8-byte ping-pong, half round trip: plugin $p_lat us, raw TCP $r_lat us (one connection), $s_lat us (two one-way connections)"
awk -v p="$p_lat" -v r="$r_lat" -v s="$s_lat" 'BEGIN {
	printf "latency ratio plugin/raw: %.3f vs one connection, %.3f vs two one-way connections (goal <= 1.2)\n", p / r, p / s }'
