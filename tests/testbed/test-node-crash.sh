#!/usr/bin/env bash
# Node crashes under the agent's spool (issue 15 item 12; doc/design.md,
# "What a crash keeps"). 2 hosts x 2 rails with Slurm (the SPANK plugin
# required), munge, PostgreSQL, the controller (acks every 2 s) and an
# agent per host; n1's spool directory is a tb-crashfs mount
# (tests/testbed/tb-crashfs.c) in n1's mount namespace, which keeps only
# what fsync and fsyncdir made durable. A "node crash" of n1: its agent is
# stopped (SIGSTOP), the filesystem crashes (everything not durable gone),
# the agent is killed (SIGKILL) and started again on what is durable.
# Five crashes at five moments:
#  1. steps started and ended, rail1 of n2 cut and back (n1's link
#     events), the controller up: frames stored, some not yet acked;
#  2. the same with the controller stopped: nothing acknowledged;
#  3. while steps register, right after the agent logged a registration
#     (between the frame's write and SPANK's answer);
#  4. while a step runs: its end goes to the restarted agent.
#  0. first, n1's disk stalled (tb-crashfs holds every sync) as soon as
#     its agent connected: a step registered, written, never durable, so
#     never answered: SPANK fails it; no ack was on the disk, so the agent
#     comes back resending from seq 1 (not a lost spool: AgentHello.fresh_seq).
# Then, through what an operator reads (PostgreSQL): every step whose
# StepStart SPANK was answered is stored with n1's rank, and every one
# whose StepEnd was answered ended; every link event n1 logged is stored
# exactly once; the controller never saw n1 restart its seq count and n1
# never gave a seq again; bulk telemetry lost at most the last window
# (1 s) before each crash.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$(cd "$top_builddir" && pwd) # slurmd runs elsewhere: absolute paths
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
AGENT=$B/slurmd-agent/fabriciq-agent
CTL=$B/controller/fabriciq-controller
CFS=$B/tests/testbed/tb-crashfs
for f in "$SPANK_SO" "$AGENT" "$CTL"; do [ -e "$f" ] || skip_all "$f not built"; done
[ -x "$CFS" ] || skip_all "tests/testbed/tb-crashfs not built (fuse3 missing: apt-get install libfuse3-dev)"
[ -c /dev/fuse ] || skip_all "no /dev/fuse (the kernel's fuse module)"
plan 15
tb_setup ncrash
S=$FQTB_STATE
LOOP=
trap 'rc=$?; [ -n "$LOOP" ] && kill "$LOOP" 2>/dev/null; (exit $rc); tb_teardown' EXIT

PLUG="optional $SPANK_SO step_socket=$S/run/%n/agent-step.sock required=yes"
tb up --prefix "$TB_PFX" --hosts 2 --rails 2 --leaves 1 --spines 1 --clock-offsets zero --plugstack "$PLUG" >/dev/null
ok $? "up: 2 hosts x 2 rails, Slurm with the SPANK plugin required, munge, PostgreSQL"

mkdir -p "$S/crashfs-n1" "$S/spool/n1"
tb daemon start n1 crashfs -- "$CFS" "$S/crashfs-n1" "$S/spool/n1" >/dev/null
for ((i = 0; i < 50; i++)); do grep -q ' on ' "$S/log/n1.crashfs.log" 2>/dev/null && break; sleep 0.1; done
is "$(tb exec n1 findmnt -n -o FSTYPE "$S/spool/n1")" fuse.tb-crashfs "n1's spool directory is a tb-crashfs mount" ||
	diag "$(cat "$S/log/n1.crashfs.log")"

AARGS=(-s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket" -s report_interval=1s)
tb_controller_start "$CTL" -s flush_interval=2s
sleep 1
tb_agents_start "$AGENT" "${AARGS[@]}"
field() { python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($1)" "$S/agent-n1.json" 2>/dev/null; }
wait_connected() {
	for ((i = 0; i < 60; i++)); do [ "$(field 's["uplink"]["state"]')" = connected ] && return 0; sleep 0.25; done
	return 1
}
wait_connected
ok $? "controller and agents up, n1's agent connected"

link_lines() { grep -cE 'path .* is (UP|DOWN)|NIC [^ ]*: (every path is DOWN|answering again)' "$S/log/n1.agent.log"; }
# flap: rail1 of n2 down until n1 logged its DOWNs, up until its UPs
flap() {
	local l0
	l0=$(grep -c 'is DOWN' "$S/log/n1.agent.log")
	tb link down n2 1
	for ((i = 0; i < 100; i++)); do [ "$(grep -c 'is DOWN' "$S/log/n1.agent.log")" -gt "$l0" ] && break; sleep 0.05; done
	sleep 0.5
	l0=$(grep -c 'is UP' "$S/log/n1.agent.log")
	tb link up n2 1
	for ((i = 0; i < 100; i++)); do [ "$(grep -c 'is UP' "$S/log/n1.agent.log")" -gt "$l0" ] && break; sleep 0.05; done
	sleep 0.5
}
step() { timeout 30 "$TB" slurm srun -N1 -w n1 --fabriciq "$@" >>"$S/srun.out" 2>&1; }
# calm: a step away from any crash (its job id in $S/calm.out)
calm() { timeout 30 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c 'echo "job $SLURM_JOB_ID"; exec "$@"' sh "$@" >>"$S/calm.out" 2>&1; }

# node_crash: n1's agent stopped, its filesystem crashed, the agent killed;
# T_STOP gets the moment, SEQ_SEEN the highest seq known given (the
# controller's and the agent's last status).
ncrash=0 T_STOP=() SEQ_SEEN=()
node_crash() {
	local apid fpid stored given
	apid=$(cat "$S/daemons/n1.agent.pid") fpid=$(cat "$S/daemons/n1.crashfs.pid")
	kill -STOP "$apid"
	T_STOP+=("$(date +%s.%N)")
	ncrash=$((ncrash + 1))
	kill -USR1 "$fpid"
	for ((i = 0; i < 100; i++)); do grep -q "crash $ncrash:" "$S/log/n1.crashfs.log" && break; sleep 0.05; done
	kill -KILL "$apid"
	for ((i = 0; i < 100; i++)); do kill -0 "$apid" 2>/dev/null || break; sleep 0.05; done
	rm -f "$S/daemons/n1.agent.pid"
	given=$(field 's["spool"]["next_seq"] - 1')
	stored=$(psql_ctl "select last_seq from fabriciq.agent_seq where node = 'n1'" 2>/dev/null)
	SEQ_SEEN+=("$((${given:-0} > ${stored:-0} ? ${given:-0} : ${stored:-0}))")
	rm -f "$S/agent-n1.json"
}
# agent_restart: n1's agent on what is durable; its first seq must be above
# every seq seen given before (FRESH_OK counts the restarts where it was).
FRESH_OK=0 FRESH=()
agent_restart() {
	local next
	tb_agent_start n1 "$AGENT" "${AARGS[@]}"
	for ((i = 0; i < 40; i++)); do next=$(field 's["spool"]["next_seq"]') && [ -n "$next" ] && break; sleep 0.1; done
	FRESH+=("${next:-?}>${SEQ_SEEN[-1]}")
	[ -n "$next" ] && [ "$next" -gt "${SEQ_SEEN[-1]}" ] && FRESH_OK=$((FRESH_OK + 1))
}

t0=$SECONDS
# 0. (the first crash) a registration written but never durable: n1's
# disk stalls (tb-crashfs holds every sync) as soon as its agent is
# connected, a step registers, the agent logs it and waits on its flush;
# the crash comes 0.5 s later. SPANK, never answered, fails the step. No
# ack of the controller's was on n1's disk: the agent comes back saying
# it resends from seq 1, which must not read as a lost spool.
r0=$(grep -c 'registered:' "$S/log/n1.agent.log")
kill -USR2 "$(cat "$S/daemons/n1.crashfs.pid")"
# two report windows first: the agent's flushes stall, and its loop must
# still take the step (it wrote to the segment being synced, and on FUSE
# a write waits for a pending fsync of its file: the loop stopped, and
# the step was never read)
sleep 2.5
step sh -c 'echo "job $SLURM_JOB_ID"' &
LOOP=$!
# (srun's first launch: seen over 4 s on 2 quiet cores; wait up to 25 s,
# within the step's own 30 s timeout)
for ((i = 0; i < 2500; i++)); do [ "$(grep -c 'registered:' "$S/log/n1.agent.log")" -ge $((r0 + 1)) ] && break; sleep 0.01; done
stalled_job=$(grep 'registered:' "$S/log/n1.agent.log" | tail -1 | sed -n 's/.*step \([0-9]*\)\.0 registered:.*/\1/p')
[ -n "$stalled_job" ] || diag "no step registered on n1 in 25 s: $(tail -3 "$S/srun.out" | tr '\n' ' ')"
sleep 0.5
node_crash
kill -USR2 "$(cat "$S/daemons/n1.crashfs.pid")" # the restarted node's disk answers
STALLED=$ncrash
resent_from=$(grep -o 'resending from seq [0-9]*' "$S/log/n1.agent.log" | tail -1)
agent_restart
wait "$LOOP"
stalled_failed=$(($? != 0))
LOOP=
wait_connected

sleep 2
# 1. the controller up: events stored, some not yet acked (every 2 s)
calm true && calm true
flap
sleep 1
node_crash
agent_restart
wait_connected

# 2. the controller stopped: nothing acknowledged
tb daemon stop ctl controller
calm true && calm true
flap
sleep 1
node_crash
agent_restart
tb_controller_start "$CTL" -s flush_interval=2s
wait_connected

# 3. while steps register: stopped right after a registration is logged
sleep 2 # a probe window stored since the restart
r0=$(grep -c 'registered:' "$S/log/n1.agent.log")
(for _ in 1 2 3 4; do step true; done) &
LOOP=$!
for ((i = 0; i < 400; i++)); do [ "$(grep -c 'registered:' "$S/log/n1.agent.log")" -ge $((r0 + 2)) ] && break; sleep 0.01; done
node_crash
agent_restart
wait "$LOOP"
LOOP=
wait_connected

# 4. a step running across the crash: its end goes to the restarted agent
sleep 2
r0=$(grep -c 'registered:' "$S/log/n1.agent.log")
calm sleep 4 &
LOOP=$!
for ((i = 0; i < 400; i++)); do [ "$(grep -c 'registered:' "$S/log/n1.agent.log")" -ge $((r0 + 1)) ] && break; sleep 0.01; done
sleep 1
node_crash
agent_restart
wait "$LOOP"
LOOP=
wait_connected
ok $? "5 node crashes of n1 in $((SECONDS - t0)) s, its agent restarted each time and connected"
while read -r l; do diag "$l"; done < <(sed -n 's/^tb-crashfs: \(crash .*\)/\1/p' "$S/log/n1.crashfs.log")

# What SPANK was told, from its own lines in n1's slurmd log: a step it
# tried (its mode line), minus a registration that failed (started), minus
# an unregistration that failed (ended).
SL=$S/log/slurmd-n1.log
tried=$(sed -n 's/.*fabriciq: job \([0-9]*\) step 0 on n1: mode .*/\1/p' "$SL" | sort -un)
started= ended= nstart=0 nend=0
for j in $tried; do
	grep -q "n1: registering job $j step 0 with the agent .* failed" "$SL" && continue
	started+="${started:+,}$j" nstart=$((nstart + 1))
	grep -q "n1: unregistering job $j step 0 with the agent .* failed" "$SL" && continue
	ended+="${ended:+,}$j" nend=$((nend + 1))
done
diag "SPANK: $(wc -w <<<"$tried") step(s) tried on n1, $nstart answered registered, $nend answered unregistered"

# everything reaches the controller (n1's spool drained)
for ((i = 0; i < 60; i++)); do
	[ "$(field 's["spool"]["unacked"]')" = 0 ] &&
		[ "$(psql_ctl "select count(*) from fabriciq.steps where job_id in (${started:-0}) and end_time is not null")" = "$nend" ] && break
	sleep 0.5
done
is "$(psql_ctl "select count(*) from fabriciq.steps s join fabriciq.ranks r using (job_id, step_id)
	where s.job_id in (${started:-0}) and r.node = 'n1'")" "$nstart" \
	"every step whose start SPANK was answered ($nstart) is stored with its rank on n1" ||
	diag "stored: $(psql_ctl "select string_agg(job_id::text, ',') from fabriciq.steps"); answered: $started"
is "$(psql_ctl "select count(*) from fabriciq.step_node_ends where job_id in (${ended:-0}) and node = 'n1'")" "$nend" \
	"every step whose end SPANK was answered ($nend) ended on n1 (its StepEnd stored)"
is "$(psql_ctl "select count(*) from fabriciq.steps where job_id in (${ended:-0}) and end_time is not null")" "$nend" \
	"... and the step's row says so (end_time)"
calm=$(awk '/^job / { print $2 }' "$S/calm.out" | sort -n | tr '\n' ' ')
n=0
for j in $calm; do [[ ",$ended," == *",$j,"* ]] && n=$((n + 1)); done
is "$n $(wc -w <<<"$calm")" "5 5" "the 5 steps away from the crashes (rounds 1, 2 and 4: jobs $calm) were answered registered and unregistered"

# An event goes out only once durable (slurmd-agent/spool.h), so the
# controller never got the start of the step the node lost and SPANK failed.
is "$stalled_failed $(grep -c "n1: registering job ${stalled_job:-x} step 0 with the agent .* failed" "$SL")" "1 1" \
	"the step registered on a stalled disk (job ${stalled_job:-?}), crash $STALLED before its flush: SPANK was never answered and failed it"
diag "after that crash n1's agent came back ${resent_from:-?} (1: no ack of the controller's was on its disk)"
is "$(psql_ctl "select count(*) from fabriciq.steps where job_id = ${stalled_job:-0}")" 0 \
	"... and no row of it in fabriciq.steps: its start was never durable, so never sent"

logged=$(link_lines)
stored=$(psql_ctl "select count(*) from fabriciq.link_events where node = 'n1'")
is "$stored" "$logged" "every link event n1's agents logged ($logged, 2 cuts of n2/rail1) is stored exactly once" ||
	diag "$(psql_ctl "select time, nic, remote_node, remote_nic, state from fabriciq.link_events where node = 'n1' order by time")"
is "$(psql_ctl "select count(*) from (select 1 from fabriciq.link_events where node = 'n1'
	group by time, nic, remote_node, remote_nic, state having count(*) > 1) d")" 0 "no link event of n1 is stored twice"

is "$FRESH_OK" 5 "after each crash n1's agent gave seqs above every one given before (${FRESH[*]})"
is "$(grep -c 'agent n1 restarted its frame count' "$S"/log/ctl.controller.log)" 0 \
	"the controller never saw n1 restart its seq count (nothing it stored dropped as a replay)"

# bulk: the last probe window of n1 stored before each crash ended less
# than 2 report windows before it (the last window may be lost, not more)
# (not after the stalled disk's crash: nothing was durable since the stall)
gaps=() late=0 k=0
for t in "${T_STOP[@]}"; do
	k=$((k + 1))
	[ "$k" = "$STALLED" ] && continue
	g=$(psql_ctl "select round(($t - extract(epoch from max(window_end)))::numeric, 2) from fabriciq.probe_windows
		where src_node = 'n1' and window_end <= to_timestamp($t)")
	gaps+=("$g")
	awk -v g="$g" 'BEGIN { exit !(g != "" && g >= 0 && g < 2.1) }' || late=$((late + 1))
done
is "$late" 0 "bulk telemetry: n1's last stored probe window ended ${gaps[*]} s before each crash but the stalled one (< 2.1: at most the last 1 s window lost)"
