#!/usr/bin/env bash
# End to end on the emulated cluster, every part real: Slurm with the
# SPANK plugin, munge, PostgreSQL, the controller, an agent per host, the
# NCCL plugin under fabriciq-collbench. `srun --fabriciq` -> the step
# registered with the agents -> lane windows tagged with job/step/rank in
# PostgreSQL; a cut rail -> a link event and an anomaly; the clock
# corrected by the controller's mesh solve.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/lib/testlib.sh"
tb_require
B=$top_builddir
CB=$B/tools/collbench/fabriciq-collbench
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
CTL=$B/controller/fabriciq-controller
FQCLI=$B/controller/fabriciq
for f in "$CB" "$SPANK_SO" "$CTL" "$FQCLI"; do [ -e "$f" ] || skip_all "$f not built"; done
plan 29
tb_setup e2e
S=$FQTB_STATE
# the CLI as root on the controller's host, with a munge credential from its munged
fqcli() { tb exec ctl "$FQCLI" --controller http://198.18.0.1:7180 --munge-socket "$S/munge/munge.socket" "$@"; }

# only the step socket: the agent tells the tasks its other paths
SPANK="optional $SPANK_SO libdir=$B/nccl-plugin/.libs ifaces=rail0,rail1 monitor_via=net step_socket=$S/run/%n/agent-step.sock"
tb up --prefix "$TB_PFX" --hosts 4 --rails 2 --leaves 2 --spines 2 --clock-offsets random --plugstack "$SPANK" >/dev/null
ok $? "up: 4 hosts x 2 rails, Slurm with the SPANK plugin"
tb_controller_start "$CTL" -s flap_window=20s -s resume_after=5s -s quiet_close=5s -s delay_floor=5ms
sleep 1
tb_agents_start "$B/slurmd-agent/fabriciq-agent" -s controller=198.18.0.1:7100 -s "munge_socket=$S/munge/munge.socket"
ok $? "controller and 4 agents started"

# the agents authenticate, say hello, and report
for ((i = 0; i < 30; i++)); do
	[ "$(psql_ctl 'select count(*) from fabriciq.nodes')" = 4 ] && break
	sleep 0.5
done
is "$(psql_ctl 'select count(*) from fabriciq.nodes')" 4 "4 nodes known to the controller"
sleep 6
is "$(psql_ctl "select count(distinct src_node) from fabriciq.probe_windows")" 4 "probe windows from all 4 agents"
# each direction's delays in order, the p90 (what the delay rule judges) among them
is "$(psql_ctl "select count(*), count(*) filter (where owd_fwd_min_ns <= owd_fwd_p50_ns and owd_fwd_p50_ns <= owd_fwd_p90_ns
	and owd_fwd_p90_ns <= owd_fwd_p99_ns and owd_fwd_p99_ns <= owd_fwd_max_ns and owd_rev_p50_ns <= owd_rev_p90_ns
	and owd_rev_p90_ns <= owd_rev_p99_ns) from fabriciq.probe_windows where owd_fwd_p50_ns is not null" | awk -F'|' '{ print ($1 > 0 && $1 == $2) }')" 1 \
	"every probe window with delays has min <= p50 <= p90 <= p99 <= max, both directions"
corr=$("$B/slurmd-agent/fabriciq-agent" -c /dev/null -s "status_file=$S/agent-n3.json" --status --json | tr -d ' \n' |
	grep -o '"source":"[a-z]*"')
is "$corr" '"source":"controller"' "n3's global time follows the controller's mesh correction"

out=$(timeout 150 "$TB" slurm srun -N4 -n4 --fabriciq sh -c '[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
	"$CB" --bootstrap 198.19.0.3:17101 --coll allreduce -b 1M -e 1M -n 200 -w 5 2>&1)
ok $? "srun --fabriciq: allreduce through the plugin" || diag "$out"
job=$(awk '/^job / { print $2; exit }' <<<"$out")
sleep 3
is "$(psql_ctl "select count(*) from fabriciq.ranks where job_id = ${job:-0}")" 4 "job $job: 4 ranks stored with their nodes"
n=$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job:-0}")
[ "${n:-0}" -gt 0 ]; ok $? "job $job: $n lane windows tagged with the job" || diag "$(tb exec n1 cat "$S/log/n1.agent.log" | tail -5)"

tb link down n2 1
sleep 2
tb link up n2 1
sleep 2
n=$(psql_ctl "select count(*) from fabriciq.link_events where node <> 'n2' and remote_node = 'n2' and state = 'down'")
[ "${n:-0}" -ge 3 ]; ok $? "rail1 of n2 cut: $n down events stored" || diag "$(psql_ctl 'select * from fabriciq.link_events limit 5')"
n=$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = ${job:-0} and src_nic not like 'rail%'")
is "$n" 0 "job $job: every lane on a rail (the plugstack's ifaces=)"
# both ends of every lane: the sending and receiving ranks, each on its node
n=$(psql_ctl "select count(*) from fabriciq.lane_windows l
	left join fabriciq.ranks s on s.job_id = l.job_id and s.step_id = l.step_id and s.rank = l.src_rank
	left join fabriciq.ranks d on d.job_id = l.job_id and d.step_id = l.step_id and d.rank = l.dst_rank
	where l.job_id = ${job:-0} and (s.node is distinct from l.src_node or d.node is distinct from l.dst_node
	or l.src_rank = l.dst_rank)")
is "$n" 0 "job $job: every lane window names its sending and receiving ranks, each on its own node"
out=$(fqcli job "$job" 2>&1)
grep -q "n4" <<<"$out"; ok $? "fabriciq job $job: the report names the ranks' nodes" || diag "$out"

# two concurrent jobs on the same hosts: no lane of one stored under the other
tb slurm srun -N4 -n4 --fabriciq sh -c 'exec "$@"' sh "$CB" --bootstrap 198.19.0.3:17102 --coll alltoall \
	-b 256K -e 256K -n 150 -w 5 >"$S/jobA.out" 2>&1 &
pa=$!
tb slurm srun -N4 -n4 --fabriciq sh -c 'exec "$@"' sh "$CB" --bootstrap 198.19.0.3:17103 --coll alltoall \
	-b 256K -e 256K -n 150 -w 5 >"$S/jobB.out" 2>&1
rb=$?
wait $pa
ra=$?
is "$ra $rb" "0 0" "two concurrent --fabriciq jobs both complete" || diag "$(tail -3 "$S/jobA.out" "$S/jobB.out")"
sleep 3
# every lane window of a job comes from a process of that job: the agent
# tagged it from SO_PEERCRED, so its rank is one of the job's ranks on that node
n=$(psql_ctl "select count(*) from fabriciq.lane_windows l where job_id > ${job:-0} and not exists
	(select 1 from fabriciq.ranks r where r.job_id = l.job_id and r.step_id = l.step_id and r.node = l.src_node)")
is "$n" 0 "no lane window attributed to a job without a rank on its node"
is "$(psql_ctl "select count(distinct job_id) from fabriciq.lane_windows where job_id > ${job:-0}")" 2 \
	"both concurrent jobs have their own lane windows"

# a process of a --fabriciq job claims another job: refused, nothing stored under it
LS=$FQTB_HELPERS/tb-lanesend
out=$(tb slurm srun -N1 -w n2 --fabriciq sh -c '
	"$0" "$FABRICIQ_AGENT_SOCKET" 999999 0 777001 && "$0" "$FABRICIQ_AGENT_SOCKET" 0 0 777002 && echo "job $SLURM_JOB_ID"' "$LS" 2>&1)
ok $? "a job process sends two lane reports: one claiming job 999999, one claiming nothing" || diag "$out"
jobc=$(awk '/^job / { print $2 }' <<<"$out")
sleep 3
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = 999999 or bytes = 777001")" 0 \
	"the claim for another job is not stored"
is "$(psql_ctl "select job_id from fabriciq.lane_windows where bytes = 777002")" "$jobc" \
	"the unclaimed report is stored under the sender's own job ($jobc)"
wrong=$("$B/slurmd-agent/fabriciq-agent" -c /dev/null -s "status_file=$S/agent-n2.json" --status --json | tr -d ' \n' |
	grep -o '"telemetry_wrong_job":[0-9]*' | grep -o '[0-9]*$')
is "$wrong" 1 "the agent counted the claim for another job"

# sbatch --fabriciq with two srun steps: both steps recorded, separately
out=$(tb slurm sbatch --wait -N2 -n4 --fabriciq -o "$S/batch-%j.out" --wrap 'srun -N2 -n2 sleep 1; srun -N2 -n4 sleep 1' 2>&1)
ok $? "sbatch --fabriciq --wait with two srun steps" || diag "$out"
jobb=$(grep -o '[0-9]*$' <<<"$out")
sleep 2
is "$(psql_ctl "select string_agg(s.step_id || ':' || (select count(*) from fabriciq.ranks r where r.job_id = s.job_id
	and r.step_id = s.step_id), ' ' order by s.step_id) from fabriciq.steps s where s.job_id = ${jobb:-0} and s.step_id < 1000")" \
	"0:2 1:4" "job $jobb: step 0 with 2 ranks and step 1 with 4, recorded separately"

# 9 flaps of n3's rail1 -> flapping anomaly and a drain hint naming n3 and rail1
tb flap n3 1 --count 9 --period 700 >/dev/null
sleep 4
n=$(psql_ctl "select count(*) from fabriciq.anomalies where kind = 'flapping' and node = 'n3' and nic = 'rail1'")
[ "${n:-0}" -ge 1 ]; ok $? "9 flaps of n3 rail1: a flapping anomaly" ||
	diag "$(psql_ctl 'select kind, node, nic, summary from fabriciq.anomalies')"
hint=$(psql_ctl "select reason from fabriciq.drain_hints where node = 'n3' and action = 'drain' limit 1")
case $hint in "fabriciq: rail1 "*) ok 0 "a drain hint for n3 naming rail1: $hint";; *) ok 1 "a drain hint for n3 naming rail1: '$hint'";; esac
out=$(fqcli hints 2>&1)
grep -q "scontrol update NodeName=n3 State=DRAIN" <<<"$out"; ok $? "fabriciq hints prints the scontrol command" ||
	diag "$out"

# the admin applies it; once n3 is healthy again, fabriciq hints to resume it
out=$(fqcli hints --apply 2>&1)
ok $? "fabriciq hints --apply" || diag "$out"
reason=$(tb exec ctl sinfo -h -N -n n3 -o '%E' | head -1)
case $reason in "fabriciq: rail1 "*) ok 0 "n3 drained in Slurm: $reason";; *) ok 1 "n3 drained in Slurm: '$reason'";; esac
for ((i = 0; i < 60; i++)); do
	n=$(psql_ctl "select count(*) from fabriciq.drain_hints where node = 'n3' and action = 'resume'")
	[ "${n:-0}" -ge 1 ] && break
	sleep 1
done
[ "${n:-0}" -ge 1 ]; ok $? "n3 healthy again: a resume hint after $i s" ||
	diag "$(psql_ctl "select kind, node, nic, end_time from fabriciq.anomalies where end_time is null")"
fqcli hints --apply >/dev/null 2>&1
state=$(tb exec ctl sinfo -h -N -n n3 -o '%T' | head -1)
case $state in *drain*|"") ok 1 "fabriciq hints --apply resumed n3 ($state)";; *) ok 0 "fabriciq hints --apply resumed n3 ($state)";; esac
