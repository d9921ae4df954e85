#!/usr/bin/env bash
# Pacing on the emulated cluster, its mechanics (bench-incast.sh measures
# the figures): 2 senders (n2, n3, fq-incast, 2 lanes each, control mode)
# into n1, whose host link is TBF-shaped to 100 Mbit/s with a 100 ms queue
# (1.25 MB); the senders run TCP cubic. Run unpaced (FABRICIQ_PACE=off), then paced (=delay): the
# leaf's queue toward n1 (tc's backlog, sampled every 100 ms) over the
# second half of each run; paced, its 90th percentile must stay under a
# bound (400 KB, a third of the queue) that the unpaced run's exceeds; the
# senders' lane sockets must carry the paced rate (ss: max pacing rate,
# SO_MAX_PACING_RATE) and their log must say so; every byte of both runs
# is checked by the receiver.
. "$(dirname "$0")/testbed.sh"
IC="$top_builddir/bench/fq-incast"
nccl_tb_setup pace "$IC"
command -v ss >/dev/null && command -v tc >/dev/null || skip_all "needs ss and tc (iproute2)"
plan 12
BOUND=400000 # bytes

check "up: 3 hosts, 1 rail, 1 leaf" tb up --prefix "$TB_PFX" --hosts 3 --rails 1 --leaves 1 --spines 1 \
	--services none --clock-offsets zero
check "n1's host link shaped to 100mbit, a 100 ms queue" tb shape n1-rail0 100mbit --latency 100
# cubic, Linux's default: loss-based, it fills the queue unpaced (the
# machine's may be BBR, which keeps it lower by itself: a p90 of 385 KB
# was seen, too near the bound to tell)
# (per route: a namespace may only default to the machine's allowed ones)
check "the senders run TCP cubic toward n1" sh -c "'$TB' exec n2 ip route add 198.19.0.3/32 via 198.19.0.4 dev rail0 congctl cubic &&
	'$TB' exec n3 ip route add 198.19.0.3/32 via 198.19.0.6 dev rail0 congctl cubic"
tmp=$(mktemp -d)
trap 'rc=$?; rm -rf "$tmp"; (exit $rc); tb_teardown' EXIT
read -r _ _ LEAF_NS LEAF_IF < <(TB_STATE=$FQTB_STATE link_lookup n1-rail0) # its leaf end
port=31700

# run MODE: 8 s of incast; the leaf's backlog samples (bytes) of its
# second half in $tmp/q.MODE, the senders' lane sockets (ss -ti) at 6 s in
# $tmp/ss.MODE; 0 if every rank exited 0
run() {
	local mode=$1 rc=0 pids=() r
	port=$((port + 1))
	for r in 2 1 0; do
		tb exec "n$((r + 1))" env FABRICIQ_MODE=control FABRICIQ_PACE="$mode" FABRICIQ_IFACES=rail0 \
			FABRICIQ_TELEMETRY=0 FABRICIQ_PATH_PAGE="$tmp/none" \
			timeout 90 "$IC" "$SO" "$r" 3 "198.18.0.11:$port" 8 4 1048576 >"$tmp/out.$mode.$r" 2>"$tmp/err.$mode.$r" &
		pids+=($!)
	done
	: >"$tmp/q.$mode"
	for ((k = 0; k < 90; k++)); do # ~9 s, the second half of the 8 s counted
		[ $k -ge 50 ] && [ $k -lt 90 ] &&
			ip netns exec "$LEAF_NS" tc -s qdisc show dev "$LEAF_IF" |
			awk '/backlog/ { v = $2; sub(/b$/, "", v); m = 1; if (v ~ /K$/) { m = 1000; sub(/K$/, "", v) } else if (v ~ /M$/) { m = 1000000; sub(/M$/, "", v) }; print v * m; exit }' >>"$tmp/q.$mode"
		[ $k -eq 60 ] && tb exec n2 ss -tin dst 198.19.0.3 >"$tmp/ss.$mode" 2>&1 # the lanes: rail0
		sleep 0.1
	done
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	return $rc
}
p90() { sort -g "$1" | awk '{ v[NR] = $1 } END { print NR ? v[int(0.9 * (NR - 1)) + 1] : 0 }'; }
incast_ok() { grep -q ' bad=0$' "$tmp/out.$1.0"; }

run off
ok $? "unpaced: the incast ran" || errs
incast_ok off
ok $? "unpaced: every message arrived whole and right ($(sed 's/.* messages=//' "$tmp/out.off.0" 2>/dev/null))"
q_off=$(p90 "$tmp/q.off")
ok "$([ "${q_off%.*}" -gt "$BOUND" ]; echo $?)" "unpaced: the queue's p90 is ${q_off} B, above the ${BOUND} B bound"
ok "$(grep -q cubic "$tmp/ss.off"; echo $?)" "unpaced: n2's lane sockets run cubic" || sed 's/^/#   /' "$tmp/ss.off" | head -4

run delay
ok $? "paced: the incast ran" || errs
incast_ok delay
ok $? "paced: every message arrived whole and right ($(sed 's/.* messages=//' "$tmp/out.delay.0" 2>/dev/null))"
q_on=$(p90 "$tmp/q.delay")
ok "$([ "${q_on%.*}" -lt "$BOUND" ]; echo $?)" "paced: the queue's p90 is ${q_on} B, under the ${BOUND} B bound"
n=$(grep -c 'paced at' "$tmp"/err.delay.1 "$tmp"/err.delay.2 | awk -F: '$2 > 0' | wc -l)
ok "$([ "$n" -eq 2 ]; echo $?)" "paced: both senders' logs say a paced rate ($(grep -h 'paced at' "$tmp"/err.delay.* | tail -1 | sed 's/.*: paced/paced/'))"
rates=$(grep -o 'pacing_rate [0-9.]*[KMG]*bps/[0-9.]*[KMG]*bps' "$tmp/ss.delay" | sed 's/.*\///' | tr '\n' ' ')
ok "$([ -n "$rates" ]; echo $?)" "paced: n2's lane sockets carry a max pacing rate (ss: ${rates:-none})" ||
	sed 's/^/#   /' "$tmp/ss.delay" | head -6
