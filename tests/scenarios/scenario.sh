# The scenario suite's preamble (sourced by each tests/scenarios/test-*.sh).
# A scenario brings up the emulated cluster with every part real (Slurm
# with the SPANK plugin, munge, PostgreSQL, the controller, an agent per
# host), starts `srun --fabriciq` jobs, injects one fault while they run,
# and checks what an operator reads: `fabriciq --json job`, `fabriciq
# --json hints` and the SQL views. Counts are checked against what the
# ranks themselves logged, never as "at least one".
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../testbed/lib/testlib.sh"
B=$top_builddir
CB=$B/tools/collbench/fabriciq-collbench
SPANK_SO=$B/spank/.libs/spank_fabriciq.so
CTL=$B/controller/fabriciq-controller
AGENT=$B/slurmd-agent/fabriciq-agent
FQCLI=$B/controller/fabriciq

# sc_require PREFIX: skip unless built and the testbed can run; own testbed
# (namespace prefix PREFIX$FQTB_TAG: PREFIX of 4 letters leaves FQTB_TAG 4).
sc_require() {
	local f
	for f in "$CB" "$SPANK_SO" "$CTL" "$AGENT" "$FQCLI"; do [ -e "$f" ] || skip_all "$f not built"; done
	command -v python3 >/dev/null || skip_all "python3 not installed (scripts/deps.sh installs it)"
	tb_require
	tb_setup "$1"
	S=$FQTB_STATE
}

# sc_up HOSTS RAILS LEAVES SPINES [CONTROLLER ARG...]: the cluster, the
# controller and the agents; returns once the controller has every node's
# probe windows and every agent publishes a corrected clock. SC_TB_EXTRA:
# more of `fabriciq-testbed up`'s options (e.g. --spine-rate).
sc_up() {
	local hosts=$1 rails=$2 leaves=$3 spines=$4 spank
	shift 4
	spank="optional $SPANK_SO libdir=$B/nccl-plugin/.libs ifaces=$(seq -s, -f 'rail%g' 0 $((rails - 1)))"
	spank+=" step_socket=$S/run/%n/agent-step.sock" # the agent tells the rest
	spank+=" controller=http://198.18.0.1:7180 munge_socket=$S/munge/munge.socket" # the job-end line
	# monitor through the net plugin (lane telemetry, what the fault
	# scenarios judge); test-profiler.sh sets its own: the profiler path
	spank+=" ${SC_SPANK_MONITOR-monitor_via=net}"
	spank+=" ${SC_SPANK_EXTRA:-}" # e.g. the site's network classes (class=...)
	tb up --prefix "$TB_PFX" --hosts "$hosts" --rails "$rails" --leaves "$leaves" --spines "$spines" \
		--clock-offsets random --plugstack "$spank" ${SC_TB_EXTRA:-} >/dev/null || return 1
	sc_controller_start "$@" || return 1
	sleep 1
	sc_agents_start || return 1
	tb_agents_ready
}

SC_CTL_ARGS=()
sc_controller_start() {
	[ $# -gt 0 ] && SC_CTL_ARGS=("$@")
	tb_controller_start "$CTL" "${SC_CTL_ARGS[@]}"
}
# sc_agent_pid NODE: the node's agent process (its pid file may hold its
# namespace wrapper)
sc_agent_pid() {
	local p
	p=$(cat "$S/daemons/$1.agent.pid")
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = fabriciq-agent ] || p=$(pgrep -P "$p" -x fabriciq-agent | head -1)
	echo "$p"
}
sc_agent_args=(-s controller=198.18.0.1:7100)
sc_agents_start() { tb_agents_start "$AGENT" "${sc_agent_args[@]}" -s "munge_socket=$S/munge/munge.socket"; }
sc_agent_start() { tb_agent_start "$1" "$AGENT" "${sc_agent_args[@]}" -s "munge_socket=$S/munge/munge.socket"; }

# sc_job NAME MODE NODELIST COLL BYTES ITERS PORT: an `srun --fabriciq=MODE`
# job on NODELIST (n[1-3]), a rank per node, in the background; its output
# (every line tagged with the rank) in $S/NAME.out, its srun pid in
# $S/NAME.pid. The bootstrap is on the list's first node, rail0.
# SC_JOB_EXTRA: more of fabriciq-collbench's options (e.g. --gap-us, a pace
# that makes the job's length the same on a fast machine and a slow one).
sc_job() {
	local name=$1 mode=$2 nodes=$3 coll=$4 bytes=$5 iters=$6 port=$7 n first
	n=$("$TB" slurm scontrol show hostnames "$nodes" | wc -l)
	first=$("$TB" slurm scontrol show hostnames "$nodes" | head -1)
	timeout 300 "$TB" slurm srun -w "$nodes" -N"$n" -n"$n" -J "$name" --fabriciq="$mode" sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		"$CB" --bootstrap "198.19.0.$((2 * ${first#n} + 1)):$port" --coll "$coll" -b "$bytes" -e "$bytes" -n "$iters" -w 5 \
		--timeout 120 --timeline 1000 ${SC_JOB_EXTRA:-} >"$S/$name.out" 2>&1 &
	echo $! >"$S/$name.pid"
}

# sc_job_running NAME: wait until the job's collectives run (its rank 0
# printed its first timeline interval), at most 60 s; a fault injected
# after it hits a running job, not its setup. Fails (with a diagnostic) if
# they never did.
sc_job_running() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q '^\[r0\] # timeline ' "$S/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	diag "job $1 has run no collective after 60 s: $(tail -3 "$S/$1.out")"
	return 1
}

# sc_job_wait NAME: the job's exit status; $SC_JOB is its Slurm job id.
sc_job_wait() {
	local rc
	wait "$(cat "$S/$1.pid")"
	rc=$?
	SC_JOB=$(awk '/^job / { print $2; exit }' "$S/$1.out")
	: "${SC_JOB:=0}"
	return $rc
}

# sc_verified NAME: every timeline interval of the job's rank 0 verified.
sc_verified() {
	local n wrong
	n=$(grep -c '# timeline ' "$S/$1.out")
	wrong=$(awk '/# timeline / { w += $(NF - 1) } END { print w + 0 }' "$S/$1.out")
	[ "$n" -gt 0 ] && [ "$wrong" = 0 ]
}

fq() { "$TB" exec ctl "$FQCLI" --controller http://198.18.0.1:7180 --munge-socket "$S/munge/munge.socket" "$@"; }
# json EXPR: evaluate a Python expression over the JSON document on stdin (j).
json() { python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"; }

# sc_failovers_match NAME JOB: what the ranks logged of every lane failure
# and failback equals what fabriciq.failover_events holds, per connection,
# lane and end; and the job report's failovers are lane_outages' rows.
sc_failovers_match() {
	local name=$1 job=$2 out rc
	psql_ctl "select conn_id, from_lane, is_send, failback, cause from fabriciq.failover_events
		where job_id = $job" >"$S/$name.rows"
	out=$(python3 "$top_srcdir/tests/scenarios/failovers-check.py" "$S/$name.out" "$S/$name.rows")
	rc=$?
	SC_FO_LOGGED=$(sed -n 's/^logged [0-9]* events (\([0-9]*\) down.*/\1/p' <<<"$out")
	ok $rc "job $job: every lane failure and failback the ranks logged is stored, once (${out##*$'\n'})" ||
		diag "$out"
}

# sc_flaps_hit JOB NAME: the ranks of JOB logged lane failures (after
# sc_failovers_match); if not, what they said of the path page and lanes.
sc_flaps_hit() {
	[ "${SC_FO_LOGGED:-0}" -gt 0 ]
	ok $? "the ranks of job $1 logged lane failures ($SC_FO_LOGGED): the flaps hit it" ||
		diag "$(grep -iE 'path page|warn|lane' "$S/$2.out" | head -20)"
}

# sc_outages JOB: the job report's failover count (fabriciq --json job).
sc_outages() { fq --json job "$1" | json 'sum(len(s["failovers"]) for s in j["steps"])'; }

# sc_outages_through JOB NODE NIC: every lane outage of the job crossed
# NODE/NIC at one end, and each its sender saw came back (its failback
# stored). An outage only the receiver saw is on a connection its sender
# did not use then, which re-dials at its next send (a job that ends first
# leaves it out: true, and the report says "not back").
sc_outages_through() {
	local bad="from fabriciq.lane_outages o
		join fabriciq.ranks s on s.job_id = o.job_id and s.step_id = o.step_id and s.rank = o.src_rank
		join fabriciq.ranks d on d.job_id = o.job_id and d.step_id = o.step_id and d.rank = o.dst_rank
		where o.job_id = $1 and (not ((s.node = '$2' and o.src_nic = '$3') or (d.node = '$2' and o.dst_nic = '$3'))
		   or o.back_at is null and o.seen_by <> 'receiver')"
	is "$(psql_ctl "select count(*) $bad")" 0 \
		"job $1: every outage is of a lane through $2/$3, and each its sender saw came back" ||
		diag "$(psql_ctl "select o.down_at, o.back_at, s.node, o.src_nic, d.node, o.dst_nic, o.cause, o.seen_by,
			o.conn_id, o.lane $bad")"
}

# sc_report_counts JOB: the report's failovers, job_efficiency's and
# lane_outages' rows are one number.
sc_report_counts() {
	local n o
	n=$(sc_outages "$1")
	o=$(psql_ctl "select count(*) from fabriciq.lane_outages where job_id = $1")
	is "$n $(psql_ctl "select failovers from fabriciq.job_efficiency where job_id = $1")" "$o $o" \
		"job $1: the report's failovers ($n) and job_efficiency.failovers are its lane outages"
}

# sc_end_line NAME JOB: srun printed one job-end line for the job's step 0
# (spank_fabriciq(8)), and its counts are the job report's: incidents
# (fabriciq --json job) and lane failovers (lane outages).
sc_end_line() {
	local name=$1 job=$2 line want
	line=$(grep "^fabriciq: step $job\.0: " "$S/$name.out")
	want=$(fq --json job "$job" | json '"%d incident%s, %d lane failover%s" % (
		sum(len(s["incidents"]) for s in j["steps"]), "" if sum(len(s["incidents"]) for s in j["steps"]) == 1 else "s",
		sum(len(s["failovers"]) for s in j["steps"]), "" if sum(len(s["failovers"]) for s in j["steps"]) == 1 else "s")')
	is "$(grep -c '^fabriciq: step ' "$S/$name.out") ${line#*: *: }" "1 $want — fabriciq job $job" \
		"job $job: srun's job-end line says what the report says ($want)" || diag "$(grep '^fabriciq: ' "$S/$name.out")"
}

# sc_lanes_verified HOSTS [DOWNS]: every TCP lane report of the jobs so far
# was checked against the kernel's socket table and none was of another
# uid's connection; the only ones not placed are of lanes the kernel no
# longer had, at most 4 for each lane failure the ranks logged (DOWNS,
# default 0): a lane dialed and failed within one telemetry interval is
# seen only after its close, at most its last two reports at each end.
sc_lanes_verified() {
	local i out others=0 closed=0
	for ((i = 1; i <= $1; i++)); do
		out=$(python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
print(j.get("lanes_unverified_others", -1) + j.get("lanes_unverified_unchecked", -1), j.get("lanes_unverified_closed", -1))' \
			"$S/agent-n$i.json")
		others=$((others + ${out% *}))
		closed=$((closed + ${out#* }))
	done
	ok $((others != 0 || closed < 0 || closed > 4 * ${2:-0})) \
		"every lane report on the $1 agents checked against the kernel's socket table, none another uid's; $closed of lanes already closed (at most 4 per logged failure: ${2:-0})" ||
		diag "$(grep -h 'unverified (' "$S"/log/n*.agent.log | head -20)"
}

# sc_quiet JOB [NAME]: the job has no failover and no anomaly (and srun
# printed no job-end line for job NAME).
sc_quiet() {
	local lines=0
	[ -n "${2:-}" ] && lines=$(grep -c '^fabriciq: step ' "$S/$2.out")
	is "$(sc_outages "$1") $(psql_ctl "select count(*) from fabriciq.anomaly_jobs where job_id = $1") $lines" "0 0 0" \
		"job $1: no failover, no anomaly${2:+, no job-end line}" || diag "$(psql_ctl "select a.kind, a.summary from fabriciq.anomalies a
		join fabriciq.anomaly_jobs aj on aj.anomaly_id = a.id where aj.job_id = $1")"
}

# sc_incident JOB NODE NIC: the fault on NODE/NIC is one incident in the
# job's report (fabriciq --json job), NIC-level, over by now, within the
# budget of 3 anomaly rows on the job, and true: its DOWNs are the
# NIC-level DOWNs NODE's agent logged since the job started, its ranks
# those whose lanes crossed NODE/NIC, its lanes failed over and outages the
# job's lane_outages (sc_outages_through: all through NODE/NIC). Its JSON
# is in $SC_INCIDENT.
sc_incident() {
	local job=$1 node=$2 nic=$3 rows inc n downs ranks
	rows=$(psql_ctl "select count(*) from fabriciq.anomaly_jobs where job_id = $job")
	inc=$(fq --json job "$job" | json 'json.dumps([i for s in j["steps"] for i in s["incidents"]])')
	n=$(json 'len(j)' <<<"$inc")
	[ "${rows:-99}" -le 3 ]
	ok $? "job $job: $rows anomaly rows for one faulty NIC (at most 3), $n incident(s)" ||
		diag "$(psql_ctl "select a.id, a.kind, a.node, a.nic, a.remote_node, a.remote_nic, a.incident_id
		from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on a.id = aj.anomaly_id where aj.job_id = $job")"
	SC_INCIDENT=$(json "json.dumps([i for i in j if (i['node'], i['nic'], i['remote_node']) == ('$node', '$nic', None)])" \
		<<<"$inc")
	is "$(json 'len(j)' <<<"$SC_INCIDENT")" 1 "fabriciq job $job: one incident on $node/$nic (NIC-level)" || diag "$inc"
	is "$(json 'j[0]["component"].split("~")[0] + " " + str(j[0]["component"].split("~")[1].startswith("leaf"))' \
		<<<"$SC_INCIDENT")" "$node/$nic True" "... blamed on its cable to its leaf ($(json 'j[0]["component"]' <<<"$SC_INCIDENT"))"
	diag "$(json '" ".join("%s=%s" % (k, j[0][k]) for k in ("kind", "events", "duration_ns", "open", "ranks",
		"gbps_before", "gbps_during", "lanes_failed_over", "outages")) + " members=" +
		",".join(m["kind"] for m in j[0]["members"])' <<<"$SC_INCIDENT")"
	downs=$(psql_ctl "select count(*) from fabriciq.link_events where node = '$node' and nic = '$nic' and nic_level
		and state = 'down' and time >= (select min(start_time) from fabriciq.steps where job_id = $job)")
	is "$(json 'j[0]["events"]' <<<"$SC_INCIDENT") $(json 'j[0]["open"]' <<<"$SC_INCIDENT")" "$downs False" \
		"... counting the $downs NIC-level DOWNs $node's agent logged, over since"
	ranks=$(psql_ctl "select string_agg(r::text, ', ' order by r) from (select src_rank r from fabriciq.lane_windows
		where job_id = $job and (src_node, src_nic) = ('$node', '$nic') or job_id = $job and (dst_node, dst_nic) =
		('$node', '$nic') union select dst_rank from fabriciq.lane_windows where job_id = $job and
		(src_node, src_nic) = ('$node', '$nic') or job_id = $job and (dst_node, dst_nic) = ('$node', '$nic')) x")
	is "$(json '" ".join(str(x) for x in [j[0]["ranks"], j[0]["lanes_failed_over"]])' <<<"$SC_INCIDENT")" \
		"[$ranks] $(psql_ctl "select count(distinct (conn_id, lane)) from fabriciq.lane_outages where job_id = $job")" \
		"... on the ranks whose lanes crossed it, with every lane the job failed over"
	is "$(json 'j[0]["outages"]' <<<"$SC_INCIDENT")" "$(psql_ctl "select count(*) from fabriciq.lane_outages
		where job_id = $job")" "... and every one of the job's lane outages" || {
		diag "$(psql_ctl "select o.conn_id, o.lane, o.down_at, o.back_at, o.src_rank, s.node, o.src_nic,
			o.dst_rank, d.node, o.dst_nic, o.seen_by, o.cause from fabriciq.lane_outages o left join
			fabriciq.ranks s on s.job_id = o.job_id and s.step_id = o.step_id and s.rank = o.src_rank left
			join fabriciq.ranks d on d.job_id = o.job_id and d.step_id = o.step_id and d.rank = o.dst_rank
			where o.job_id = $job order by o.down_at")"
		diag "incident window: $(psql_ctl "select start_time, end_time from fabriciq.anomalies where id =
			$(json 'j[0]["id"]' <<<"$SC_INCIDENT")")"
		diag "$(grep -h "WARN.*lane" "$S"/*.out | tail -40)"
	}
	fq job "$job" | awk '/^Incidents$/ { i = NR } /^Ranks$/ { r = NR } END { exit !(i && i < r) }'
	ok $? "fabriciq job $job: incidents first"
}

# sc_topology_file: the site's expected topology (fabriciq-topology(5)) as
# the testbed is wired (fabriciq-testbed expected). The controller reads
# controller.topology_file again when it changes.
sc_topology_file() { tb expected; }

# sc_anomalies [WHERE]: every anomaly stored (open or closed) as
# "kind node/nic remote_node/remote_nic" ("-" for a NIC-level place), sorted.
sc_anomalies() {
	psql_ctl "select kind || ' ' || coalesce(component, node || '/' || nic) || ' ' || coalesce(remote_node || '/' || remote_nic, '-')
		from fabriciq.anomalies ${1:+where $1} order by 1"
}

# sc_delay_evidence [WHERE]: for each path_delay anomaly (and WHERE), its
# summary and the probe windows of its path (both directions' p50/p90/p99/max
# in us, from 3 s before it to its end): what a false one is made of.
sc_delay_evidence() {
	psql_ctl "select a.summary || E'\n' || coalesce((select string_agg(format('  %s %s->%s fwd %s/%s/%s/%s rev %s/%s/%s/%s %s',
			to_char(w.window_start, 'HH24:MI:SS.MS'), w.src_node || '/' || w.src_nic, w.dst_node || '/' || w.dst_nic,
			w.owd_fwd_p50_ns / 1000, w.owd_fwd_p90_ns / 1000, w.owd_fwd_p99_ns / 1000, w.owd_fwd_max_ns / 1000,
			w.owd_rev_p50_ns / 1000, w.owd_rev_p90_ns / 1000, w.owd_rev_p99_ns / 1000, w.owd_rev_max_ns / 1000,
			w.timestamp_kind),
			E'\n' order by w.window_start)
		from fabriciq.probe_windows w
		where ((w.src_node, w.src_nic, w.dst_node, w.dst_nic) = (a.node, a.nic, a.remote_node, a.remote_nic)
			or (w.src_node, w.src_nic, w.dst_node, w.dst_nic) = (a.remote_node, a.remote_nic, a.node, a.nic))
		and w.window_end > a.start_time - interval '3 s' and w.window_start < coalesce(a.end_time, now())), '')
		from fabriciq.anomalies a where a.kind = 'path_delay' ${1:+and ($1)} order by a.id"
}

# sc_leaf_ns HOST: the namespace of HOST's leaf router (the testbed's
# host_leaf: hosts spread evenly over the leaves in order).
sc_leaf_ns() {
	local hosts leaves
	hosts=$(awk -F= '$1 == "TB_HOSTS" { print $2 }' "$S/topology.env")
	leaves=$(awk -F= '$1 == "TB_LEAVES" { print $2 }' "$S/topology.env")
	echo "$TB_PFX-leaf$(((${1#n} - 1) * leaves / hosts + 1))"
}

# sc_probe_spine SRC_NODE SRC_NIC DST_NODE DST_NIC [FLOW]: the spine the
# probes of that path's flow cross (flow 0, the default: the agent's UDP
# port 7101 at both ends; flow k: 7101+k), hashed by the source leaf's ECMP
# as its packets are, or "leaf" when both hosts hang off the same leaf.
sc_probe_spine() {
	local r=${2#rail} port=$((7101 + ${5:-0})) dev
	dev=$(ip -n "$(sc_leaf_ns "$1")" route get "198.19.$r.$((2 * ${3#n} + 1))" from "198.19.$r.$((2 * ${1#n} + 1))" \
		iif "$1r$r" ipproto udp sport "$port" dport "$port" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
	case $dev in s[0-9]*) echo "spine${dev#s}" ;; *) echo leaf ;; esac
}

# The probe flows per path the agents run with (agent.probe_flows' default).
SC_PROBE_FLOWS=4

# sc_probe_spines SRC_NODE SRC_NIC DST_NODE DST_NIC: the spines every flow
# of that path crosses, one line each, sorted and unique.
sc_probe_spines() {
	local f
	for ((f = 0; f < SC_PROBE_FLOWS; f++)); do sc_probe_spine "$@" "$f"; done | sort -u
}
