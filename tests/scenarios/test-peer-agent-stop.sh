#!/usr/bin/env bash
# Scenario: a peer's agent stopped for a minute while a control-mode job
# runs across it. Its probes stop, so every other agent sees every path to
# that host DOWN, but the fabric is fine: a dead agent is not a dead link.
# The job must keep running and verify; no lane fails over; no anomaly
# (the DOWNs the other agents log stay in link_events); no drain hint.
. "$(dirname "$0")/scenario.sh"
sc_require sagt
plan 8
sc_up 4 2 2 2
ok $? "up: 4 hosts x 2 rails; controller and 4 agents reporting"

sc_job job control 'n[1-3]' allreduce 1M 4000 17311
sc_job_running job && sleep 1
tb daemon stop n3 agent >/dev/null
ok $? "n3's agent stopped"
sleep "${SC_AGENT_DOWN_S:-60}"
sc_agent_start n3
sc_job_wait job; rc=$?
ok $rc "the job on n1-n3 (job $SC_JOB) outlives n3's agent being away for ${SC_AGENT_DOWN_S:-60} s" ||
	diag "$(grep -E 'WARN' "$S/job.out" | tail -5)"
sc_verified job; ok $? "verified every interval ($(grep -c '# timeline ' "$S/job.out") intervals)"
n=$(grep -c 'bytes to resend\|waiting for the sender' "$S/job.out")
is "$n" 0 "no lane failed over: the lanes carried data all along"
is "$(grep -c '^fabriciq: ' "$S/job.out")" 0 "no job-end line from srun: nothing happened to the job" ||
	diag "$(grep '^fabriciq: ' "$S/job.out")"
is "$(fq --json hints | json 'len(j["hints"])')" 0 "no hint (no drain, no fabric hint)"
is "$(sc_anomalies)" "" "no anomaly: the paths to n3 went unanswered, no link went down" ||
	diag "$(psql_ctl "select kind, severity, summary from fabriciq.anomalies order by id")"
