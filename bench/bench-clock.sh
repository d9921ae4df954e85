#!/usr/bin/env bash
# Clock accuracy on the emulated cluster: fabriciq-agent vs chrony, same
# hosts, same links, same run.
#
# 4 hosts with random offsets (up to +-100 ms on MONOTONIC_RAW) run
# fabriciq-agent (all pairs, both rails). Every second each agent's offset
# estimate for every peer is compared with the testbed's truth. Beside it,
# chronyd on n2..n4 polls a chronyd server on n1 over rail 0 (software
# timestamps, xleave, minpoll/maxpoll -6: its fastest), with -x so nobody
# touches the shared CLOCK_REALTIME; the true REALTIME offset between the
# hosts is 0, so chrony's error is the offset it measures.
#
# Two phases: idle, then under load (TCP bulk both ways between leaf1 and
# leaf2 through 200 Mbit/s TBF-shaped spine links). Prints |error|
# p50/p99/max for each, and chrony's p99 over fabriciq's.
# BENCH_CLOCK_SECONDS (default 300) per phase.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${top_builddir:=$top_srcdir/build}"
. "$top_srcdir/tests/testbed/lib/testlib.sh" # TB, FQTB_HELPERS, tb_agents_start
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
export FQTB_STATE=${TMPDIR:-/tmp}/fqtb-bclk-$$
SECS=${BENCH_CLOCK_SECONDS:-300}

[ "$(id -u)" -eq 0 ] || { echo "bench-clock: SKIP: needs root"; exit 0; }
command -v chronyd >/dev/null || { echo "bench-clock: SKIP: chronyd not installed (apt-get install chrony)"; exit 0; }
[ -x "$AGENT" ] || { echo "bench-clock: fabriciq-agent not built"; exit 1; }
trap '"$TB" down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

"$TB" up --prefix bclk --services none --max-offset 100ms >/dev/null 2>&1 || { echo "bench-clock: testbed up failed"; exit 1; }
declare -A truth
while read -r h off; do truth[$h]=$off; done < <("$TB" truth)

tb_agents_start "$AGENT" || { echo "bench-clock: agents did not start"; exit 1; }
cdir=$FQTB_STATE/chrony
mkdir -p "$cdir"
cat >"$cdir/n1.conf" <<CONF
local stratum 1
allow 198.18.0.0/15
bindaddress 198.19.0.3
cmdport 0
bindcmdaddress /
pidfile $cdir/n1.pid
CONF
"$TB" daemon start n1 chronyd -- chronyd -x -d -f "$cdir/n1.conf" >/dev/null
for i in 2 3 4; do
	mkdir -p "$cdir/log-n$i"
	cat >"$cdir/n$i.conf" <<CONF
server 198.19.0.3 iburst minpoll -6 maxpoll -6 xleave
cmdport 0
bindcmdaddress /
pidfile $cdir/n$i.pid
logdir $cdir/log-n$i
log tracking measurements
CONF
	"$TB" daemon start "n$i" chronyd -- chronyd -u root -x -d -f "$cdir/n$i.conf" >/dev/null
done

# sample_agents SECONDS OUT: |estimate - truth| of every path, every second
# (paths to n1 over rail 0 also in OUT.rail0n1, the ones chrony measures)
sample_agents() {
	local end=$(($(date +%s) + $1)) i
	: >"$2"
	: >"$2.rail0n1"
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep 1
		for i in 1 2 3 4; do
			"$AGENT" -c /dev/null -s "status_file=$FQTB_STATE/agent-n$i.json" --status --json 2>/dev/null |
				awk -F'"' -v me="n$i" '/"local_nic"/ { nic = $4 } /"peer_node"/ { p = $4 }
					/"offset_ns"/ { gsub(/[^0-9-]/, "", $3); print me, nic, p, $3 }'
		done | while read -r me nic peer off; do
			e=$((off - (truth[$peer] - truth[$me])))
			echo "${e#-}" >>"$2"
			[ "$nic" = rail0 ] && [ "$peer" = n1 ] && echo "${e#-}" >>"$2.rail0n1"
		done
	done
}

# chrony's own estimate of its offset (tracking.log, field 7: seconds) at
# each clock update after T0 -> |ns|. With -x chrony leaves the clock alone,
# so this is its error. (measurements.log keeps the raw samples too.)
chrony_errors() { # T0_EPOCH OUT
	local i since
	since=$(date -u -d "@$1" '+%Y-%m-%d %H:%M:%S')
	: >"$2"
	for i in 2 3 4; do
		# "YYYY-MM-DD HH:MM:SS" compares as a string
		awk -v since="$since" '/^ *[0-9][0-9][0-9][0-9]-/ && ($1 " " $2) >= since {
				v = $7 * 1e9; if (v < 0) v = -v; printf "%d\n", v }' \
			"$cdir/log-n$i/tracking.log" 2>/dev/null >>"$2"
	done
}

pct() { # FILE -> "p50 p99 max n" in ns (nearest rank)
	sort -n "$1" | awk '
		function rank(q,   r) { r = int(q * NR + 0.999999); if (r < 1) r = 1; return r }
		{ v[NR] = $1 }
		END { if (NR == 0) { print "0 0 0 0"; exit }
		      printf "%d %d %d %d\n", v[rank(0.5)], v[rank(0.99)], v[NR], NR }'
}

phase() { # NAME
	local t0
	t0=$(date +%s)
	sample_agents "$SECS" "$FQTB_STATE/fq-$1"
	chrony_errors "$t0" "$FQTB_STATE/chrony-$1"
	read -r fp50 fp99 fmax fn <<<"$(pct "$FQTB_STATE/fq-$1")"
	read -r gp50 gp99 gmax gn <<<"$(pct "$FQTB_STATE/fq-$1.rail0n1")"
	read -r cp50 cp99 cmax cn <<<"$(pct "$FQTB_STATE/chrony-$1")"
	printf '%-6s fabriciq, all 24 paths      |err| p50 %8s ns  p99 %8s ns  max %8s ns  (%s estimates)\n' "$1" "$fp50" "$fp99" "$fmax" "$fn"
	printf '%-6s fabriciq, n2..n4 -> n1 rail0 |err| p50 %8s ns  p99 %8s ns  max %8s ns  (%s estimates)\n' "$1" "$gp50" "$gp99" "$gmax" "$gn"
	printf '%-6s chrony,   n2..n4 -> n1 rail0 |err| p50 %8s ns  p99 %8s ns  max %8s ns  (%s samples)\n' "$1" "$cp50" "$cp99" "$cmax" "$cn"
	if [ "$gn" -gt 0 ] && [ "$cn" -gt 0 ] && [ "$gp99" -gt 0 ]; then
		awk -v c="$cp99" -v f="$gp99" 'BEGIN { printf "%-6s ratio chrony p99 / fabriciq p99 (same paths): %.1fx (goal >= 10x under load)\n", "", c / f }'
	fi
}

echo "bench-clock: 4 hosts, random offsets <= 100 ms, $SECS s per phase; warming up 10 s"
sleep 10
phase idle
"$TB" shape leaf1-spine1 200mbit && "$TB" shape leaf1-spine2 200mbit
for f in "n1 198.19.0.7" "n3 198.19.0.3" "n2 198.19.1.9" "n4 198.19.1.5"; do
	set -- $f
	dst_host=$(awk -v ip="$2" 'BEGIN { split(ip, a, "."); printf "n%d", (a[4] - 1) / 2 }')
	"$TB" exec "$dst_host" "$FQTB_HELPERS/tb-flow" sink --port 9200 --seconds $((SECS + 20)) >/dev/null &
	sleep 0.2
	"$TB" exec "$1" "$FQTB_HELPERS/tb-flow" send --dst "$2" --port 9200 --seconds $((SECS + 10)) >/dev/null &
done
sleep 5
phase load
wait
