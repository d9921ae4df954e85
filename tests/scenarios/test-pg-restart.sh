#!/usr/bin/env bash
# Scenario: PostgreSQL restarted while a rail flaps under a control-mode
# job: the controller spools what it could not write, and the job report
# still holds every lane failure the ranks logged, once.
. "$(dirname "$0")/scenario.sh"
sc_require scpg
plan 7
sc_up 4 2 2 2
ok $? "up: 4 hosts x 2 rails; controller and 4 agents reporting"
sc_job hit control 'n[1-3]' allreduce 4M 800 17341
sc_job_running hit && sleep 1
pg() { tb exec ctl runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$S/pg/data" -w -t 30 "$@"; }
pg -m fast stop >/dev/null
tb flap n3 1 --count 6 --period 800 >/dev/null
sleep 2
pg -l "$S/pg/postgresql.log" -o "-c listen_addresses=198.18.0.1 -p 5432 -c unix_socket_directories=$S/pg" start >/dev/null
ok $? "PostgreSQL stopped through 6 flaps of n3/rail1, then started again"
sc_job_wait hit; rc=$?; hit=$SC_JOB
sc_verified hit && [ $rc = 0 ]; ok $? "the job (job $hit) completed, verified every interval"
sleep 8 # the controller's reconnect backoff, then its spool
sc_failovers_match hit "$hit"
sc_report_counts "$hit"
sc_outages_through "$hit" n3 rail1
# What the detector found while the database was away waited in its queue:
# the flaps' incident is stored and attached to the job, none was dropped.
is "$(psql_ctl "select count(*) from fabriciq.anomalies a where a.incident_id is null and a.node = 'n3' and a.nic = 'rail1'
	and a.id in (select anomaly_id from fabriciq.anomaly_jobs where job_id = $hit)") $(grep -c 'not stored' "$S/log/ctl.controller.log")" "1 0" \
	"the flaps' incident, found while PostgreSQL was away, is stored once, attached to job $hit; no detector action unstored" ||
	diag "$(psql_ctl "select id, incident_id, kind, node, nic, summary from fabriciq.anomalies order by id")"$'\n'"$(grep 'not stored' "$S/log/ctl.controller.log" | head -5)"
