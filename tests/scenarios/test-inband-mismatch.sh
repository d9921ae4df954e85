#!/usr/bin/env bash
# Scenario: in-band traffic misconfigured, probes not. 6 hosts x 2 rails on
# 3 leaves; on n2's rail0 every TCP packet is classed into a 40 Mbit/s
# class that a bulk flow (n2 -> n6) keeps queued, while UDP (the agents'
# probes) takes the default class, as a wrong traffic class for the job's
# traffic would. A monitor-mode allreduce on n1-n3 starts on it, a healthy
# one on n4-n5 beside it. The inband_mismatch anomalies must include every
# lane path out of n2/rail0 and name nothing not through it (a lane into
# n2/rail0 has only its ACKs in the class: flagged or not by how empty the
# shaped queue once was), no job's report may name anything
# away from n2/rail0, and the healthy job raises none. (A probe path may
# still be delayed by a host's own bulk traffic, as on a real NIC's queue:
# such a path_delay touches no job's lanes and is shown, not failed.)
. "$(dirname "$0")/scenario.sh"
sc_require sinb
plan 7
# The testbed's software switches on shared cores put tens of microseconds
# on a healthy lane's RTT floor (59 us against a 6 us probe p50 was seen on
# a busy machine): in-band mismatches count from 300 us above the probes.
sc_up 6 2 3 2
ok $? "up: 6 hosts x 2 rails, 3 leaves, 2 spines; controller and 6 agents reporting"

tc2() { tb exec n2 tc "$@"; }
tc2 qdisc add dev rail0 root handle 1: htb default 10 &&
	tc2 class add dev rail0 parent 1: classid 1:10 htb rate 10gbit quantum 60000 &&
	tc2 class add dev rail0 parent 1: classid 1:20 htb rate 40mbit quantum 60000 &&
	tc2 qdisc add dev rail0 parent 1:20 handle 20: tbf rate 40mbit burst 16384 latency 20ms &&
	tc2 filter add dev rail0 parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff flowid 1:20
ok $? "n2/rail0: TCP in a 40 Mbit/s class, UDP in the default one"
tb exec n6 "$FQTB_HELPERS/tb-flow" sink --port 17370 --seconds 60 >/dev/null &
sleep 0.5
tb exec n2 "$FQTB_HELPERS/tb-flow" send --dst 198.19.0.13 --bind 198.19.0.5 --port 17370 --seconds 50 >/dev/null &
sleep 2

sc_job hit monitor 'n[1-3]' allreduce 256K 150 17371
sc_job calm monitor 'n[4-5]' allreduce 1M 300 17372
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n3 (job $hit) completes" || diag "$(tail -5 "$S/hit.out")"
sc_job_wait calm; rc=$?; calm=$SC_JOB
sc_verified hit && sc_verified calm && [ $rc = 0 ]; ok $? "both jobs (job $calm on n4-n5) completed, verified every interval"
sleep 3

# Flagged: every lane path whose data leaves through n2/rail0 (the
# misclassified class); a lane into n2/rail0 only has its ACKs there, and
# its RTT floor is whatever the shaped queue was at its emptiest, so it
# may be flagged too, but nothing away from n2/rail0 may be.
found=$(sc_anomalies "kind = 'inband_mismatch'")
want=$(psql_ctl "select distinct 'inband_mismatch ' || src_node || '/' || src_nic || ' ' || dst_node || '/' || dst_nic
	from fabriciq.lane_windows where job_id = $hit and src_node || '/' || src_nic = 'n2/rail0' order by 1")
may=$(psql_ctl "select distinct 'inband_mismatch ' || src_node || '/' || src_nic || ' ' || dst_node || '/' || dst_nic
	from fabriciq.lane_windows where job_id = $hit and 'n2/rail0' in (src_node || '/' || src_nic, dst_node || '/' || dst_nic)
	order by 1")
[ -n "$want" ] && [ -z "$(comm -13 <(LC_ALL=C sort <<<"$found") <(LC_ALL=C sort <<<"$want"))" ] && [ -z "$(comm -23 <(LC_ALL=C sort <<<"$found") <(LC_ALL=C sort <<<"$may"))" ]
ok $? "the inband_mismatch anomalies: every lane path out of n2/rail0, nothing not through it" ||
	diag "found: $(tr '\n' ';' <<<"$found") want: $(tr '\n' ';' <<<"$want") may: $(tr '\n' ';' <<<"$may")"
is "$(sc_anomalies "id in (select anomaly_id from fabriciq.anomaly_jobs)
	and 'n2/rail0' not in (node || '/' || nic, coalesce(remote_node || '/' || remote_nic, ''))")" "" \
	"every anomaly in a job's report names n2/rail0"
diag "anomalies in no job's report: $(psql_ctl "select string_agg(summary, '; ') from fabriciq.anomalies
	where id not in (select anomaly_id from fabriciq.anomaly_jobs)")"
sc_quiet "$calm" calm
