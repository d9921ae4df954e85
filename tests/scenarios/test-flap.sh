#!/usr/bin/env bash
# Scenario: a rail that flaps. 5 hosts x 2 rails on 3 leaves; a control-mode
# allreduce on n1-n3 while rail1 of n3 flaps 10 times, and a healthy job on
# n4-n5 beside it. The report must name n3's rail1, count exactly the
# lane failures the ranks logged, show the flapping as one incident, and
# say nothing of the healthy job.
. "$(dirname "$0")/scenario.sh"
sc_require scflap
plan 21
sc_up 5 2 3 2 -s flap_window=20s -s incident_gap=5s
ok $? "up: 5 hosts x 2 rails, 3 leaves, 2 spines; controller and 5 agents reporting"

# the jobs run for about 30 s: the flapping is over after about 12
sc_job hit control 'n[1-3]' allreduce 4M 900 17301
sc_job calm control 'n[4-5]' allreduce 4M 900 17302
sc_job_running hit && sleep 1
tb flap n3 1 --count 10 --period 800 >/dev/null
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n3 (job $hit) completes through 10 flaps of n3/rail1" || diag "$(tail -5 "$S/hit.out")"
diag "job $hit ran $(awk '/# timeline / { t = $4 } END { print t }' "$S/hit.out") s"
sc_job_wait calm; rc=$?; calm=$SC_JOB
ok $rc "the job on n4-n5 (job $calm) completes"
sc_verified hit && sc_verified calm; ok $? "both allreduces verified every interval"
sleep 4 # the last reports reach the controller

sc_failovers_match hit "$hit"
sc_flaps_hit "$hit" hit
sc_report_counts "$hit"
sc_outages_through "$hit" n3 rail1
sc_quiet "$calm" calm
is "$(fq --json hints | json '" ".join(sorted((h["node"] or h["component"]) + ":" + h["action"] for h in j["hints"]))')" \
	"n3:drain" "one hint, a drain for n3 (no fabric hint: the fault is n3's)" || {
	# what the detector was fed: n3/rail1's NIC-level transitions, and what it opened
	diag "$(psql_ctl "select to_char(time, 'HH24:MI:SS.MS'), state, detected_at - time from fabriciq.link_events
		where node = 'n3' and nic = 'rail1' and nic_level order by time")"
	diag "$(psql_ctl "select id, kind, severity, node, nic, remote_node, events, incident_id, summary
		from fabriciq.anomalies order by id")"
	diag "$(grep -iE 'flap|n3' "$S/log/ctl.controller.log" | tail -20)"
}
fq --json hints | json '[h["reason"] for h in j["hints"]][0]' | grep -q "rail1"
ok $? "... naming rail1"

# Incidents, not rows: the 10 flaps are one incident on the job (was ~51
# anomaly rows), the flapping part of it, and so is a path_delay on one of
# n3/rail1's paths while it lasts (delays seen between flaps).
sc_incident "$hit" n3 rail1
is "$(json 'j[0]["events"], "flapping" in [m["kind"] for m in j[0]["members"]]' <<<"$SC_INCIDENT")" "10 True" \
	"... its 10 DOWNs (10 flaps injected), the flapping part of it (and any delay on n3/rail1's paths meanwhile)"
sc_end_line hit "$hit"
sc_lanes_verified 5 "$SC_FO_LOGGED"
