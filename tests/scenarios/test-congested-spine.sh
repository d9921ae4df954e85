#!/usr/bin/env bash
# Scenario: a congested spine. 8 hosts x 2 rails on 4 leaves and 3 spines;
# a monitor-mode allreduce on one host of each leaf (n1 n3 n5 n7) while
# every link of spine3 is shaped to 40 Mbit/s for 12 s. What is slow is
# the paths over spine3: every delay anomaly is of a probed path that the
# leaves' ECMP hash sends over spine3 (one of its probe flows, at least), none names a NIC (slow sender or
# receiver, down, flapping), the delay is blamed on spine3 (one
# fabric_delay incident, every path_delay its member: the agents trace
# their paths' routes and the controller localises), the job report lists
# spine3's incident (its lanes' own routes cross spine3), no host gets a
# drain hint, and spine3's incident gets one fabric hint: what to check on
# spine3.
. "$(dirname "$0")/scenario.sh"
sc_require sspn
plan 14
# The testbed's software switches on shared cores add tens of microseconds
# of jitter (4x a 15 us baseline is noise here): delays count from 300 us.
sc_up 8 2 4 3 -s delay_floor=300us -s "topology_file=$S/topology.conf"
ok $? "up: 8 hosts x 2 rails, 4 leaves, 3 spines; controller and 8 agents reporting"
sc_topology_file >"$S/topology.conf" # the switches' names

FABRICIQ_LANES=4 sc_job hit monitor 'n[1,3,5,7]' allreduce 4M 200 17351
sc_job_running hit && sleep 1
for l in 1 2 3 4; do tb shape "leaf$l-spine3" 40mbit; done
# 12 s of congestion; meanwhile, when is spine3 first blamed?
t0=$(date +%s%N) blamed=
while [ $(($(date +%s%N) - t0)) -lt 12000000000 ]; do
	[ -z "$blamed" ] && [ "$(psql_ctl "select count(*) from fabriciq.anomalies where component = 'spine3'")" != 0 ] &&
		blamed=$((($(date +%s%N) - t0) / 1000000))
	sleep 0.5
done
diag "time to blame: ${blamed:-not within 12} ${blamed:+ms after the shaping}"
diag "spine3's queues: $(for l in 1 2 3 4; do
	ip netns exec "$TB_PFX-leaf$l" tc -s qdisc show dev s3 | awk -v l=$l '/Sent/ { printf "leaf%d->spine3 %d B %d dropped; ", l, $2, $7 }'
	ip netns exec "$TB_PFX-spine3" tc -s qdisc show dev "l$l" | awk -v l=$l '/Sent/ { printf "spine3->leaf%d %d B %d dropped; ", l, $2, $7 }'
done)"
# the bytes spine3's queues sent: the job's lanes over it (the probes are a
# few kB), read before the shaping (and its counters) goes
sent=$(for l in 1 2 3 4; do
	ip netns exec "$TB_PFX-leaf$l" tc -s qdisc show dev s3 | awk '/Sent/ { print $2 }'
	ip netns exec "$TB_PFX-spine3" tc -s qdisc show dev "l$l" | awk '/Sent/ { print $2 }'
done | awk '{ s += $1 } END { print s + 0 }')
for l in 1 2 3 4; do tb shape "leaf$l-spine3" off; done
sc_job_wait hit; rc=$?; hit=$SC_JOB
ok $rc "the job on n1 n3 n5 n7 (job $hit) completes through 12 s of a congested spine3" ||
	diag "$(tail -5 "$S/hit.out")"
sc_verified hit; ok $? "verified every interval"
diag "job $hit ran $(awk '/# timeline / { t = $4 } END { print t }' "$S/hit.out") s"
sleep 3
diag "anomalies: $(sc_anomalies | awk '{ print $1 }' | uniq -c | xargs)"

delays=$(psql_ctl "select kind || ' ' || node || '/' || nic || ' ' || remote_node || '/' || remote_nic
	from fabriciq.anomalies where kind = 'path_delay' order by 1")
bad=$(while read -r _ src dst; do
	[ -n "$src" ] || continue
	sp=$(sc_probe_spines "${src%/*}" "${src#*/}" "${dst%/*}" "${dst#*/}")
	grep -qx spine3 <<<"$sp" || echo "$src -> $dst over $(tr "\n" " " <<<"$sp")"
done <<<"$delays")
n=$(grep -c . <<<"$delays")
is "$bad" "" "every path_delay anomaly ($n) is of a path a flow of which crosses spine3" || diag "$delays"
[ "$n" -gt 0 ]; ok $? "the congestion was seen: $n paths over spine3 delayed"
is "$(sc_anomalies "remote_node is null and component is null")" "" "no anomaly names a NIC (slow sender or receiver, down, flapping)"
is "$(sc_anomalies "kind not in ('path_delay', 'lane_outlier', 'fabric_delay', 'fabric_loss')")" "" \
	"no other kind of anomaly (a shaped spine's queues also drop: fabric_loss)" || diag "$(sc_anomalies)"
is "$(psql_ctl "select string_agg(component, ', ') from fabriciq.incidents where kind like 'fabric_%'")" \
	"spine3" "the delay is blamed on spine3, one fabric incident (a link of it blamed first, or its drops, are part of it), nothing else blamed" ||
	diag "$(psql_ctl "select id, incident_id, kind, component, summary from fabriciq.anomalies where kind like 'fabric_%'")"
diag "$(psql_ctl "select summary from fabriciq.anomalies where kind = 'fabric_delay'")"
is "$(psql_ctl "select count(*) from fabriciq.anomalies p where p.kind = 'path_delay' and p.incident_id is distinct from
	(select id from fabriciq.incidents f where f.kind like 'fabric_%' and f.component = 'spine3')")" 0 \
	"every path_delay anomaly ($n) is a member of the spine3 incident"
is "$(fq --json job "$hit" | json 'sum(len(s["anomalies"]) for s in j["steps"])')" \
	"$(psql_ctl "select count(*) from fabriciq.anomaly_jobs where job_id = $hit")" \
	"job $hit: the report lists every anomaly attached to it"
# What an operator reads in `fabriciq hints`: no node to drain, spine3 to check.
inc=$(psql_ctl "select id from fabriciq.incidents where kind like 'fabric_%' and component = 'spine3'")
hints=$(fq --json hints)
is "$(json '" ".join(h["action"] + ":" + str(h["node"]) for h in j["hints"] if h["action"] != "check")' <<<"$hints")" "" \
	"no drain hint" || diag "$hints"
is "$(json '" ".join(h["component"] + ":" + str(h["anomaly_id"]) for h in j["hints"] if h["action"] == "check" and h["component"] == "spine3")' <<<"$hints")" \
	"spine3:$inc" "spine3's incident ($inc) got exactly one fabric hint, a check naming spine3" || diag "$hints"
is "$(json '" ".join(h["component"] for h in j["hints"] if h["action"] == "check" and not h["superseded"])' <<<"$hints")" \
	spine3 "... the only one that counts (a link of it blamed first: its hint superseded by spine3's)" || diag "$hints"
diag "$(json '"; ".join(h["component"] + (" (superseded)" if h["superseded"] else "") + ": " + h["reason"] for h in j["hints"] if h["action"] == "check")' <<<"$hints")"
# The job's report: spine3's incident, since the job's lanes crossed it
# (they are the only traffic there: the bytes its queues sent, above), found by
# the lanes' own routes (each traced by its sending agent with the lane's
# TCP 5-tuple: ECMP hashes a lane apart from its NIC pair's probes), and
# nothing else.

is "$(fq --json job "$hit" | json '" ".join(sorted(set(i.get("component") or i["kind"] + "/" + i["severity"] for s in j["steps"] for i in s["incidents"] if not (i["kind"] == "lane_outlier" and i["severity"] == "info"))))')" \
	"$([ "$sent" -gt 10000000 ] && echo spine3)" "job $hit's report: spine3's incident (its lanes sent $sent bytes over spine3), nothing else (and lane outliers its probes did not see, info)" ||
	diag "lane routes: $(for n in 1 3 5 7; do json '" ".join(r["local_nic"] + ">" + r["remote_node"] + ":" + ",".join(r["hops"]) for r in j.get("lane_traces", {}).get("routes", []))' <"$S/agent-n$n.json" 2>/dev/null; done)"
