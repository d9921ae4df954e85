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
CB=$B/nccl-plugin/collbench/fabriciq-collbench
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
CTL=$B/controller/fabriciq-controller
FQCLI=$B/controller/fabriciq
for f in "$CB" "$SPANK_SO" "$CTL" "$FQCLI"; do [ -e "$f" ] || skip_all "$f not built"; done
plan 9
tb_setup e2e
S=$FQTB_STATE
psql_ctl() { tb exec ctl psql -h 198.18.0.1 -U postgres -d fabriciq -tAX -c "$1"; }

SPANK="optional $SPANK_SO libdir=$B/nccl-plugin/.libs step_socket=$S/run/%n/agent-step.sock"
SPANK+=" telemetry_socket=$S/run/%n/agent-telemetry.sock clock_page=$S/run/%n/clock"
tb up --prefix e2e --hosts 4 --rails 2 --leaves 2 --spines 2 --clock-offsets random --plugstack "$SPANK" >/dev/null
ok $? "up: 4 hosts x 2 rails, Slurm with the SPANK plugin"
mkdir -p "$S/spool"
tb daemon start ctl controller -- "$CTL" -c /dev/null -s listen=198.18.0.1:7100 -s http_listen=198.18.0.1:7180 \
	-s "db=host=198.18.0.1 port=5432 user=postgres dbname=fabriciq" -s "munge_socket=$S/munge/munge.socket" \
	-s "spool_dir=$S/spool/ctl" >/dev/null
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
corr=$("$B/slurmd-agent/fabriciq-agent" -c /dev/null -s "status_file=$S/agent-n3.json" --status --json | tr -d ' \n' |
	grep -o '"source":"[a-z]*"')
is "$corr" '"source":"controller"' "n3's global time follows the controller's mesh correction"

out=$(timeout 150 "$TB" slurm srun -N4 -n4 --fabriciq sh -c '[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@"' sh \
	"$CB" --bootstrap 198.19.0.3:17101 -c allreduce -b 1M -e 1M -n 200 -w 5 2>&1)
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
