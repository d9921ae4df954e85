#!/usr/bin/env bash
# A job process flooding its agent's telemetry (issue 15 item 2), on the
# emulated cluster with real Slurm and the SPANK plugin, munge, PostgreSQL
# and the controller. The controller is stopped, so n1's agent spools
# everything (agent.spool_max 1 MiB); a step on n1 sends lane reports of
# 3 KB at 2,000 a second for 12 s, claiming a far end ("victim") the agent
# does not know, and 5 failover events; meanwhile rail1 of n2 goes down
# and up. The agent lets through exactly its step's rate
# (telemetry_lane_rate 200, burst 400) and counts the rest; the spool,
# over its bound many times, drops bulk telemetry only. The controller
# restarted, everything the agent logged reaches PostgreSQL: the step's
# start and end, its 5 failover events, every link event of the cut; no
# lane names the victim, and every one is marked unverified. A process of no step flooding costs the agent one
# /proc walk when it connects, and it is refused there; 1,600 processes
# of nobody cost at most the per-uid budget of /proc reads (1,000 a
# second, 2,000 at once), the rest refused.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$(cd "$top_builddir" && pwd) # slurmd runs elsewhere: absolute paths
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
AGENT=$B/slurmd-agent/fabriciq-agent
CTL=$B/controller/fabriciq-controller
FLOOD=$B/tests/testbed/tb-flood
for f in "$SPANK_SO" "$AGENT" "$CTL" "$FLOOD"; do [ -e "$f" ] || skip_all "$f not built"; done
plan 29
tb_setup fl
S=$FQTB_STATE
SPID=
trap 'rc=$?; [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; (exit $rc); tb_teardown' EXIT

# status SECTION.KEY: a number from n1's agent status file
status() {
	"$AGENT" -c /dev/null -s "status_file=$S/agent-n1.json" --status --json |
		python3 -c 'import json, sys
o = json.load(sys.stdin)
for k in sys.argv[1].split("."): o = o[k]
print(o)' "$1"
}
logged() { grep -c "$1" "$S/log/n1.agent.log"; }

PLUG="optional $SPANK_SO monitor_via=net step_socket=$S/run/%n/agent-step.sock required=yes"
tb up --prefix "$TB_PFX" --hosts 2 --rails 2 --leaves 1 --spines 1 --clock-offsets zero --plugstack "$PLUG" >/dev/null
ok $? "up: 2 hosts x 2 rails, Slurm with the SPANK plugin, munge, PostgreSQL"
tb_controller_start "$CTL"
sleep 1
tb_agents_start "$AGENT" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket" \
	-s spool_max=1MiB -s telemetry_lane_rate=200 -s telemetry_lane_burst=400 \
	-s telemetry_event_rate=10 -s telemetry_event_burst=20 -s report_interval=200ms
for ((i = 0; i < 40; i++)); do
	[ "$(psql_ctl 'select count(*) from fabriciq.nodes')" = 2 ] && break
	sleep 0.5
done
is "$(psql_ctl 'select count(*) from fabriciq.nodes')" 2 "controller and 2 agents up"
sleep 3 # paths up

tb daemon stop ctl controller
timeout 120 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c \
	"echo \$SLURM_JOB_ID; exec $FLOOD \$FABRICIQ_AGENT_SOCKET 12 2000 5" >"$S/srun.out" 2>&1 &
SPID=$!
sleep 4
tb link down n2 1
sleep 3
tb link up n2 1
wait "$SPID"
ok $? "the flooding step ran to its end ($(tail -1 "$S/srun.out"))" || diag "$(cat "$S/srun.out")"
SPID=
job=$(head -1 "$S/srun.out")
read -r lanes events <<<"$(sed -n 's/^lanes=\([0-9]*\) events=\([0-9]*\)$/\1 \2/p' "$S/srun.out")"
is "$events" 5 "it wrote $lanes lane reports and 5 failover events"
sleep 1 # the status file

frames=$(status local_sockets.telemetry_frames)
limited=$(status local_sockets.telemetry_rate_limited)
fwd=$(status lanes_forwarded)
is "$frames" $((lanes + events)) "n1's agent took in every frame the step wrote ($frames)"
is $((fwd + limited)) "$frames" "... each forwarded ($fwd) or refused over the step's rate ($limited)"
[ "$fwd" -ge 400 ] && [ "$fwd" -le $((400 + 200 * 13 + 5)) ]
ok $? "... forwarded within the burst (400) + 200/s over the 12 s ($fwd)"
is "$(status lanes_unverified)" $((fwd - events)) "every forwarded lane report unverified (the process holds no such connection)"
dbulk=$(status spool.dropped_bulk_frames)
[ "$dbulk" -gt 0 ]; ok $? "the spool went over its 1 MiB: $dbulk bulk frames dropped (probe, clock, lane reports)"
is "$(status spool.dropped_event_frames)" 0 "... no event dropped"
down=$(logged 'path rail1 -> n2:rail1 is DOWN') up=$(logged 'path rail1 -> n2:rail1 is UP')
[ "$down" -ge 1 ]; ok $? "n1's agent logged the cut: $down DOWN and $up UP for rail1 -> n2:rail1"

tb_controller_start "$CTL"
for ((i = 0; i < 60; i++)); do
	[ "$(status spool.unacked)" -le 8 ] && break
	sleep 0.5
done
ok $? "the controller restarted: n1's spool caught up within $((i / 2)) s"
sleep 1
is "$(psql_ctl "select count(*) from fabriciq.steps where job_id = ${job:-0} and end_time is not null")" 1 \
	"job $job: its step's start and end are stored"
is "$(psql_ctl "select count(*) from fabriciq.ranks where job_id = ${job:-0}")" 1 "... with its rank"
is "$(psql_ctl "select count(*) from fabriciq.failover_events where job_id = ${job:-0}")" 5 \
	"... and its 5 failover events"
is "$(psql_ctl "select count(*) from fabriciq.link_events where node = 'n1' and nic = 'rail1' and remote_node = 'n2'
	and state = 'down'")" "$down" "every DOWN n1 logged for rail1 -> n2:rail1 is stored once ($down)"
is "$(psql_ctl "select count(*) from fabriciq.link_events where node = 'n1' and nic = 'rail1' and remote_node = 'n2'
	and state = 'up'")" "$up" "every UP likewise ($up)"
stored=$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job:-0}")
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where dst_node = 'victim' or dst_nic = 'rail9'")" 0 \
	"no stored lane names the claimed far end ($stored of the step's lane reports kept)"

# a process of no step floods: refused when it connects, at the cost of
# one walk of /proc; none of its frames is taken
nt0=$(status local_sockets.refused_not_task) walks0=$(status senders.sender_walks)
frames0=$(status local_sockets.telemetry_frames)
out=$(tb exec n1 "$FLOOD" "$S/run/n1/agent-telemetry.sock" 3 2000 0)
sleep 1
is $(($(status local_sockets.refused_not_task) - nt0)) 1 "a process of no step: its connection refused when it connects ($out)"
is $(($(status local_sockets.telemetry_frames) - frames0)) 0 "... none of its frames taken"
walks=$(($(status senders.sender_walks) - walks0))
[ "$walks" -le 1 ]; ok $? "... at the cost of one walk of /proc ($walks)"

# 1,600 processes of nobody (8 waves of 200): each a new sender, so each a
# walk when it connects; the walks' /proc reads stay within nobody's
# budget, the rest are refused, and every connection is refused
unreg0=$(status local_sockets.refused_not_task) reads0=$(status senders.sender_proc_reads)
refused0=$(status senders.sender_reads_refused)
t0=$(date +%s%N)
tb exec n1 setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'for w in 1 2 3 4 5 6 7 8; do
	for i in $(seq 200); do "$1" "$2" 0.002 1000 0 >/dev/null & done; wait; done' sh "$FLOOD" "$S/run/n1/agent-telemetry.sock"
ms=$((($(date +%s%N) - t0) / 1000000))
sleep 1
reads=$(($(status senders.sender_proc_reads) - reads0)) refused=$(($(status senders.sender_reads_refused) - refused0))
unreg=$(($(status local_sockets.refused_not_task) - unreg0))
diag "1,600 senders of nobody in $ms ms: $reads /proc reads, $refused refused, $unreg connections refused"
[ "$reads" -le $((2000 + 1000 * (ms + 1000) / 1000)) ]
ok $? "... /proc reads within nobody's budget: $reads <= 2,000 + 1,000/s over $ms ms"
[ "$refused" -gt 0 ]; ok $? "... the rest refused ($refused)"
is "$unreg" 1600 "... and every connection refused as no step's"

# A step claiming lanes between n1's rail0 and n2's rail0 over a
# connection it does not hold: marked unverified, kept in its own report
# (where the agent places them), taken by no rule of the detector's (they
# would weigh in a collision there, and move another job:
# test-detector-lanes)
unv0=$(status lanes_unverified)
out=$(timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c \
	"echo \$SLURM_JOB_ID; exec $FLOOD \$FABRICIQ_AGENT_SOCKET 2 20 0 198.19.0.3:40000 198.19.0.5:40001" 2>&1)
job2=$(head -1 <<<"$out")
n=$(sed -n 's/^lanes=\([0-9]*\).*/\1/p' <<<"$out")
for ((i = 0; i < 20; i++)); do
	[ "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job2:-0}")" = "${n:-x}" ] && break
	sleep 0.5
done
is $(($(status lanes_unverified) - unv0)) "${n:-?}" "job $job2 claimed $n lanes n1/rail0 -> n2/rail0 without the connection: unverified"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job2:-0}")" "$n" "... all kept in its own report"
is "$(psql_ctl "select distinct src_node || '/' || src_nic || ' -> ' || dst_node || '/' || dst_nic
	from fabriciq.lane_windows where job_id = ${job2:-0}")" "n1/rail0 -> n2/rail0" "... placed where the agent knows the addresses to be"

# A process in a step's tree under another uid (the step is root's here):
# its lane reports are refused as no step's, and none is stored
LANESEND=$B/tests/testbed/tb-lanesend
unreg0=$(status local_sockets.refused_not_task)
out=$(timeout 60 "$TB" slurm srun -N1 -w n1 --fabriciq sh -c "echo \$SLURM_JOB_ID; setpriv --reuid=nobody \
	--regid=nogroup --clear-groups $LANESEND \$FABRICIQ_AGENT_SOCKET \$SLURM_JOB_ID 0; sleep 1" 2>&1)
job3=$(head -1 <<<"$out")
sleep 2
is $(($(status local_sockets.refused_not_task) - unreg0)) 1 \
	"job $job3: a process of its tree under uid nobody (the step is root's): refused when it connects" || diag "$out"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job3:-0}")" 0 "... none stored"
