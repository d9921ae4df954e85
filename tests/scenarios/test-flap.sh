#!/usr/bin/env bash
# Scenario: a rail that flaps. 5 hosts x 2 rails on 3 leaves; a control-mode
# allreduce on n1-n3 while rail1 of n3 flaps 10 times, and a healthy job on
# n4-n5 beside it. The report must name n3's rail1, count exactly the
# lane failures the ranks logged, show the flapping as one incident, and
# say nothing of the healthy job.
. "$(dirname "$0")/scenario.sh"
sc_require scflap
plan 17
sc_up 5 2 3 2 -s flap_window=20s -s incident_gap=5s
ok $? "up: 5 hosts x 2 rails, 3 leaves, 2 spines; controller and 5 agents reporting"

# the jobs run for about 30 s: the flapping is over after about 12
sc_job hit control 'n[1-3]' allreduce 4M 900 17301
sc_job calm control 'n[4-5]' allreduce 4M 900 17302
sleep 4
tb flap n3 1 --count 10 --period 800 >/dev/null
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n3 (job $hit) completes through 10 flaps of n3/rail1" || diag "$(tail -5 "$S/hit.out")"
diag "job $hit ran $(awk '/# timeline / { t = $4 } END { print t }' "$S/hit.out") s"
sc_job_wait calm; rc=$?; calm=$SC_JOB
ok $rc "the job on n4-n5 (job $calm) completes"
sc_verified hit && sc_verified calm; ok $? "both allreduces verified every interval"
sleep 4 # the last reports reach the controller

sc_failovers_match hit "$hit"
[ "${SC_FO_LOGGED:-0}" -gt 0 ]; ok $? "the ranks of job $hit logged lane failures ($SC_FO_LOGGED): the flaps hit it"
sc_report_counts "$hit"
sc_outages_through "$hit" n3 rail1
sc_quiet "$calm"
is "$(fq --json hints | json '" ".join(sorted(h["node"] + ":" + h["action"] for h in j["hints"]))')" "n3:drain" \
	"one drain hint, for n3"
fq --json hints | json '[h["reason"] for h in j["hints"]][0]' | grep -q "rail1"
ok $? "... naming rail1"

# Incidents, not rows: the flapping rail is one incident on the job (its
# DOWNs counted: n3's agent's NIC-level DOWNs of rail1), and what it did to
# the job; the path DOWNs and the lane outages stay raw events.
rows=$(psql_ctl "select count(*) from fabriciq.anomaly_jobs where job_id = $hit")
inc=$(fq --json job "$hit" | json 'json.dumps([i for s in j["steps"] for i in s["incidents"]])')
n=$(json 'len(j)' <<<"$inc")
[ "${rows:-99}" -le 3 ]
ok $? "job $hit: $rows anomaly rows for one flapping rail (at most 3), $n incident(s)" ||
	diag "$(psql_ctl "select a.id, a.kind, a.node, a.nic, a.remote_node, a.remote_nic, a.incident_id
		from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on a.id = aj.anomaly_id where aj.job_id = $hit")"
inc=$(json 'json.dumps([i for i in j if (i["node"], i["nic"], i["remote_node"]) == ("n3", "rail1", None)])' <<<"$inc")
is "$(json 'len(j)' <<<"$inc")" 1 "fabriciq job $hit: one incident on n3/rail1 (NIC-level)" || diag "$inc"
diag "$(json '" ".join("%s=%s" % (k, j[0][k]) for k in ("kind", "events", "duration_ns", "open", "ranks",
	"gbps_before", "gbps_during", "lanes_failed_over", "outages")) + " members=" +
	",".join(m["kind"] for m in j[0]["members"])' <<<"$inc")"
downs=$(psql_ctl "select count(*) from fabriciq.link_events where node = 'n3' and nic = 'rail1' and nic_level
	and state = 'down' and time >= (select start_time from fabriciq.steps where job_id = $hit limit 1)")
is "$(json 'j[0]["events"]' <<<"$inc") $(json 'j[0]["open"]' <<<"$inc")" "$downs False" \
	"... counting the $downs NIC-level DOWNs n3's agent logged (10 flaps), over 5 s after the last UP"
is "$(json '" ".join(str(x) for x in [j[0]["ranks"], j[0]["lanes_failed_over"], j[0]["outages"]])' <<<"$inc")" \
	"[0, 1, 2] $(psql_ctl "select count(distinct (conn_id, lane)) || ' ' || count(*) from fabriciq.lane_outages
		where job_id = $hit")" \
	"... on all 3 ranks, with every lane the job failed over and every outage (lane_outages)"
is "$(json '[m["kind"] for m in j[0]["members"]]' <<<"$inc")" "['flapping']" "... the flapping is part of it"
fq job "$hit" | awk '/^Incidents$/ { i = NR } /^Ranks$/ { r = NR } END { exit !(i && i < r) }'
ok $? "fabriciq job $hit: incidents first"
