#!/usr/bin/env bash
# The controller's collision advice, end to end on the emulated cluster with
# every part real: Slurm with the SPANK plugin, munge, PostgreSQL, the
# controller, an agent per host, two `srun --fabriciq=control` jobs through
# the NCCL plugin under fabriciq-collbench.
#
# Two hosts on one rail, n1's host link shaped to 20 Mbit/s with a short
# queue (2 ms): both jobs' lanes cross it, so they collide for certain, not
# by ECMP luck. Their chunks wait in the senders' socket buffers, so the
# lanes' one-way delays climb far above the probe mesh's delay between the
# same NICs (the probes see only the 2 ms queue): the controller's collision
# rule fires, stores a `collision` anomaly attached to both jobs, and
# advises one of them to move; the agent of each of that job's sending
# nodes puts the advice on its path page; the job's plugin reads it and
# re-opens a lane on a new source port ("move by=advice" in its steering
# trace). The other job is not advised and moves on no advice. The queue is
# kept short so that the plugin's own rule (RTT 10 ms over its base) does
# not start moves of its own. Both allreduces are verified throughout.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$top_builddir
CB=$B/tools/collbench/fabriciq-collbench
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
CTL=$B/controller/fabriciq-controller
for f in "$CB" "$SPANK_SO" "$CTL"; do [ -e "$f" ] || skip_all "$f not built"; done
plan 10
tb_setup adv
S=$FQTB_STATE

# only the step socket: the agent tells the tasks its other paths
SPANK="optional $SPANK_SO libdir=$B/nccl-plugin/.libs ifaces=rail0 monitor_via=net step_socket=$S/run/%n/agent-step.sock"
tb up --prefix "$TB_PFX" --hosts 2 --rails 1 --leaves 1 --spines 1 --clock-offsets zero --plugstack "$SPANK" >/dev/null
ok $? "up: 2 hosts x 1 rail, Slurm with the SPANK plugin"
tb_controller_start "$CTL" -s advice_lifetime=30s
sleep 1
tb_agents_start "$B/slurmd-agent/fabriciq-agent" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
tb_agents_ready
rc=$?
# and each path's one-way delays measured: check 5 judges every window of
# the jobs' time, so they start only once both paths have delays (a slow
# machine takes tens of seconds for the pairwise offsets)
[ $rc = 0 ] && tb_delays_ready 120
ok $? "controller, PostgreSQL and both agents up: probe windows from n1 and n2 with delays, clock pages published"

tb shape n1-rail0 20mbit --latency 2 >/dev/null
ok $? "n1's rail0 link shaped to 20 Mbit/s, 2 ms of queue"

# job NAME PORT: an allreduce step in the background; its ranks trace their
# steering to $S/trace.JOB.RANK; rank 0 prints "job ID" first
job() {
	tb slurm srun -N2 -n2 --fabriciq=control sh -c '
		[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"
		FABRICIQ_STEER_TRACE=$0/trace.$SLURM_JOB_ID.$SLURM_PROCID exec "$@"' "$S" \
		"$CB" --bootstrap "198.19.0.3:$2" --coll allreduce -b 1M -e 1M -n 24 -w 1 --timeline 1000 --timeout 100 \
		>"$S/job$1.out" 2>&1 &
}
job A "$(free_port)"
pa=$!
sleep 2
job B "$(free_port)"
pb=$!
wait $pa
ra=$?
wait $pb
rb=$?
ja=$(awk '/^job / { print $2; exit }' "$S/jobA.out") jb=$(awk '/^job / { print $2; exit }' "$S/jobB.out")
wrong=$(awk '/^# timeline/ && $6 != 0' "$S/jobA.out" "$S/jobB.out")
[ "$ra $rb" = "0 0" ] && [ -n "$ja" ] && [ -n "$jb" ] && [ -z "$wrong" ] && grep -q '^# OK' "$S/jobA.out" &&
	grep -q '^# OK' "$S/jobB.out"
ok $? "jobs $ja and $jb: both allreduces complete, every iteration verified" ||
	diag "$(tail -4 "$S/jobA.out" "$S/jobB.out")"

# 0. the probe mesh kept measuring the congested link: every window of the
# jobs' time with answers has its one-way delays (a sent probe whose TX
# stamp cannot be matched to it leaves its pair unmeasured)
read -r wins timed <<<"$(psql_ctl "select count(*), count(*) filter (where owd_fwd_p50_ns is not null and owd_rev_p50_ns is not null)
	from fabriciq.probe_windows w where answered > 0 and window_start >= (select min(interval_start) from fabriciq.lane_windows)
	and window_end <= (select max(interval_end) from fabriciq.lane_windows)" | tr '|' ' ')"
[ "${wins:-0}" -gt 0 ] && [ "$timed" = "$wins" ]
ok $? "the probes measured the shaped link throughout the jobs: $timed of $wins windows with delays" ||
	diag "$(psql_ctl "select window_start::time, src_node, sent, answered, lost, owd_fwd_p50_ns, owd_rev_p50_ns, rtt_p50_ns
		from fabriciq.probe_windows where owd_fwd_p50_ns is null or owd_rev_p50_ns is null order by 1")"

# 1. the controller: a collision anomaly naming both jobs, attached to both
sleep 2
row=$(psql_ctl "select id, evidence->>'move_job', evidence->>'other_job', summary from fabriciq.anomalies
	where kind = 'collision' order by id limit 1")
IFS='|' read -r aid move other summary <<<"$row"
[ -n "$aid" ] && [ "$(printf '%s\n' "$move" "$other" | sort -n | paste -sd' ')" = "$(printf '%s\n' "$ja" "$jb" | sort -n | paste -sd' ')" ]
ok $? "a collision anomaly names both jobs: ${summary:-none}" ||
	diag "$(psql_ctl 'select kind, node, nic, summary from fabriciq.anomalies order by id')"
is "$(psql_ctl "select string_agg(job_id::text, ' ' order by job_id) from fabriciq.anomaly_jobs where anomaly_id = ${aid:-0}")" \
	"$(printf '%s\n' "$ja" "$jb" | sort -n | paste -sd' ')" "the anomaly is attached to both jobs"

# 2. the agents: the advice for the moved job, onto their path pages
adv=$(cat "$S"/log/n*.agent.log 2>/dev/null | grep -c "controller advice: job ${move:-x} move off rail0")
[ "${adv:-0}" -ge 1 ]
ok $? "an agent took the advice for job $move ($adv advice line(s) in the agents' logs)" ||
	diag "$(grep -h advice "$S"/log/n*.agent.log | head -3)"

# 3. the plugin: the advised job moved a lane on it; the other job did not
t_adv=$(cat "$S"/log/n*.agent.log | grep -m1 "controller advice: job ${move:-x} " | awk '{ print $1 }')
moved=$(cat "$S"/trace."${move:-x}".* 2>/dev/null | grep -c ' move by=advice ')
[ "${moved:-0}" -ge 1 ]
ok $? "job $move re-opened a lane on a new source port on the advice ($moved move(s) by=advice)" ||
	diag "$(cat "$S"/trace."${move:-x}".* 2>/dev/null | grep -m3 ' move ')"
is "$(cat "$S"/trace."${other:-x}".* 2>/dev/null | grep -c ' move by=advice ')" 0 "job $other, not advised: no move on advice"
grep -h "controller advice" "$S"/log/n*.agent.log | sed 's/^/  /' | head -6 | while read -r l; do diag "$l"; done
diag "collision anomalies: $(psql_ctl "select count(*) || ', move_job ' || string_agg(distinct evidence->>'move_job', ',')
	from fabriciq.anomalies where kind = 'collision'")"
for f in "$S"/trace.*; do diag "${f##*/}: $(grep -o ' move by=[a-z]*' "$f" | sort | uniq -c | tr -s ' ' | paste -sd,)"; done
done_testing
