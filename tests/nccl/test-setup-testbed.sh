#!/usr/bin/env bash
# Connection setup with a rail down, on the emulated cluster (3 hosts, 2
# rails): with rail1 of n2 cut before the job starts, a control-mode
# allreduce starts on the lanes that connect, verifies every iteration,
# and once the rail is restored the missing lanes of the connections the
# ring uses come up (failback; one per missing lane); monitor mode starts
# too and runs without them; with every rail of n2 cut, setup fails after
# the grace time with a WARN naming both ends and the cause.
. "$(dirname "$0")/testbed.sh"
nccl_tb_setup su
plan 12

check "up: 3 hosts, 2 rails, links at 400 Mbit/s" tb up --prefix "$TB_PFX" --hosts 3 --leaves 1 --services none \
	--clock-offsets zero --host-rate 400mbit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; tb_teardown' EXIT
port=29800
N=3

# rail1 address of rank r (host r+1): 198.19.1.(2(r+1)+1)
rail1() { echo "198.19.1.$((2 * ($1 + 1) + 1))"; }
# The connection ids of rank r's lanes that failed at connect on its ring
# edge (the send comm to rank r+1, the one the allreduce uses).
ring_missing() {
	local r
	for r in $(seq 0 $((N - 1))); do
		grep 'connect-failed' "$tmp/err.$r" | grep -F -- "-> $(rail1 $(((r + 1) % N))):" |
			sed -E 's/.*connection ([0-9a-f]+) lane.*/\1/'
	done
}

diag "testbed up in $SECONDS s"
# 1. control mode, rail1 of n2 down from the start, restored under the job
tb link down n2 rail1
t1=$SECONDS
start "$N" FABRICIQ_MODE=control -- --coll allreduce -b 4M -e 4M -n 60 -w 1 --timeline 500 --timeout 40
sleep 3
tup=$(date +%s.%N)
tb link up n2 rail1
finish
ok $? "control: the allreduce starts with rail1 of n2 down, and completes ($((SECONDS - t1)) s)" || errs
verified
ok $? "control: every iteration verified" || diag "$(tail -3 <<<"$out")"
missing=$(cat "$tmp"/err.* | grep -c 'connect-failed')
# every connection to or from n2 (ranks 0 and 2 to rank 1, rank 1 to both) loses lane 1
[ "$missing" -eq $((2 * (N - 1))) ]
ok $? "control: each of the $((2 * (N - 1))) connections to or from n2 started without its rail1 lane: $missing" || errs
ids=$(ring_missing | sort -u)
nring=$(wc -w <<<"$ids")
back=0
for id in $ids; do back=$((back + $(cat "$tmp"/err.* | grep "connection $id lane" | grep -c 'failback'))); done
all_back=$(cat "$tmp"/err.* | grep -c 'failback')
diag "lanes missing on the ring's connections: $nring; came up: $back (failbacks in all: $all_back)," \
	"$(cat "$tmp"/err.* | awk -v t="$tup" '/failback/ { printf " %.0f ms", ($1 - t) * 1000 }') after the rail came up"
[ "$nring" -eq 2 ] && [ "$back" -eq "$nring" ] && [ "$all_back" -eq "$back" ]
ok $? "control: the missing lanes of the 2 ring connections came up once the rail was back, one failback each" || errs 20
grep -q 'did not connect' "$tmp/err.1"
ok $? "control: the accept side started its comm on the lanes that arrived (WARN on n2)" || errs

# 2. monitor mode: starts, runs without the lanes
tb link down n2 rail1
start "$N" FABRICIQ_MODE=monitor -- --coll allreduce -b 1M -e 4M -n 5 -w 1 --timeline 500 --timeout 40
finish
ok $? "monitor: the allreduce starts with rail1 of n2 down, and completes" || errs
verified
ok $? "monitor: every iteration verified" || diag "$(tail -3 <<<"$out")"
n_mon=$(cat "$tmp"/err.* | grep 'connect-failed' | grep -c 'monitor mode: no re-dial')
[ "$n_mon" -eq $((2 * (N - 1))) ] && ! grep -q failback "$tmp"/err.*
ok $? "monitor: the $((2 * (N - 1))) connections run without their rail1 lane, no re-dial: $n_mon" || errs
tb link up n2 rail1

diag "up to here: $SECONDS s"
# 3. every rail of n2 down: setup fails after the grace time, naming both ends
tb link down n2 rail0
tb link down n2 rail1
t0=$(date +%s)
start "$N" FABRICIQ_MODE=control FABRICIQ_FAILOVER_GRACE_MS=3000 FABRICIQ_LANE_TIMEOUT_MS=500 -- \
	--coll allreduce -b 1M -e 1M -n 5 -w 1 --timeout 30
finish
rc=$?
t=$(($(date +%s) - t0))
tb link up n2 rail0
tb link up n2 rail1
[ $rc -ne 0 ] && [ $t -ge 3 ] && [ $t -le 15 ]
ok $? "control: n2 cut off: the ranks fail in $t s, after the 3 s grace, no hang" || errs
grep -q 'no lane connected within [0-9]* ms (FABRICIQ_FAILOVER_GRACE_MS=3000)' "$tmp"/err.*
ok $? "control: the WARN says no lane connected within the grace" || errs
grep 'no lane connected within' "$tmp"/err.* |
	grep -qE 'lane 0 198\.19\.0\.[0-9]+ -> 198\.19\.0\.[0-9]+:[0-9]+: [A-Z][a-z]+.*; lane 1 198\.19\.1\.[0-9]+ -> 198\.19\.1\.[0-9]+:[0-9]+: [A-Z]'
ok $? "control: ... naming each lane's two ends and its cause" || errs
diag "$(grep -h 'no lane connected within' "$tmp"/err.* | head -1)"
done_testing
