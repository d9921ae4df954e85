#!/usr/bin/env bash
# Scenario: pacing (FABRICIQ_PACE=delay, issue 20) end to end with every
# part real. 5 hosts on 2 leaves and 1 spine, 1 rail; n1's host link
# shaped to 100 Mbit/s with a 50 ms queue (a deep buffer at that rate).
# A user runs `FABRICIQ_PACE=delay srun --fabriciq=control` (the plugin's
# variables travel in the job's environment): a 4 MiB alltoall over TCP
# cubic on n1-n5, so four senders meet in n1's queue. Then the same job
# without pacing. What an operator reads must agree with what the ranks
# logged: the lanes the ranks said they paced ("paced at", NCCL_DEBUG=INFO)
# are the lanes `fabriciq --json job` counts as paced (qos.paced_lanes),
# each with its time capped in fabriciq.lane_windows; every sender's path
# into n1 among them; and the job that did not ask for pacing: none.
. "$(dirname "$0")/scenario.sh"
sc_require pace
command -v tc >/dev/null || skip_all "needs tc (iproute2)"
plan 12
sc_up 5 1 2 1
ok $? "up: 5 hosts on 2 leaves and 1 spine; controller and 5 agents reporting"
tb shape n1-rail0 100mbit --latency 50 &&
	for i in 2 3 4 5; do tb exec "n$i" ip route add 198.19.0.3/32 via "198.19.0.$((2 * i))" dev rail0 congctl cubic || exit 1; done
ok $? "n1's host link at 100 Mbit/s with a 50 ms queue; the senders on TCP cubic toward it"

# run NAME [PACE]: the alltoall on n[1-5], FABRICIQ_PACE=PACE in its
# environment if given (srun passes the submitter's environment on)
run() {
	export NCCL_DEBUG=INFO
	if [ -n "${2:-}" ]; then export FABRICIQ_PACE=$2; else unset FABRICIQ_PACE; fi
	sc_job "$1" control 'n[1-5]' alltoall 4M 30 "$(free_port)"
	unset FABRICIQ_PACE NCCL_DEBUG
	sc_job_wait "$1"
}
run paced delay
ok $? "the paced job completes" || diag "$(grep -v INFO "$S/paced.out" | tail -3)"
paced=$SC_JOB
run unpaced
ok $? "the unpaced job completes" || diag "$(grep -v INFO "$S/unpaced.out" | tail -3)"
unpaced=$SC_JOB
sc_verified paced && sc_verified unpaced
ok $? "both jobs verified every interval"
sleep 2 # the last lane windows stored

# the lanes each job's ranks logged as paced: "SRC DST LANE" by rank (the
# peer's rail0 address 198.19.0.2n+1 is host n, rank n-1)
logged() {
	sed -n 's/^\[r\([0-9]*\)\].* connection [0-9a-f]* lane \([0-9]*\) (rail0 [0-9.:]* -> 198\.19\.0\.\([0-9]*\):.*: paced at .*/\1 \3 \2/p' \
		"$S/$1.out" | awk '{ print $1, ($2 - 1) / 2 - 1, $3 }' | sort -u
}
np=$(logged paced | wc -l)
[ "$np" -gt 0 ]
ok $? "the paced job's ranks logged $np lane(s) paced"
qp=$(fq --json job "$paced" | json 'j["steps"][0]["qos"]')
rp=$(python3 -c 'import ast, sys; print(ast.literal_eval(sys.argv[1])["paced_lanes"])' "$qp")
is "$rp" "$np" "fabriciq job $paced: the lanes it reports paced are the lanes the ranks logged ($qp)"
read -r wl ws <<<"$(psql_ctl "select count(distinct (src_rank, dst_rank, lane)), coalesce(sum(throttled_ns), 0)
	from fabriciq.lane_windows where job_id = $paced and throttled_ns > 0" | tr '|' ' ')"
is "$wl" "$np" "fabriciq.lane_windows: $wl lane(s) of job $paced with time capped" || {
	psql_ctl "select distinct src_rank, dst_rank, lane from fabriciq.lane_windows where job_id = $paced
		and throttled_ns > 0" | tr '|' ' ' | sort >"$S/capped"
	diag "logged paced, no time capped (src dst lane): $(logged paced | comm -23 - "$S/capped" | tr '\n' ',')"
	diag "time capped, not logged: $(logged paced | comm -13 - "$S/capped" | tr '\n' ',')"
}
python3 -c 'import ast, sys; q = ast.literal_eval(sys.argv[1]); sys.exit(not abs(q["throttled_lane_s"] - int(sys.argv[2]) / 1e9) < 1e-3 and q["throttled_lane_s"] > 0)' "$qp" "$ws"
ok $? "the report's time capped ($(python3 -c 'import ast, sys; print(ast.literal_eval(sys.argv[1])["throttled_lane_s"])' "$qp") lane-s) is the windows' sum"
is "$(psql_ctl "select count(distinct src_rank) from fabriciq.lane_windows
	where job_id = $paced and dst_rank = 0 and throttled_ns > 0")" 4 "every sender's path into n1 (rank 0) was paced"
# the job that did not ask
is "$(logged unpaced | wc -l)" 0 "the unpaced job's ranks logged no lane paced"
qu=$(fq --json job "$unpaced" | json 'j["steps"][0]["qos"]')
python3 -c 'import ast, sys; q = ast.literal_eval(sys.argv[1]); sys.exit(not (q["paced_lanes"] == 0 and q["throttled_lane_s"] == 0))' "$qu"
ok $? "fabriciq job $unpaced: no lane paced, no time capped ($qu)"
diag "paced per path, src>dst: time capped s / lowest cap MB/s: $(psql_ctl "select string_agg(format('%s>%s %s/%s',
	src_rank, dst_rank, round(t / 1e9, 1), round(r / 1e6, 2)), ' ' order by src_rank, dst_rank) from (select src_rank, dst_rank,
	sum(throttled_ns) t, min(pacing_rate) r from fabriciq.lane_windows where job_id = $paced group by 1, 2) x")"
for j in paced unpaced; do diag "$j: $(grep '^\[r0\]' "$S/$j.out" | grep -v 'INFO\|timeline' | tail -2 | tr '\n' ' ')"; done
done_testing
