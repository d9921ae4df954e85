#!/usr/bin/env bash
# Incast: N senders to one receiver through one TBF-shaped host link with a
# deep queue, pacing (FABRICIQ_PACE=delay) against none (=off), both in
# control mode over the real plugin, A/B rounds interleaved in the same run.
#
# The senders run TCP cubic (BENCH_INCAST_CC; see below).
# Topology: BENCH_INCAST_SENDERS + 1 hosts (default 4 + 1) on one leaf, one
# rail. The receiver n1's host link is shaped to BENCH_INCAST_RATE (default
# 200mbit; off: unshaped) with a queue bound of BENCH_INCAST_QUEUE_MS (default 50 ms:
# a deep switch buffer at this rate). Each sender n2.. runs fq-incast (one
# connection, the plugin's default 2 lanes, every byte checked) to n1 for
# BENCH_INCAST_SECONDS (default 20: the receiver counts whole messages, and
# one 4 MiB message is 2.5 % of a sender's share of a 7 s window, 1 % of a
# 17 s one); the receiver counts the payload from
# BENCH_INCAST_WARMUP (default 3 s) on. The queueing delay is that of a
# ping from n1 to its leaf port every 10 ms during the window: its reply
# waits in the same leaf egress queue as the senders' data; delay = RTT -
# the idle RTT's minimum; a lost probe counts as above every delay. Per
# round: aggregate Mbit/s, the probe's p50 and p99, lost probes; printed:
# the medians and the ratios pacing / none (goals: p99 <= 0.25x at >= 0.95x
# the throughput).
# Needs root and namespaces (the emulated cluster); says why and exits 0 if not.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
IC="$top_builddir/bench/fq-incast"
SO="$top_builddir/nccl-plugin/.libs/libnccl-net-fabriciq.so"
TB="$top_srcdir/tests/testbed/fabriciq-testbed"
export FQTB_HELPERS="$top_builddir/tests/testbed"
RATE=${BENCH_INCAST_RATE:-200mbit}
QMS=${BENCH_INCAST_QUEUE_MS:-50}
SENDERS=${BENCH_INCAST_SENDERS:-4}
SECS=${BENCH_INCAST_SECONDS:-20}
WARM=${BENCH_INCAST_WARMUP:-3}
ROUNDS=${BENCH_INCAST_ROUNDS:-3}
SIZE=${BENCH_INCAST_SIZE:-4194304}
TARGET=${BENCH_INCAST_TARGET_US:-2000}
# the senders' TCP congestion control: cubic (Linux's default, loss-based:
# it fills a deep queue, the incast pacing is for); "host" keeps the
# machine's (BBR, here, keeps the queue mostly empty by itself: measured
# unpaced p99 0.07 to 26 ms between rounds)
CC=${BENCH_INCAST_CC:-cubic}
for f in "$IC" "$SO"; do [ -e "$f" ] || { echo "bench-incast: $f not built"; exit 1; }; done
if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null || [ ! -x "$FQTB_HELPERS/tb-hostns" ]; then
	echo "bench-incast: skipped (needs root, network namespaces and the testbed helpers)"
	exit 0
fi
command -v ping >/dev/null || { echo "bench-incast: skipped (no ping for the delay probe)"; exit 0; }
export FQTB_STATE="${TMPDIR:-/tmp}/fqtb-incast-$$"
tmp=$(mktemp -d)
# BENCH_INCAST_KEEP=DIR: the ranks' output and the probes kept there
cleanup() { "$TB" down >/dev/null 2>&1; [ -n "${BENCH_INCAST_KEEP:-}" ] && cp -r "$tmp" "$BENCH_INCAST_KEEP"; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
N=$((SENDERS + 1))
"$TB" up --prefix inc --hosts "$N" --rails 1 --leaves 1 --spines 1 --services none --clock-offsets zero \
	>"$tmp/up.log" 2>&1 || { echo "bench-incast: testbed up failed"; sed 's/^/  /' "$tmp/up.log" | tail -5; exit 1; }
# BENCH_INCAST_RATE=off: no shaping (a healthy fabric: what pacing costs there)
[ "$RATE" = off ] || "$TB" shape n1-rail0 "$RATE" --latency "$QMS" || exit 1
# per route (a namespace may only default to the machine's allowed ones)
CC_NOW=$("$TB" exec n2 sysctl -n net.ipv4.tcp_congestion_control)
if [ "$CC" != host ]; then
	for ((i = 2; i <= N; i++)); do
		"$TB" exec "n$i" ip route add 198.19.0.3/32 via "198.19.0.$((2 * i))" dev rail0 congctl "$CC" ||
			{ echo "bench-incast: cannot set $CC on n$i's route to n1"; exit 1; }
	done
	CC_NOW=$CC
fi
LEAF=198.19.0.2 # n1's rail0 port on the leaf
port=$((33000 + $$ % 1000))

# probe SECONDS OUT: ping n1 -> its leaf port every 10 ms; RTTs (ms) in OUT,
# and a last line "lost K"
probe() {
	local n=$(($1 * 100))
	"$TB" exec n1 ping -n -q -i 0.01 -c 3 -W 1 "$LEAF" >/dev/null 2>&1 # warm ARP (3 pings, not the window's)
	"$TB" exec n1 ping -D -n -i 0.01 -c "$n" -W 1 "$LEAF" 2>/dev/null | tee "$2.raw" |
		awk -v n="$n" '/time=/ { sub(/.*time=/, ""); print $1 + 0; k++ } END { print "lost", n - k }' >"$2"
}
probe 1 "$tmp/idle"
BASE=$(awk '$1 != "lost"' "$tmp/idle" | sort -g | head -1)
[ -n "$BASE" ] || { echo "bench-incast: the idle probe got no reply"; exit 1; }

# round MODE: one incast; prints "MBIT P50_MS P99_MS LOST" or FAILED
round() {
	local mode=$1 rc=0 pids=() r mbit
	port=$((port + 1))
	for ((r = N - 1; r >= 0; r--)); do
		"$TB" exec "n$((r + 1))" env FABRICIQ_STEER_TRACE="${BENCH_INCAST_KEEP:+$tmp/trace.$mode.$k}" FABRICIQ_MODE=control FABRICIQ_PACE="$mode" FABRICIQ_PACE_TARGET_US="$TARGET" \
			FABRICIQ_IFACES=rail0 FABRICIQ_TELEMETRY=0 FABRICIQ_PATH_PAGE="$tmp/none" \
			timeout $((SECS + 90)) "$IC" "$SO" "$r" "$N" "198.18.0.11:$port" "$SECS" "$WARM" "$SIZE" \
			>"$tmp/out.$mode.$r" 2>"$tmp/err.$mode.$r.$k" &
		pids+=($!)
	done
	sleep "$((WARM + 1))" # connect, then the warmup
	probe $((SECS - WARM - 2)) "$tmp/probe.$mode"
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	mbit=$(sed -n 's/.* mbps=\([0-9.]*\) .*/\1/p' "$tmp/out.$mode.0")
	cp "$tmp/probe.$mode" "$tmp/probe.$mode.$k"
	cp "$tmp/probe.$mode.raw" "$tmp/probe.$mode.$k.raw"
	if [ $rc -ne 0 ] || [ -z "$mbit" ]; then
		echo FAILED
		cat "$tmp"/err."$mode".*."$k" | grep -v INFO | head -4 | sed 's/^/  /' >&2
		return 1
	fi
	# delays, a lost probe as 1e9 (above every delay), sorted; the quantiles
	awk -v base="$BASE" '$1 == "lost" { for (i = 0; i < $2; i++) print 1e9; next } { print $1 - base }' \
		"$tmp/probe.$mode" | sort -g |
		awk -v mbit="$mbit" -v bound="$QMS" -v lost="$(awk '$1 == "lost" { print $2 }' "$tmp/probe.$mode")" '
		{ d[NR] = $1 }
		END {
			p50 = d[int(0.5 * (NR - 1)) + 1]; p99 = d[int(0.99 * (NR - 1)) + 1]
			if (p99 >= 1e9) p99 = bound # lost: at least the queue bound (kind to no pacing)
			if (p50 >= 1e9) p50 = bound
			printf "%.1f %.2f %.2f %d\n", mbit, p50, p99, lost
		}'
}

echo "bench-incast: $SENDERS senders -> n1 through n1-rail0 at $RATE with a ${QMS} ms queue, ${SECS} s each (window from ${WARM} s), target ${TARGET} us, TCP $CC_NOW, idle probe RTT ${BASE} ms"
printf "%-6s %-6s %10s %10s %10s %6s %7s\n" round pace "Mbit/s" "q p50 ms" "q p99 ms" lost "paced"
for mode in off delay; do eval "tp_$mode=() p99_$mode=()"; done
for ((k = 1; k <= ROUNDS; k++)); do
	for mode in off delay; do
		res=$(round "$mode") || { echo "bench-incast: round $k pace=$mode failed"; exit 1; }
		read -r mbit p50 p99 lost <<<"$res"
		paced=$(cat "$tmp"/err."$mode".*."$k" | grep -c 'paced at')
		printf "%-6s %-6s %10s %10s %10s %6s %7s\n" "$k" "$mode" "$mbit" "$p50" "$p99" "$lost" "$paced"
		eval "tp_$mode+=($mbit) p99_$mode+=($p99)"
	done
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
awk -v t1="$(med "${tp_delay[@]}")" -v t0="$(med "${tp_off[@]}")" -v q1="$(med "${p99_delay[@]}")" \
	-v q0="$(med "${p99_off[@]}")" 'BEGIN {
	printf "median: paced %.1f Mbit/s, queue p99 %.2f ms; unpaced %.1f Mbit/s, queue p99 %.2f ms\n", t1, q1, t0, q0
	printf "queue p99 paced / unpaced: %.3fx (goal <= 0.25x)\n", (q0 > 0 ? q1 / q0 : 0)
	printf "throughput paced / unpaced: %.3fx (goal >= 0.95x)\n", (t0 > 0 ? t1 / t0 : 0) }'
