#!/usr/bin/env bash
# test-ctl-advice: the controller's collision advice end to end (issue 7):
# the real fabriciq-controller (collision_advice on, its default) with a
# private PostgreSQL and munged, and four simulated agents (fq-agentsim
# --collision) whose receiving node D reports the lanes of two jobs that
# all end on D/rail0 while the senders report the probe delay of their
# paths. Checks: a `collision` anomaly stored on the shared NIC and
# attached to both jobs (SQL, fabriciq --json anomalies / job); an Advice
# received only by the moved job's source node, for the right job (fewest
# outlier lanes moves; ties: the higher job id), with the configured
# lifetime; no advice and no collision when the lanes' p99 is within
# collision_factor (3) of the probe delay (control); none once the lanes
# stop; the same with both ends of every lane reporting; none with
# collision_advice = no.
[ -n "${FQ_TEST_PG:-}" ] || exec "$(dirname "$0")/../db/with-postgres.sh" "$0" "$@"
. "$(dirname "$0")/ctl-lib.sh"

command -v python3 >/dev/null || skip_all "python3 not installed"
CLI=$top_builddir/controller/fabriciq
[ -x "$CLI" ] || skip_all "build controller/fabriciq first"
munge_up || skip_all "private munged did not start"
plan 37

# advice_lifetime: not the default, so the lifetime checked is the configured one
ctl_up controller.advice_lifetime=7s
ok $? "controller starts (collision_advice default, advice_lifetime 7s)"
cli() { "$CLI" --controller "http://127.0.0.1:$HTTP_PORT" --json "$@"; }

# run_sim MODE PREFIX JOBBASE [OPTION]...: the scenario; its output in $T/MODE.out.
run_sim() {
	local mode=$1 prefix=$2 base=$3
	shift 3
	sim --agents 4 --collision "$mode" --prefix "$prefix" --job-base "$base" --duration 4 --tick 0.5 "$@" \
		>"$T/$mode.out" 2>&1
}
# advice MODE EXPR: evaluate a python expression over the Advice frames A
# (a list of dicts) the simulator printed.
advice() {
	python3 -c '
import json, sys
A = [json.loads(l)["advice"] for l in open(sys.argv[1]) if l.startswith("{")]
print(eval(sys.argv[2]))' "$T/$1.out" "$2" 2>&1
}
coll() { q "select count(*) from fabriciq.anomalies where kind = 'collision' and node = '$1' $2"; }
attached() {
	q "select coalesce(string_agg(aj.job_id::text, ',' order by aj.job_id), '') from fabriciq.anomaly_jobs aj
	   join fabriciq.anomalies a on a.id = aj.anomaly_id where a.kind = 'collision' and a.node = '$1'"
}

# ---- control: lanes at 2.5x the probe delay (not outliers): nothing -----
run_sim control ctl 8000
ok $? "control: 4 agents, all frames acknowledged ($(tail -1 "$T/control.out"))"
sleep 1.5
is "$(advice control 'len(A)')" 0 "control: no Advice sent to any agent"
is "$(coll ctl00003)" 0 "control: no collision anomaly"
is "$(q "select count(*) from fabriciq.lane_windows where job_id in (8001, 8002)")" \
	"$(q "select count(*) from fabriciq.lane_windows where job_id in (8001, 8002) and owd_p99_ns = 250000")" \
	"control: the lanes were stored (with their 250 us p99)"

# ---- outlier: job 9001 one lane A->D, job 9002 two (B->D, C->D) --------
run_sim outlier out 9000
ok $? "outlier: all frames acknowledged ($(tail -1 "$T/outlier.out"))"
sleep 1.5
n=$(advice outlier 'len(A)')
[ "$n" -ge 1 ] 2>/dev/null
ok $? "outlier: Advice frames received ($n)"
is "$(advice outlier '",".join(sorted(set(a["node"] for a in A)))')" out00000 \
	"only the moved job's source node (A) got advice"
is "$(advice outlier '",".join(sorted(set(str(a["job"]) for a in A)))')" 9001 \
	"the advice is for job 9001 (1 outlier lane against 2)"
is "$(advice outlier '",".join(sorted(set("%s %s %s %s" % (a["kind"], a["local_nic"], a["remote_node"], a["remote_nic"]) for a in A)))')" \
	"move rail0 out00003 rail0" "... move off rail0 -> out00003/rail0 (its lane's path)"
is "$(advice outlier '",".join(sorted(set(str(a["lifetime_ns"]) for a in A)))')" 7000000000 \
	"... with the configured lifetime (7 s)"
is "$(advice outlier '",".join(sorted(set(a["shared_nic"] for a in A)))')" out00003/rail0 \
	"... naming the shared NIC"
is "$(advice outlier '",".join(sorted(set(str(a["collides_with_job"]) for a in A)))')" 9002 \
	"... and the job it collides with"
[ "$n" -ge 2 ]
ok $? "the advice is renewed while the collision lasts ($n frames in 4 s of 1 s ticks)"
is "$(coll out00003 "and nic = 'rail0' and severity = 'warning'")" 1 "one collision anomaly stored on out00003/rail0"
is "$(attached out00003)" 9001,9002 "... attached to both jobs"
is "$(q "select evidence->>'move_job' || '/' || (evidence->>'move_lanes') || '/' || (evidence->>'other_lanes')
	from fabriciq.anomalies where kind = 'collision' and node = 'out00003'")" 9001/1/2 \
	"... its evidence: job 9001 moves, 1 lane against 2"
is "$(q "select count(*) from fabriciq.anomalies where kind = 'lane_outlier' and node like 'out%'")" 0 \
	"no lane_outlier anomaly (the lanes of each job are alike)"
kinds=$(cli anomalies --limit 50 | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(" ".join("%s:%s" % (a["kind"], ",".join(str(j["job_id"]) for j in a["jobs"]))
               for a in o["anomalies"] if a.get("node") == "out00003"))' 2>&1)
is "$kinds" collision:9001,9002 "fabriciq --json anomalies: the collision on out00003, with both jobs"
jk() {
	cli job "$1" | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(",".join(sorted(set(a["kind"] for s in o["steps"] for a in s.get("anomalies", [])))))' 2>&1
}
is "$(jk 9001)" collision "fabriciq --json job 9001 shows the collision"
is "$(jk 9002)" collision "fabriciq --json job 9002 shows the collision"

# ---- both ends report each lane (the plugin's sending and receiving sides) --
# The sender's side carries no delay and its interval ends 50 ms after the
# receiver's: it must not hide the receiver's delay from the rule.
run_sim outlier both 9300 --both-ends
ok $? "both ends: all frames acknowledged ($(tail -1 "$T/outlier.out"))"
sleep 1.5
is "$(advice outlier '"%s %s %s" % (",".join(sorted(set(a["node"] for a in A))), ",".join(sorted(set(str(a["job"]) for a in A))), len(A) >= 2)')" \
	"both00000 9301 True" "both ends: the advice still reaches A for job 9301, renewed"
is "$(attached both00003)" 9301,9302 "both ends: the collision attached to both jobs"

# ---- receivers at different phases: the lanes' newest intervals end 40
# (A->D), 80 (B->D) and 0 ms (C->D) before each tick; job 9602's two lanes,
# 80 ms apart, both count (else 1 against 1, and the tie moves 9602).
run_sim outlier phs 9600 --phases
ok $? "phases: all frames acknowledged ($(tail -1 "$T/outlier.out"))"
sleep 1.5
is "$(advice outlier '",".join(sorted(set("%s:%s" % (a["node"], a["job"]) for a in A)))') $(attached phs00003)" \
	"phs00000:9601 9601,9602" "phases: the collision seen, job 9601 advised, both attached"

# ---- the jobs stop reporting lanes: the advice stops -------------------------
# D's lanes stop after 2 s (the agents stay connected, probes go on); the
# newest lanes must not keep the collision (and its advice) alive.
run_sim outlier stale 9400 --lanes-for 2 --duration 8
ok $? "lanes for 2 s of 8: all frames acknowledged ($(tail -1 "$T/outlier.out"))"
first=$(advice outlier 'min([a["t_ms"] for a in A] or [-1])')
last=$(advice outlier 'max([a["t_ms"] for a in A] or [-1])')
[ "$first" -ge 0 ] 2>/dev/null && [ "$first" -le 3500 ]
ok $? "advice while the lanes came (first at $first ms)"
[ "$last" -ge 0 ] 2>/dev/null && [ "$last" -le 6000 ]
ok $? "no advice once the lanes stopped for 2 report windows (last at $last ms, lanes until 2000 ms, run 9500 ms)"

# ---- tie: one outlier lane each (A->D job 9101, B->D job 9102) ---------
# The same controller: the earlier scenarios' jobs (3 outlier lanes on one
# NIC, more than this one's 2) stopped reporting, so they no longer count.
run_sim tie tie 9100
ok $? "tie: all frames acknowledged ($(tail -1 "$T/tie.out"))"
sleep 1.5
is "$(advice tie '",".join(sorted(set(a["node"] for a in A)))')" tie00001 \
	"tie: only the higher job's source node (B) got advice"
is "$(advice tie '",".join(sorted(set(str(a["job"]) for a in A)))')" 9102 "tie: the advice is for the higher job id"
is "$(attached tie00003)" 9101,9102 "tie: the collision attached to both jobs"

# ---- collision_advice = no: the rule is off --------------------------------
ctl_down; ctl_up controller.collision_advice=no
ok $? "controller restarted with collision_advice = no"
run_sim outlier off 9200
sleep 1.5
is "$(advice outlier 'len(A)') $(coll off00003)" "0 0" "collision_advice = no: no advice, no collision anomaly"

# ---- collision_factor = 2: the control scenario's lanes (2.5x) now count ---
ctl_down; ctl_up controller.collision_factor=2
ok $? "controller restarted with collision_factor = 2"
run_sim control fac 9500
sleep 1.5
is "$(advice control '",".join(sorted(set("%s:%s" % (a["node"], a["job"]) for a in A)))') $(attached fac00003)" \
	"fac00000:9501 9501,9502" "collision_factor = 2: the control's lanes collide, job 9501 advised"
done_testing
