#!/usr/bin/env bash
# Scenario: rates between network classes (issue 20), end to end with
# every part real. By default 4 hosts on 2 leaves and 1 spine, 1 rail
# (FQ_RATES="HOSTS RAILS LEAVES": another size, one spine so that the jobs
# share it, at least two hosts a leaf; test-rates-wide.sh runs 7 hosts x 2
# rails on 3 leaves); the first and the last leaf's links to the spine at
# 100 Mbit/s scheduled by class (fabriciq-testbed qos, the site's table in
# the plugstack: latency, DSCP 46, prio 0; bulk, DSCP 10, weight 4). A bulk
# job (srun --fabriciq=control,class=bulk on the second host of the first
# and of the last leaf: a 16 MiB alltoall over TCP cubic, its lanes on
# every rail) fills the spine; for the middle of its run a latency job
# (class=latency on the first host of each: an 8 KiB allreduce, 1 ms
# apart) shares it. The controller sees both classes' lanes on the
# leaf-spine links (their own traced routes) with the bulk class's queue
# standing, and gives the bulk job's lanes a rate that leaves room for the
# latency class; the bulk hosts' agents put it on their path pages; the
# bulk job's plugin paces its lanes at it (its lane windows: pacing_rate at
# most the rate given); the latency job gets none; once the latency job is
# gone the rate is lifted (controller.rates_hold, 3 s here, later). What
# an operator reads: the controller's and agents' log lines, `fabriciq
# --json job` (qos: the rate given and for how long) and lane_windows.
. "$(dirname "$0")/scenario.sh"
read -r HOSTS RAILS LEAVES <<<"${FQ_RATES:-4 1 2}"
sc_require "${FQ_RATES_PREFIX:-rate}"
command -v tc >/dev/null || skip_all "needs tc (iproute2)"
leaf_of() { echo $((($1 - 1) * LEAVES / HOSTS + 1)); } # as the testbed wires them
hosts_of() { local i; for ((i = 1; i <= HOSTS; i++)); do [ "$(leaf_of $i)" -eq "$1" ] && echo "$i"; done; }
read -r l1 b1 _ <<<"$(hosts_of 1 | tr '\n' ' ')"
read -r l2 b2 _ <<<"$(hosts_of "$LEAVES" | tr '\n' ' ')"
[ "$LEAVES" -ge 2 ] && [ -n "${b1:-}" ] && [ -n "${b2:-}" ] ||
	{ echo "Bail out! FQ_RATES=\"$HOSTS $RAILS $LEAVES\": needs two leaves or more, two hosts or more a leaf"; exit 1; }
plan $((14 + 4 * RAILS))
LAT="latency,dscp=46,prio=0"
BULK="bulk,dscp=10,weight=4"
LINK_BPS=12500000 # 100 Mbit/s
SC_SPANK_EXTRA="class=$LAT class=$BULK"
sc_up "$HOSTS" "$RAILS" "$LEAVES" 1 -s rates_hold=3s
ok $? "up: $HOSTS hosts x $RAILS rails on $LEAVES leaves and 1 spine; controller and $HOSTS agents reporting; classes in the plugstack"
# as bench-qos.sh: the links scheduled by class, cubic for the bulk job
# (it fills a queue), MTU packets on the hosts' rails (as a NIC's TSO cuts them)
fabric() {
	local i r
	tb qos "leaf1-spine1" 100mbit "$LAT" "$BULK" && tb qos "leaf$LEAVES-spine1" 100mbit "$LAT" "$BULK" || return 1
	for ((r = 0; r < RAILS; r++)); do
		tb exec "n$b1" ip route add "198.19.$r.$((2 * b2 + 1))/32" via "198.19.$r.$((2 * b1))" dev "rail$r" congctl cubic &&
			tb exec "n$b2" ip route add "198.19.$r.$((2 * b1 + 1))/32" via "198.19.$r.$((2 * b2))" dev "rail$r" congctl cubic || return 1
		for ((i = 1; i <= HOSTS; i++)); do tb exec "n$i" ip link set dev "rail$r" gso_max_segs 1 || return 1; done
	done
}
fabric
ok $? "leaf1's and leaf$LEAVES's links to the spine at 100 Mbit/s scheduled by class; the bulk hosts (n$b1, n$b2) on cubic; MTU packets"

# job NAME CLASS NODES PORT ARGS...: `srun --fabriciq=control,class=CLASS`,
# a rank per node, a lane per rail (2 at least, the plugin's default), in
# the background (output as sc_job's)
job() {
	local name=$1 cls=$2 nodes=$3 port=$4 first
	shift 4
	first=$("$TB" slurm scontrol show hostnames "$nodes" | head -1)
	timeout 300 "$TB" slurm srun -w "$nodes" -N2 -n2 -J "$name" --fabriciq="control,class=$cls" sh -c \
		'[ "$SLURM_PROCID" = 0 ] && echo "job $SLURM_JOB_ID"; exec "$@" 2>&1 | sed -u "s/^/[r$SLURM_PROCID] /"' sh \
		env FABRICIQ_LANES=$((RAILS > 2 ? RAILS : 2)) "$CB" --bootstrap "198.19.0.$((2 * ${first#n} + 1)):$port" "$@" --timeout 120 --timeline 1000 \
		>"$S/$name.out" 2>&1 &
	echo $! >"$S/$name.pid"
}
job bulk bulk "n[$b1,$b2]" "$(free_port)" --coll alltoall -b 16M -e 16M -n 60 -w 1 --idle-us 50
sc_job_running bulk && sleep 6 # its queue stands: the controller learns the link's capacity
job lat latency "n[$l1,$l2]" "$(free_port)" --coll allreduce -b 8K -e 8K -n 8000 -w 50 --gap-us 1000 --idle-us 5 --percentiles
sc_job_wait lat
ok $? "the latency job completes beside the bulk job" || diag "$(tail -3 "$S/lat.out")"
lat=$SC_JOB
sc_job_wait bulk
ok $? "the bulk job completes" || diag "$(tail -3 "$S/bulk.out")"
bulk=$SC_JOB
sc_verified lat && sc_verified bulk
ok $? "both jobs verified every interval"
sleep 2 # the last lane windows stored

# 1. the controller: a rate for the bulk job's paths both ways, for room
# on a link the latency job's lanes cross
given=$(grep -h "rates: job $bulk on " "$S"/log/ctl.controller.log | grep -v lifted)
for p in $(for ((r = 0; r < RAILS; r++)); do echo "n$b1/rail$r->n$b2/rail$r n$b2/rail$r->n$b1/rail$r"; done); do
	p=${p/->/ -> }
	grep -q "rates: job $bulk on $p: .* for job $lat\$" <<<"$given"
	ok $? "the controller gave job $bulk a rate on $p, for job $lat: $(grep -m1 -o "on $p: .*" <<<"$given")" ||
		diag "$(grep -h 'rates:' "$S"/log/ctl.controller.log | head -5)"
done
is "$(grep -h "rates: job $lat " "$S"/log/ctl.controller.log | grep -vc lifted)" 0 "the latency job was given none"

# 2. the agents: onto their path pages
for n in "n$b1" "n$b2"; do
	for ((r = 0; r < RAILS; r++)); do
		c=$(grep -c "controller rate: job $bulk on rail$r -> " "$S/log/$n.agent.log")
		[ "${c:-0}" -ge 1 ]
		ok $? "$n's agent took the bulk job's rate on rail$r ($c line(s))" || diag "$(grep -h 'controller' "$S/log/$n.agent.log" | tail -3)"
	done
done

# 3. the plugin paced the bulk job's lanes at it, as its lane windows say
w="from fabriciq.lane_windows where job_id = $bulk and assigned_rate is not null"
read -r nw bad lanes maxr <<<"$(psql_ctl "select count(*), count(*) filter (where pacing_rate is null or pacing_rate > assigned_rate),
	count(distinct (src_rank, dst_rank, lane)), max(assigned_rate) $w" | tr '|' ' ')"
[ "${nw:-0}" -gt 0 ] && [ "$bad" = 0 ]
ok $? "the bulk job's sending windows with a rate given ($nw on $lanes lanes): each paced at most at it ($bad not)" ||
	diag "$(psql_ctl "select interval_end::time, src_rank, lane, assigned_rate, pacing_rate $w and (pacing_rate is null or pacing_rate > assigned_rate) limit 5")"
# the bulk job's lanes from one rank to the other (one a rail) all cross one
# shaped link: together, at the end of each window (the rates of the
# windows that span it), within the link's budget
read -r pmax pmin <<<"$(psql_ctl "with w as (select * $w)
	select max(s), min(s) from (select sum(b.assigned_rate) s from w a join w b
		on (b.src_rank, b.dst_rank) = (a.src_rank, a.dst_rank)
		and b.interval_start < a.interval_end and b.interval_end >= a.interval_end
	group by a.src_rank, a.dst_rank, a.lane, a.interval_end) x" | tr '|' ' ')"
[ "${pmax:-0}" -gt 0 ] && [ "$pmax" -le $((LINK_BPS * 95 / 100)) ]
ok $? "the bulk job's lanes from one rank to the other together ($pmin-$pmax B/s, at most $maxr B/s a lane) stay within 0.95 of the 100 Mbit/s link" ||
	diag "$(grep -h 'rates:' "$S"/log/ctl.controller.log | head -5)"
# how much of their rates rank 0's lanes used: per window of its lane 0,
# the bytes of its lanes over that time against the sum of their rates
diag "the bulk job's lanes from n$b1 to n$b2 used of its rate, per window (%): $(psql_ctl "with w as (select * $w and src_rank = 0)
	select string_agg(u::text, ' ' order by t) from (select a.interval_end t, round(100 * sum(b.bytes
		/ extract(epoch from b.interval_end - b.interval_start)) / sum(b.assigned_rate)) u
	from w a join w b on b.interval_start < a.interval_end and b.interval_end >= a.interval_end
	where a.lane = 0 group by a.interval_end) x")"
is "$(psql_ctl "select count(*) from fabriciq.lane_windows where job_id = $lat and assigned_rate is not null")" 0 \
	"the latency job's lanes: no rate given"

# 4. lifted once the latency job is gone (its last report, a tick its report
# may be late, rates_hold 3 s, a report window, the page's)
read -r late given_late <<<"$(psql_ctl "with e as (select max(interval_end) t from fabriciq.lane_windows where job_id = $lat)
	select count(*), count(*) filter (where assigned_rate is not null) from fabriciq.lane_windows, e
	where job_id = $bulk and owd_p50_ns is null and interval_start > e.t + interval '8 seconds' and bytes > 0" | tr '|' ' ')"
[ "${late:-0}" -gt 0 ] && [ "$given_late" = 0 ]
ok $? "8 s after the latency job's last window: the bulk job's $late sending windows carry no rate ($given_late do)"
grep -q "rates: job $bulk on n$b1/rail0 -> n$b2/rail0: lifted" "$S"/log/ctl.controller.log &&
	grep -q "controller rate: job $bulk on rail0 -> n$b2:rail0 lifted" "$S/log/n$b1.agent.log"
ok $? "the controller lifted it and n$b1's agent took the lift"

# 5. what the job report says
qb=$(fq --json job "$bulk" | json 'j["steps"][0]["qos"]')
python3 -c 'import ast, sys; q = ast.literal_eval(sys.argv[1])
sys.exit(not (q["class"] == "bulk" and q["given_lanes"] >= 2 and q["given_rate_min_bytes_per_s"] > 0 and q["given_lane_s"] > 0))' "$qb"
ok $? "fabriciq job $bulk: class bulk, the rate given and for how long: $qb"
ql=$(fq --json job "$lat" | json 'j["steps"][0]["qos"]')
python3 -c 'import ast, sys; q = ast.literal_eval(sys.argv[1]); sys.exit(not (q["class"] == "latency" and q["given_lanes"] == 0))' "$ql"
ok $? "fabriciq job $lat: class latency, no rate given: $ql"
fq job "$bulk" | grep -q "network class: bulk.*rate given by the controller to [0-9]* lane(s)"
ok $? "the text report's network class line says the rate given" || diag "$(fq job "$bulk" | grep 'network class')"
diag "latency job: $(grep -h '# latency' "$S/lat.out" | head -1)"
done_testing
