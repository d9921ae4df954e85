#!/usr/bin/env bash
# Scenario: monitor at zero cost (issue 18). With the site's default
# (monitor_via=profiler), `srun --fabriciq=monitor` gives the step's tasks
# NCCL_PROFILER_PLUGIN = fabriciq's profiler and no NCCL_NET_PLUGIN.
# fabriciq-collbench stands for NCCL: it loads the profiler named in the
# environment and drives it beside a transport that sends fabriciq no
# telemetry of its own (the net plugin with FABRICIQ_TELEMETRY=0 stands for
# NCCL's socket transport). The profiler's thread sends its windows and op
# records to the agent, which tags them with job, step and rank; the
# controller stores them; `fabriciq --json job` shows them. Counts exact:
# the op records stored per rank are the collectives the driver ran on
# that rank, the socket events and the coll events in the stored windows
# are the driver's, and no lane window exists for the job.
. "$(dirname "$0")/scenario.sh"
sc_require scprof
NET=$B/nccl-plugin/.libs/libnccl-net-fabriciq.so
[ -f "$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so" ] || skip_all "the profiler plugin is not built"
SC_SPANK_MONITOR="profiler_libdir=$B/nccl-profiler/.libs" # monitor_via: the default, profiler
plan 12
sc_up 2 1 1 1
ok $? "up: 2 hosts x 1 rail; controller and 2 agents reporting, clocks published"

# 64K..4M x4, 30 timed + 3 warm-up iterations: 4 sizes x 33 = 132 allreduces per rank
FABRICIQ_TELEMETRY=0 timeout 200 "$TB" slurm srun -w 'n[1-2]' -N2 -n2 -J prof --fabriciq=monitor sh -c \
	'echo "[r$SLURM_PROCID] env prof=${NCCL_PROFILER_PLUGIN:-} net=${NCCL_NET_PLUGIN:-}"
	[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"
	exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
	"$CB" -p "$NET" --bootstrap 198.19.0.3:17331 --coll allreduce -b 64K -e 4M -f 4 -n 30 -w 3 --timeout 120 \
	>"$S/prof.out" 2>&1
rc=$?
job=$(awk '/^job / { print $2; exit }' "$S/prof.out")
: "${job:=0}"
is "$(grep -c "env prof=$B/nccl-profiler/.libs/libnccl-profiler-fabriciq.so net=\$" "$S/prof.out")" 2 \
	"both tasks: NCCL_PROFILER_PLUGIN names the profiler, NCCL_NET_PLUGIN unset (NCCL keeps its transports)" ||
	diag "$(grep ' env ' "$S/prof.out")"
[ $rc = 0 ] && grep -q '^\[r0\] # OK' "$S/prof.out"
ok $? "job $job: the allreduces ran and verified" || diag "$(tail -5 "$S/prof.out")"
# sent R KEY: what rank R's driver says it sent the profiler ('# profiler rank R: ... sent: KEY N ...')
sent() { awk -v r="[r$1]" -v k="$2" '$1 == r && $2 == "#" && $3 == "profiler" {
	for (i = 4; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' "$S/prof.out"; }
is "$(sent 0 colls) $(sent 1 colls)" "132 132" "the driver ran 132 allreduces on each rank through the profiler"
sleep 3 # the agents' spools reach the controller
for r in 0 1; do
	got=$(psql_ctl "select count(*) || ' ' || count(distinct seq) from fabriciq.profiler_ops
		where job_id = $job and rank = $r and func = 'AllReduce' and synchronised")
	is "$got" "$(sent $r colls) $(sent $r colls)" "rank $r: every allreduce stored once, on the global clock ($got)"
done
got=$(psql_ctl "select rank || ':' || sum(count) filter (where kind = 'net_sock') || ':' ||
	sum(count) filter (where kind = 'coll') from fabriciq.profiler_windows where job_id = $job
	group by rank order by rank" | tr '\n' ' ')
is "$got" "0:$(sent 0 net):$(sent 0 colls) 1:$(sent 1 net):$(sent 1 colls) " \
	"windows: each rank's socket events and collectives, as the driver sent them"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = $job")" 0 \
	"no lane window: the transport sent fabriciq nothing, the profiler carried the telemetry"
rep=$(fq --json job "$job" | json '(lambda p: "%d %s %d %s %s %s" % (p["ops"], p["collectives"][0]["func"],
	p["collectives"][0]["ops"], p["collectives"][0]["busbw_gbs"] > 0, len(p["slowest_peers"]) > 0,
	p["synchronised"]))(j["steps"][0]["profiler"])' 2>&1)
is "$rep" "264 AllReduce 264 True True True" \
	"fabriciq --json job: 264 ops, AllReduce bus bandwidth, slowest peers, on the global clock" ||
	diag "$(fq --json job "$job" | head -c 1500)"
fwd=$(for n in n1 n2; do "$AGENT" -c /dev/null -s "status_file=$S/agent-$n.json" --status --json |
	json '"%d/%d" % (j["profiler_forwarded"], j["profiler_removed"])'; done | tr '\n' ' ')
[[ $fwd =~ ^[1-9][0-9]*/0\ [1-9][0-9]*/0\ $ ]]
ok $? "both agents forwarded profiler reports and removed nothing (forwarded/removed: $fwd)"
# The same through NCCL's IB transport's events (the driver emits a QP
# event per request, as NCCL's IB transport does): per-QP windows stored,
# the job report's slowest QPs.
FABRICIQ_TELEMETRY=0 timeout 200 "$TB" slurm srun -w 'n[1-2]' -N2 -n2 -J profib --fabriciq=monitor sh -c \
	'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"
	exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
	"$CB" -p "$NET" --profiler-net ib --bootstrap 198.19.0.3:17332 --coll allreduce -b 1M -e 1M -n 20 -w 2 \
	--timeout 120 >"$S/prof.out" 2>&1
rc=$?
job2=$(awk '/^job / { print $2; exit }' "$S/prof.out")
: "${job2:=0}"
sleep 3
got=$(psql_ctl "select rank || ':' || sum(count) from fabriciq.profiler_windows where job_id = $job2 and kind = 'net_ib'
	group by rank order by rank" | tr '\n' ' ')
[ $rc = 0 ] && [ "$got" = "0:$(sent 0 net) 1:$(sent 1 net) " ] && [ "$(sent 0 net)" -gt 0 ]
ok $? "job $job2 (IB QP events): each rank's QP events stored in per-QP windows, as the driver sent them ($got)" ||
	diag "$(tail -3 "$S/prof.out"; psql_ctl "select rank, kind, count(*), sum(count), min(interval_start), bool_and(synchronised)
		from fabriciq.profiler_windows where job_id = $job2 group by rank, kind order by rank, kind";
		psql_ctl "select job_id, rank, count(*) from fabriciq.profiler_ops group by job_id, rank")"
rep=$(fq --json job "$job2" | json '(lambda q: "%d %s" % (len(q), all(x["events"] > 0 and x["mean_ns"] > 0 for x in q)))(j["steps"][0]["profiler"]["slowest_qps"])' 2>&1)
[[ $rep =~ ^[1-5]\ True$ ]]
ok $? "fabriciq --json job $job2: the slowest QPs, with events and mean completion times ($rep)"
fq job "$job2" | sed -n "/^Collectives/,\$p" | head -24 | sed "s/^/# /"
