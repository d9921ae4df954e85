#!/usr/bin/env bash
# Scenario: a slow receiver. 6 hosts x 2 rails on 3 leaves; a monitor-mode
# allreduce on n1-n3 while n3 takes in at most 30 Mbit/s per rail for 12 s
# (its leaf's ports towards it shaped, what a host that cannot keep up
# does to its NIC's queue), and a healthy job on n5-n6. The detector must
# name n3's NICs slow receivers, attached to the job with n3's rank, and
# blame nothing else: no slow sender, no anomaly away from n3, no drain
# hint; the healthy job is quiet.
. "$(dirname "$0")/scenario.sh"
sc_require sslo
plan 10
# The testbed's software switches on shared cores add tens of microseconds
# of jitter (4x a 15 us baseline is noise here): delays count from 300 us.
sc_up 6 2 3 2 -s delay_floor=300us
ok $? "up: 6 hosts x 2 rails, 3 leaves, 2 spines; controller and 6 agents reporting"

sc_job hit monitor 'n[1-3]' allreduce 4M 400 17361
sc_job calm monitor 'n[5-6]' allreduce 4M 400 17362
sleep 3
leaf=$(sc_leaf_ns n3)
for r in 0 1; do tbf_set "$leaf" "n3r$r" 30mbit 16384 20ms; done
sleep 12
for r in 0 1; do ip netns exec "$leaf" tc qdisc del dev "n3r$r" root; done
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1-n3 (job $hit) completes through 12 s of a slow n3" || diag "$(tail -5 "$S/hit.out")"
sc_job_wait calm; rc=$?; calm=$SC_JOB
sc_verified hit && sc_verified calm && [ $rc = 0 ]; ok $? "both jobs (job $calm on n5-n6) completed, verified every interval"
sleep 3
diag "anomalies: $(sc_anomalies | awk '{ print $1 }' | uniq -c | xargs)"

is "$(sc_anomalies "kind = 'slow_receiver'")" $'slow_receiver n3/rail0 -\nslow_receiver n3/rail1 -' \
	"n3's two NICs are named slow receivers"
is "$(sc_anomalies "kind = 'slow_sender'")" "" "no slow sender"
# The lanes' delays per node pair, their windows' p99 (median / max, ms):
# away from n3 a lane's chunks count from the kernel's stamp of their
# arrival, not from when a rank busy on 2 shared cores read them (one
# read late gave a lane_outlier n1 -> n2 on CI).
diag "job $hit lanes, p99 median/max: $(psql_ctl "select string_agg(x, ', ' order by x) from (
	select src_node || '>' || dst_node || ' ' || round((percentile_cont(0.5) within group (order by owd_p99_ns) / 1e6)::numeric, 2)
		|| '/' || round(max(owd_p99_ns) / 1e6, 2) x
	from fabriciq.lane_windows where job_id = $hit and owd_p99_ns > 0 group by src_node, dst_node) y")"
is "$(sc_anomalies "node is distinct from 'n3' and remote_node is distinct from 'n3'")" "" "every anomaly names n3" ||
	diag "$(sc_anomalies)"$'\n'"$(sc_delay_evidence "a.node <> 'n3' and a.remote_node <> 'n3'")"
r3=$(psql_ctl "select rank from fabriciq.ranks where job_id = $hit and node = 'n3'")
is "$(fq --json job "$hit" | json '" ".join(sorted("%s/%s:%s" % (a["node"], a["nic"], 1 if '"${r3:--1}"' in a["ranks"] else 0)
	for s in j["steps"] for a in s["anomalies"] if a["kind"] == "slow_receiver"))')" "n3/rail0:1 n3/rail1:1" \
	"job $hit's report: both slow receivers, each with n3's rank ($r3)"
sc_quiet "$calm" calm
is "$(fq --json hints | json 'len(j["hints"])')" 0 "no hint (no drain, no fabric hint)"
sc_lanes_verified 6
