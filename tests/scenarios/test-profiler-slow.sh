#!/usr/bin/env bash
# Scenario: a slow peer seen through the profiler (issue 18). 4 hosts x 1
# rail on 2 leaves; `srun --fabriciq=monitor` with the site's default
# (monitor_via=profiler): NCCL keeps its transport (here fabriciq-collbench
# over the net plugin with FABRICIQ_TELEMETRY=0, sending fabriciq nothing)
# and only the profiler's reports reach the controller. First a healthy
# 4-rank allreduce on n1-n4: no anomaly on it. Then a 3-rank allreduce on
# n1-n3 while n3 takes in at most SLOW_RATE (100 Mbit/s) for 12 s (its
# leaf's port towards it shaped, as test-slow-receiver.sh does): rank 1
# on n2 sends to n3 in the ring, and its transfers are far slower than
# the others'. The detector must raise exactly one peer_slow, n2 -> n3,
# attached to that job with ranks 1 and 2 only.
. "$(dirname "$0")/scenario.sh"
sc_require scps
NET=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
[ -f "$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so" ] || skip_all "the profiler plugin is not built"
SC_SPANK_MONITOR="profiler_libdir=$B/nccl-profiler/.libs" # monitor_via: the default, profiler
SLOW_RATE=${SLOW_RATE:-100mbit}
plan 9
sc_up 4 1 2 1
ok $? "up: 4 hosts x 1 rail, 2 leaves; controller and 4 agents reporting"

# pjob NAME NODES ITERS PORT: a monitor job through the profiler, a rank
# per node, 4 MiB allreduces, in the background (as sc_job, with the
# transport named: NCCL_NET_PLUGIN is not set in profiler mode)
pjob() {
	local n
	n=$("$TB" slurm scontrol show hostnames "$2" | wc -l)
	FABRICIQ_TELEMETRY=0 timeout 300 "$TB" slurm srun -w "$2" -N"$n" -n"$n" -J "$1" --fabriciq=monitor sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		"$CB" -p "$NET" --bootstrap "198.19.0.3:$4" --coll allreduce -b 4M -e 4M -n "$3" -w 5 --timeout 120 \
		--timeline 1000 >"$S/$1.out" 2>&1 &
	echo $! >"$S/$1.pid"
}
# windows JOB: per rank, the step_send windows stored and their median
# rate (GB/s over busy time): what the rule judged
windows() {
	psql_ctl "select rank || '->' || id || ':' || count(*) || ':' ||
		round((percentile_cont(0.5) within group (order by bytes::float8 / nullif(mean_ns * count, 0)))::numeric, 3)
		from fabriciq.profiler_windows where job_id = $1 and kind = 'step_send' and bytes > 0
		group by rank, id order by rank, id" | tr '\n' ' '
}

pjob calm 'n[1-4]' 200 17371
sc_job_wait calm; rc=$?; calm=$SC_JOB
sc_verified calm && [ $rc = 0 ]
ok $? "the healthy job on n1-n4 (job $calm) completed, verified every interval" || diag "$(tail -5 "$S/calm.out")"

pjob hit 'n[1-3]' 400 17372
sc_job_running hit
sleep 3
leaf=$(sc_leaf_ns n3)
tbf_set "$leaf" n3r0 "$SLOW_RATE" 16384 20ms
sleep 12
ip netns exec "$leaf" tc qdisc del dev n3r0 root
sc_job_wait hit; rc=$?; hit=$SC_JOB
sc_verified hit && [ $rc = 0 ]
ok $? "the job on n1-n3 (job $hit) completed through 12 s of a slow n3, verified every interval" ||
	diag "$(tail -5 "$S/hit.out")"
sleep 4 # the last reports reach the controller, a tick judges them
diag "calm job $calm step_send windows (rank->peer:windows:median GB/s): $(windows "$calm")"
diag "hit job $hit step_send windows: $(windows "$hit")"
diag "anomalies: $(sc_anomalies | awk '{ print $1 }' | uniq -c | xargs)"

is "$(psql_ctl "select count(distinct rank) from fabriciq.profiler_windows where job_id = $calm and kind = 'step_send'")" 4 \
	"the healthy job's 4 ranks reported their transfers through the profiler"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id in ($calm, $hit)")" 0 \
	"no lane window: the profiler carried the telemetry"
sc_quiet "$calm"
is "$(psql_ctl "select node || ' -> ' || coalesce(remote_node, '?') || ' ' || coalesce(nic, '-')
	from fabriciq.anomalies where kind = 'peer_slow'")" "n2 -> n3 -" "one peer_slow in all: n2 -> n3, no NIC" ||
	diag "$(psql_ctl "select summary, evidence from fabriciq.anomalies where kind = 'peer_slow'")"
is "$(psql_ctl "select a.kind || ' ' || aj.ranks::text from fabriciq.anomaly_jobs aj join fabriciq.anomalies a
	on a.id = aj.anomaly_id where aj.job_id = $hit order by 1")" "peer_slow {1,2}" \
	"job $hit: that peer_slow and nothing else, on ranks 1 (n2) and 2 (n3)" ||
	diag "$(psql_ctl "select a.kind, a.summary from fabriciq.anomaly_jobs aj join fabriciq.anomalies a
		on a.id = aj.anomaly_id where aj.job_id = $hit")"
rep=$(fq --json job "$hit" | json '" ".join("%s:%s:%s" % (a["kind"], a["node"], sorted(a["ranks"]))
	for s in j["steps"] for a in s["anomalies"])' 2>&1)
is "$rep" "peer_slow:n2:[1, 2]" "fabriciq --json job $hit: the peer_slow, from n2, on ranks 1 and 2"
fq job "$hit" | grep -i -A2 "peer_slow" | head -6 | sed "s/^/# /"
