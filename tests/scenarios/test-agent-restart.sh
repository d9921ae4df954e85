#!/usr/bin/env bash
# Scenario: the local agent restarted mid-job. 5 hosts x 2 rails on 3
# leaves; a control-mode allreduce on n1-n3 while n2's agent is stopped
# for 3 s and started again. The job keeps running; the new agent takes the
# step from steps.json, so the rank on n2 is still attributed: every lane
# report the ranks logged as sent is stored, once, for the job (the
# windows sent while no agent was there are the ones the rank logged as
# dropped), and the step was never unregistered.
. "$(dirname "$0")/scenario.sh"
sc_require sars
plan 10
sc_up 5 2 3 2
ok $? "up: 5 hosts x 2 rails, 3 leaves, 2 spines; controller and 5 agents reporting"

# Paced (8 ms between iterations, at least 11.2 s in all) so that the job
# still runs when the new agent has been up 2 s on a machine of any speed:
# 1000 unpaced iterations took 11 s here and ended before the check on a
# faster one (the step unregistered, the check found no step).
SC_JOB_EXTRA="--gap-us 8000" NCCL_DEBUG=INFO sc_job hit control 'n[1-3]' allreduce 512K 1400 17381
sc_job_running hit && sleep 3
tb daemon stop n2 agent >/dev/null
t_stop=$(date +%s.%N)
cp "$S/agent-n2.json" "$S/agent-n2.stopped.json" # its last status, written as it stopped
sleep 3
sc_agent_start n2
ok $? "n2's agent stopped for 3 s mid-job and started again"
t_start=$(date +%s.%N)
sleep 2
running=$(kill -0 "$(cat "$S/hit.pid")" 2>/dev/null && echo running || echo ended)
is "$(sed -n 's/.*info: \([0-9]*\) step(s) restored from .*steps.json$/\1/p' "$S/log/n2.agent.log") \
$(json '" ".join(str(s["job_id"]) for s in j["steps"])' <"$S/agent-n2.json") $running" \
	"1 $(awk '/^job / { print $2 }' "$S/hit.out") running" \
	"the new agent restored the job's step from steps.json, and the job still runs"
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n3 (job $hit) outlives it" || diag "$(grep WARN "$S/hit.out" | tail -5)"
sc_verified hit; ok $? "verified every interval"
sleep 4 # the last reports reach the controller

is "$(json 'j["local_sockets"]["telemetry_unregistered"], j["local_sockets"]["refused_not_task"]' <"$S/agent-n2.json")" "0 0" \
	"the new agent took no lane report, and refused no rank's connection, as a stranger's"
sent=$(sed -n 's/.*telemetry: \([0-9]*\) samples sent, \([0-9]*\) dropped (no agent).*/\1 \2/p' "$S/hit.out")
stored=$(psql_ctl "select (select count(*) from fabriciq.lane_windows where job_id = $hit)
	+ (select count(*) from fabriciq.failover_events where job_id = $hit)")
is "$stored" "$(awk '{ s += $1 } END { print s + 0 }' <<<"$sent")" \
	"every lane report and lane event the 3 ranks logged as sent is stored for job $hit ($stored)" ||
	diag "logged: $sent; n2's agents took $(for f in "$S/agent-n2.stopped.json" "$S/agent-n2.json"; do
		json '" ".join("%s %s" % kv for kv in j["local_sockets"].items() if kv[1]) + " forwarded %d; " % j["lanes_forwarded"]' <"$f"; done)"
is "$(psql_ctl "select count(*) - count(distinct (interval_start, interval_end, src_rank, dst_rank, lane, bytes, chunks, owd_p50_ns, tcp_rtt_us))
	from fabriciq.lane_windows where job_id = $hit")" 0 "no lane window of job $hit is stored twice"
r2=$(grep -c '^\[r1\] .*telemetry: lost the node agent' "$S/hit.out") c2=$(grep -c '^\[r1\] .*telemetry: connected to the node agent' "$S/hit.out")
is "$r2 $c2" "1 2" "rank 1 (n2) lost its agent once and connected twice" ||
	diag "rank 1's telemetry lines: $(grep '^\[r1\] .*telemetry' "$S/hit.out" | tail -4)"
diag "lane windows of job $hit from n2: $(psql_ctl "select count(*) filter (where interval_end < to_timestamp($t_stop)) || ' before the stop, '
	|| count(*) filter (where interval_start > to_timestamp($t_start)) || ' after the restart'
	from fabriciq.lane_windows where job_id = $hit and 'n2' in (src_node, dst_node)")"
# What n2's agent being away could be taken for: a link down, a flap, an
# anomaly of n2's paths or one on the job. (A delay between other nodes
# is the detector's own matter: test-healthy.)
is "$(sc_anomalies "kind in ('link_down', 'flapping') or 'n2' in (node, remote_node)
	or id in (select anomaly_id from fabriciq.anomaly_jobs)")" "" \
	"no anomaly of n2's paths or on the job, no link down: n2's paths went unanswered for 3 s" || {
	diag "$(psql_ctl "select kind, severity, summary from fabriciq.anomalies order by id")"
	diag "a lane outlier's windows, in s from the agent's stop (its start: $(awk -v a="$t_start" -v b="$t_stop" 'BEGIN { printf "%.1f", a - b }') s):"
	diag "$(psql_ctl "select format('%s.%s rank %s->%s lane %s: %s', w.job_id, w.step_id, w.src_rank, w.dst_rank, w.lane,
		string_agg(format('%s..%s p50 %s p99 %s us', round(extract(epoch from w.interval_start) - $t_stop, 1),
		round(extract(epoch from w.interval_end) - $t_stop, 1), w.owd_p50_ns / 1000, w.owd_p99_ns / 1000), '; '
		order by w.interval_start)) from fabriciq.anomalies a join fabriciq.lane_windows w
		on w.job_id = (a.evidence->>'job_id')::bigint and w.src_rank = (a.evidence->>'src_rank')::int
		and w.dst_rank = (a.evidence->>'dst_rank')::int and w.lane = (a.evidence->>'lane')::int
		and w.owd_p99_ns is not null
		where a.kind = 'lane_outlier' group by w.job_id, w.step_id, w.src_rank, w.dst_rank, w.lane")"
}
other=$(sc_anomalies "not (kind in ('link_down', 'flapping') or 'n2' in (node, remote_node))")
[ -z "$other" ] || diag "other anomalies (not of this scenario): $other"$'\n'"$(sc_delay_evidence "'n2' not in (a.node, a.remote_node)")"
