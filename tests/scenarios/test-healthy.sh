#!/usr/bin/env bash
# Scenario: nothing wrong. 6 hosts x 2 rails on 3 leaves and 2 spines, no
# shaping, no fault; a control-mode allreduce on n1-n3 and a control-mode
# alltoall on n4-n6, both at full load for a minute or more. A healthy
# fabric under load must raise no anomaly of warning or above, anywhere,
# and neither job may report a failover: a busy job is not a broken one.
# (An info-level observation may remain, e.g. a lane slower than its
# siblings that no probe on its path corroborates; it is printed.)
. "$(dirname "$0")/scenario.sh"
sc_require schealth
plan 5
sc_up 6 2 3 2
ok $? "up: 6 hosts x 2 rails, 3 leaves, 2 spines; controller and 6 agents reporting, clocks published"

t0=$(date +%s)
sc_job ar control 'n[1-3]' allreduce 4M 1200 17311
sc_job a2a control 'n[4-6]' alltoall 4M 1200 17312
sc_job_wait ar; rc_ar=$?; ar=$SC_JOB
sc_job_wait a2a; rc_a2a=$?; a2a=$SC_JOB
secs=$(($(date +%s) - t0))
[ "$rc_ar $rc_a2a" = "0 0" ] && sc_verified ar && sc_verified a2a
ok $? "jobs $ar (allreduce) and $a2a (alltoall) complete and verify, both at full load for $secs s" ||
	diag "$(tail -3 "$S/ar.out" "$S/a2a.out")"
sleep 4 # the last reports reach the controller

loud=$(psql_ctl "select count(*) from fabriciq.anomalies where severity <> 'info'")
is "$loud" 0 "no anomaly of warning or above on a healthy fabric under load" ||
	diag "$(psql_ctl "select kind, severity, node, nic, summary from fabriciq.anomalies where severity <> 'info' order by id")"
for job in "$ar" "$a2a"; do
	is "$(sc_outages "$job") $(psql_ctl "select count(*) from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on
		a.id = aj.anomaly_id where aj.job_id = $job and a.severity <> 'info'")" "0 0" \
		"job $job: no failover, no anomaly of warning or above"
done
diag "info: $(psql_ctl "select kind || ': ' || summary from fabriciq.anomalies where severity = 'info' order by id")"
diag "lane windows: $(psql_ctl "select count(*) from fabriciq.lane_windows") ($(psql_ctl "select count(*) from fabriciq.lane_windows where owd_p99_ns is not null") with delays); probe windows: $(psql_ctl "select count(*) from fabriciq.probe_windows"); anomalies of any severity: $(psql_ctl "select count(*) from fabriciq.anomalies")"
