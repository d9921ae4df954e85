#!/usr/bin/env bash
# Control mode on the emulated cluster (FABRICIQ_MODE=control): an allreduce
# with every iteration verified keeps running while rail1 of n2 is cut and
# restored, then flapped; its lanes fail over and come back (failback, and
# rail1 carries traffic again); with every rail of n2 cut past the grace
# time the ranks get a clean error naming both ends, no hang; monitor mode
# still runs as before.
. "$(dirname "$0")/testbed.sh"
nccl_tb_setup fo
plan 15

# Shaped host links: the network, not the 2 shared CPUs, sets the pace.
check "up: 2 hosts, 2 rails, links at 400 Mbit/s" tb up --prefix "$TB_PFX" --hosts 2 --leaves 1 --services none \
	--clock-offsets zero --host-rate 400mbit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; tb_teardown' EXIT
port=29700

rx() { tb exec "$1" cat "/sys/class/net/$2/statistics/rx_bytes"; }

# 1. one outage, then a flap, under a verified allreduce
start 2 FABRICIQ_MODE=control -- --coll allreduce -b 4M -e 4M -n 200 -w 2 --timeline 500 --timeout 60
sleep 3
tb link down n2 rail1
sleep 4
tb link up n2 rail1
sleep 4
r1=$(rx n2 rail1)
sleep 2
r1=$(($(rx n2 rail1) - r1))
tb flap n2 rail1 --count 3 --period 1500
finish
ok $? "control: the allreduce survives rail1 of n2 down 4 s and 3 flaps" || errs
verified
ok $? "control: every iteration verified" || diag "$(tail -3 <<<"$out")"
grep -qE 'no-progress|socket-error|path-down' "$tmp"/err.*
ok $? "control: lanes failed over (the WARN names the cause)" || errs
n_fb=$(cat "$tmp"/err.* | grep -c 'failback')
[ "$n_fb" -ge 2 ]
ok $? "control: lanes came back (failback) after the outage and the flaps: $n_fb" || errs
diag "n2 received $r1 bytes on rail1 in the 2 s after the link came back"
[ "$r1" -gt $((10 << 20)) ]
ok $? "control: rail1 carries traffic again after failback"
diag "$(grep '^# timeline' <<<"$out" | awk '{ printf "%s:%s ", $3, $4 }')"
low=$(grep '^# timeline' <<<"$out" | awk '$4 < 0.001 { n++ } END { print n + 0 }')
[ "$low" -le 2 ]
ok $? "control: no timeline interval stalled longer than the lane timeout (stalled intervals: $low)"

# 2. every rail of n2 down past the grace time: a clean error, no hang
start 2 FABRICIQ_MODE=control FABRICIQ_FAILOVER_GRACE_MS=3000 FABRICIQ_LANE_TIMEOUT_MS=500 -- \
	--coll allreduce -b 1M -e 1M -n 100000 -w 1 --timeout 100
sleep 2
t0=$(date +%s)
tb link down n2 rail0
tb link down n2 rail1
finish
rc=$?
t=$(($(date +%s) - t0))
tb link up n2 rail0
tb link up n2 rail1
[ $rc -ne 0 ] && [ $t -le 20 ]
ok $? "control: all rails down past the grace: the ranks fail in $t s, no hang" || errs
grep -q 'down for [0-9]* ms (FABRICIQ_FAILOVER_GRACE_MS=3000' "$tmp"/err.*
ok $? "control: the error says all lanes were down past the grace" || errs
grep -E 'FAILOVER_GRACE' "$tmp"/err.* | grep -qE '198\.19\.[01]\.[0-9]+:[0-9]+ (->|<-) 198\.19\.[01]\.[0-9]+:[0-9]+'
ok $? "control: ... and names both ends" || errs
! grep -q 'did not complete' "$tmp"/err.*
ok $? "control: the plugin's error came first, not the benchmark's own timeout" || errs

# 3. monitor mode: as before, nothing acked, no failover machinery
start 2 FABRICIQ_MODE=monitor -- --coll allreduce -b 8 -e 4M -f 8 -n 3 -w 1
finish && verified
ok $? "monitor: allreduce verified" || errs

# 4. with the node agents: their path pages see the cut before any lane
#    timeout (set to 5 s here), and lanes fail over on path-down
AGENT="$top_builddir/slurmd-agent/fabriciq-agent"
if [ -x "$AGENT" ] && tb_agents_start "$AGENT"; then
	sleep 3
	start 2 FABRICIQ_MODE=control FABRICIQ_LANE_TIMEOUT_MS=5000 -- \
		--coll allreduce -b 4M -e 4M -n 120 -w 2 --timeline 500 --timeout 60
	sleep 3
	tb link down n2 rail1
	sleep 3
	tb link up n2 rail1
	finish && verified
	ok $? "agents: the allreduce survives the cut, verified" || errs
	grep -q 'path-down' "$tmp"/err.*
	ok $? "agents: lanes failed over on the agent's path-down, ahead of the 5 s lane timeout" || errs
	grep -q 'failback' "$tmp"/err.*
	ok $? "agents: and came back once the path was up" || errs
	diag "$(grep '^# timeline' <<<"$out" | awk '{ printf "%s:%s ", $3, $4 }')"
else
	skip 3 "fabriciq-agent not built or did not start"
fi
done_testing
