#!/usr/bin/env bash
# Localisation campaign: one random fault at a time on the emulated
# cluster, every part real (agents probing and tracing, the controller
# inferring the topology and blaming, PostgreSQL), and what the operator
# reads (`fabriciq --json incidents`) compared with what was injected.
#
# Faults, in turn (the target drawn from the seed):
#   link-down    a leaf-spine cable cut (the routes re-converge around it)
#   link-lossy   a leaf-spine cable dropping LOSS % of packets both ways
#   spine-slow   every link of a spine shaped to 40 Mbit/s and loaded by
#                a TCP flow per ordered pair of leaves hashed over it, every
#                directed link of it loaded alike (a congested spine)
#   host-down    a host's cable cut at its leaf (the NIC sees no carrier)
#   host-flap    that cable flapping (5 cycles of 1 s)
#   nic-down     a host's NIC administratively down (the cable stays up)
# The answer expected: the cable "leafL~spineS", the spine, the host link
# "nI/railR~leafL", or the NIC "nI/railR". Each trial: inject, then poll
# the incidents opened since (top-level, with a component) until one names
# the injected component (up to 15 s): its time from injection; correct if
# no other component is blamed then; ambiguous if it says "ambiguous
# with". Beside it, the naive answer: the node with the most
# DOWN paths in the link events of the trial (right for a host's faults
# when it is that host; a fabric fault has no right node). Then heal, and
# wait until every incident has closed.
#
# Every even trial runs with job traffic: an `srun --fabriciq=monitor`
# allreduce with a rank on every host, started before the fault and
# stopped after it (FQ_LOC_JOBS=no: none).
#
# Size and trials: FQ_LOC="HOSTS RAILS LEAVES SPINES TRIALS SEED" (default
# "6 2 3 3 6 1"); bench/bench-localise.sh runs 8 2 4 4 40, all six kinds.
# Prints a line per trial and the summary: accuracy, ambiguity, p50/p90
# time to blame, the naive baseline's accuracy, and the topology check.
. "$(dirname "$0")/scenario.sh"
sc_require loca
read -r HOSTS RAILS LEAVES SPINES TRIALS SEED <<<"${FQ_LOC:-6 2 3 3 6 1}"
LOSS=${FQ_LOC_LOSS:-5}
JOBS=${FQ_LOC_JOBS:-yes} # a job running through every even trial
WAIT_S=15
# FQ_LOC_KINDS="link-down link-lossy": those kinds, in turn. By default
# (make check) the four localised every time so far (spine-slow 14/14,
# host-down 14/14, host-flap 12/12, nic-down 12/12 in two 40-trial
# campaigns), so a failure is news; the leaf-spine cable faults are
# bench/bench-localise.sh's (all six kinds), where each NIC pair's one
# probe 5-tuple left some cables crossed by 4 paths, too few to blame
# them every time (link-down 3/7, link-lossy 6/7); the probe flows
# (agent.probe_flows) are for them. The coverage line gives the directed
# probe paths per leaf-spine cable, one flow a path and all flows.
read -r -a KINDS <<<"${FQ_LOC_KINDS:-spine-slow host-down host-flap nic-down}"
plan 4

# Closing fast (5 s quiet, 5 s after UP), so each trial starts clean.
sc_up $HOSTS $RAILS $LEAVES $SPINES -s delay_floor=300us -s quiet_close=5s -s incident_gap=5s \
	-s "topology_file=$S/topology.conf"
ok $? "up: $HOSTS hosts x $RAILS rails, $LEAVES leaves, $SPINES spines; controller and agents reporting"
sc_topology_file >"$S/topology.conf"

# Every probed path's route stored, then the topology checked once.
want=$((HOSTS * (HOSTS - 1) * RAILS))
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 60000000000 ]; do
	[ "$(psql_ctl "select count(*) from fabriciq.path_routes_current")" -ge "$want" ] && break
	sleep 0.5
done
# ... and every probe flow's, as the agents traced them (their status
# files: the database keeps each path's first flow's route)
cover() { # the directed probe paths per leaf-spine link: FLOWS ("0": each path's first)
	python3 - "$1" "$S"/agent-n*.json <<'PY'
import json, sys
links = {}
flows = sys.argv[1]
for f in sys.argv[2:]:
    try:
        routes = json.load(open(f)).get("traces", {}).get("routes", [])
    except (OSError, ValueError):
        continue
    for r in routes:
        if flows == "0" and r.get("flow", 0):
            continue
        for h in r["hops"]:
            a = h.split(".")
            if len(a) == 4 and a[:2] == ["198", "18"]:
                k = f"leaf{int(a[2]) - 100}~spine{int(a[3]) // 2 + 1}"
                links[k] = links.get(k, 0) + 1
v = sorted(links.values())
print(f"min {v[0]} median {v[len(v) // 2]} max {v[-1]} over {len(v)} links ({sum(v)} crossings)" if v else "none")
PY
}
flow_routes() { # the routes the agents traced of flows beyond each path's first
	python3 -c 'import json, sys
n = 0
for f in sys.argv[1:]:
    try:
        n += sum(1 for r in json.load(open(f)).get("traces", {}).get("routes", []) if r.get("flow", 0))
    except (OSError, ValueError):
        pass
print(n)' "$S"/agent-n*.json
}
while [ $(($(date +%s%N) - t0)) -lt 90000000000 ] && [ "$(flow_routes)" -lt $((want * (SC_PROBE_FLOWS - 1))) ]; do
	sleep 1
done
diag "  coverage: directed probe paths per leaf-spine link: one flow a path $(cover 0); $SC_PROBE_FLOWS flows $(cover all) ($(flow_routes) flow routes beyond the first, $((want * (SC_PROBE_FLOWS - 1))) wanted)"
fq --json topology >"$S/topology.json"
topo=$(python3 - "$S/topology.json" "$HOSTS" "$RAILS" "$LEAVES" "$SPINES" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
hosts, rails, leaves, spines = map(int, sys.argv[2:])
bad = []
names = {s["name"] for s in j["switches"]}
want = {f"leaf{l}" for l in range(1, leaves + 1)} | {f"spine{s}" for s in range(1, spines + 1)}
bad += [f"switch {n} missing" for n in sorted(want - names)] + [f"switch {n} unexpected" for n in sorted(names - want)]
hl = {(h["node"], h["nic"]): h["switch"] for h in j["host_links"]}
for i in range(1, hosts + 1):
    for r in range(rails):
        leaf = f"leaf{(i - 1) * leaves // hosts + 1}"
        if hl.get((f"n{i}", f"rail{r}")) != leaf:
            bad.append(f"n{i}/rail{r} on {hl.get((f'n{i}', f'rail{r}'))}")
bad += [d["kind"] + " " + d["text"] for d in j["differences"] if d["kind"] != "link_not_seen"]
print("; ".join(bad))
EOF
)
is "$topo" "" "the topology inferred is the testbed's: $LEAVES leaves, $SPINES spines, every NIC on its leaf, no difference but unseen links"

host_leaf() { echo $((($1 - 1) * LEAVES / HOSTS + 1)); }
RANDOM=$SEED # the targets: bash's generator, seeded
open_sql="select count(*) from fabriciq.anomalies where end_time is null and kind <> 'topology_mismatch'"

# Load over spine SP, planned before the fault: for every ordered pair of
# leaves, a host on each and a source port that the first leaf's ECMP hash
# sends over SP (asked of its routing table with the flow's own ports):
# "SRC DST SPORT DPORT" lines, every directed link of SP loaded alike;
# their sinks started. load_start then starts the senders at once.
load_plan() {
	local sp=$1 secs=$2 i j la lb port dport dev n=0
	local -A pair=()
	: >"$S/flows"
	for ((i = 1; i <= HOSTS; i++)); do
		for ((j = 1; j <= HOSTS; j++)); do
			la=$(host_leaf $i) lb=$(host_leaf $j)
			[ "$la" != "$lb" ] && [ -z "${pair[$la-$lb]:-}" ] || continue
			dport=$((5201 + n))
			for ((port = 20000; port < 20064; port++)); do
				dev=$(ip -n "$TB_PFX-leaf$la" route get "198.19.0.$((2 * j + 1))" from "198.19.0.$((2 * i + 1))" \
					iif "n${i}r0" ipproto tcp sport $port dport $dport 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
				[ "$dev" = "s$sp" ] && break
			done
			[ "$dev" = "s$sp" ] || continue
			"$TB" exec "n$j" timeout $((secs + 8)) "$FQTB_HELPERS/tb-flow" sink --port $dport --seconds $((secs + 6)) \
				>/dev/null 2>&1 &
			echo "$i $j $port $dport" >>"$S/flows"
			n=$((n + 1)) pair[$la-$lb]=1 # one flow per ordered leaf pair
		done
	done
	sleep 0.5 # the sinks listen
}
load_start() {
	local i j port dport
	while read -r i j port dport; do
		"$TB" exec "n$i" timeout $(($1 + 2)) "$FQTB_HELPERS/tb-flow" send --dst "198.19.0.$((2 * j + 1))" \
			--port "$dport" --sport "$port" --bind "198.19.0.$((2 * i + 1))" --seconds "$1" >/dev/null 2>&1 &
	done <"$S/flows"
}

: >"$S/trials"
for ((trial = 1; trial <= TRIALS; trial++)); do
	kind=${KINDS[$(((trial - 1) % ${#KINDS[@]}))]}
	h=$((RANDOM % HOSTS + 1)) r=$((RANDOM % RAILS)) l=$((RANDOM % LEAVES + 1)) sp=$((RANDOM % SPINES + 1))
	case $kind in
	link-down | link-lossy) want_c="leaf$l~spine$sp" ;;
	spine-slow) want_c="spine$sp" ;;
	host-down | host-flap) want_c="n$h/rail$r~leaf$(host_leaf $h)" ;;
	nic-down) want_c="n$h/rail$r" ;;
	esac
	flows= job=- flap=
	if [ $((trial % 2)) = 0 ] && [ "$JOBS" = yes ]; then
		# with job traffic: a monitor-mode allreduce, a rank on every host
		sc_job "load$trial" monitor "n[1-$HOSTS]" allreduce 1M 1000000 $((17400 + trial))
		sc_job_running "load$trial" && job=$(awk '/^job / { print $2; exit }' "$S/load$trial.out")
	fi
	[ "$kind" = spine-slow ] && load_plan "$sp" 12 && flows=$(wc -l <"$S/flows")
	last=$(psql_ctl "select coalesce(max(id), 0) from fabriciq.anomalies")
	since=$(psql_ctl "select now()")
	t0=$(date +%s%N)
	case $kind in
	link-down) tb link down "leaf$l-spine$sp" ;;
	link-lossy) tb loss "leaf$l-spine$sp" "$LOSS" ;;
	spine-slow)
		for ((x = 1; x <= LEAVES; x++)); do tb shape "leaf$x-spine$sp" 40mbit; done
		load_start 12
		;;
	host-down) tb link down "n$h" "$r" ;;
	host-flap) tb flap "n$h" "$r" --count 5 --period 1000 & flap=$! ;;
	nic-down) tb nic down "n$h" "$r" ;;
	esac
	blames_sql="select component || ' ' || (summary like '%ambiguous with%') from fabriciq.anomalies
		where id > $last and incident_id is null and component is not null order by id"
	took=
	while [ $(($(date +%s%N) - t0)) -lt $((WAIT_S * 1000000000)) ]; do
		grep -q "^$want_c " <<<"$(psql_ctl "$blames_sql")" && { took=$((($(date +%s%N) - t0) / 1000000)); break; }
		sleep 0.25
	done
	# what the operator reads now: the incidents opened since, with a component
	blames=$(psql_ctl "$blames_sql")
	got=$(grep -m1 "^$want_c " <<<"$blames" || head -1 <<<"$blames")
	amb=${got#* } got=${got%% *}
	others=$(awk -v w="$want_c" '$1 != w { print $1 }' <<<"$blames" | sort -u | paste -sd, -)
	[ -n "$flap" ] && wait "$flap" # the flapping's end
	case $kind in
	link-down) tb link up "leaf$l-spine$sp" ;;
	link-lossy) tb loss "leaf$l-spine$sp" off ;;
	spine-slow) for ((x = 1; x <= LEAVES; x++)); do tb shape "leaf$x-spine$sp" off; done ;;
	host-down | host-flap) tb link up "n$h" "$r" ;;
	nic-down) tb nic up "n$h" "$r" ;;
	esac
	if [ -f "$S/load$trial.pid" ]; then
		kill "$(cat "$S/load$trial.pid")" 2>/dev/null
		wait "$(cat "$S/load$trial.pid")" 2>/dev/null
		rm -f "$S/load$trial.pid"
	fi
	naive=$(psql_ctl "select n from (select node n from fabriciq.link_events where time >= '$since' and state = 'down'
		and remote_node is not null union all select remote_node from fabriciq.link_events where time >= '$since'
		and state = 'down' and remote_node is not null) x group by n order by count(*) desc, n limit 1")
	case $kind in host-* | nic-*) naive_ok=$([ "$naive" = "n$h" ] && echo 1 || echo 0) ;; *) naive_ok=0 ;; esac
	printf '%s %s %s %s %s %s %s %s %s\n' "$trial" "$kind" "$want_c" "${got:--}" "${took:--}" "${amb:-false}" "$naive_ok" \
		"${others:--}" "$job" >>"$S/trials"
	jobtxt=
	[ "$job" = - ] || jobtxt=" (job $job running)"
	diag "trial $trial$jobtxt: $kind${flows:+ ($flows flows)} $want_c -> ${got:-nothing}${took:+ in $took ms}${others:+, also blamed: $others}; naive: ${naive:-none}"
	[ "$got" != "$want_c" ] || [ -n "$others" ] &&
		diag "  $(psql_ctl "select kind || ': ' || summary from fabriciq.anomalies where id > $last and incident_id is null
			and component is not null order by id limit 3")"
	# healed: every incident closed (5 s quiet), at most 60 s
	t1=$(date +%s%N)
	while [ $(($(date +%s%N) - t1)) -lt 60000000000 ] && [ "$(psql_ctl "$open_sql")" != 0 ]; do sleep 0.5; done
	sleep 2
done

summary=$(python3 - "$S/trials" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
n = len(rows)
right = sum(r[2] == r[3] and r[7] == "-" for r in rows)
extra = sum(r[7] != "-" for r in rows)
amb = sum(r[5] == "true" for r in rows)
times = sorted(int(r[4]) for r in rows if r[4] != "-")
def pct(p):
    return times[min(len(times) - 1, int(p * len(times)))] if times else None
naive = sum(r[6] == "1" for r in rows)
def acc(sel):
    sel = list(sel)
    return f"{sum(r[2] == r[3] and r[7] == '-' for r in sel)}/{len(sel)}"
by = {}
for r in rows:
    k = by.setdefault(r[1], [0, 0])
    k[0] += r[2] == r[3] and r[7] == "-"
    k[1] += 1
print(f"trials {n} accuracy {right}/{n} = {100 * right / max(n, 1):.1f} % ambiguous {amb} also-blamed {extra} "
      f"blamed {len(times)} p50 {pct(0.5)} ms p90 {pct(0.9)} ms naive {naive}/{n} = {100 * naive / max(n, 1):.1f} % "
      + f"with a job {acc(r for r in rows if r[8] != '-')} without {acc(r for r in rows if r[8] == '-')} "
      + "by kind " + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in by.items()))
EOF
)
diag "$summary"
echo "# localise: $summary" >"$S/summary"
[ -n "${FQ_LOC_SUMMARY:-}" ] && cp "$S/summary" "$S/trials" "$FQ_LOC_SUMMARY/" 2>/dev/null
right=$(awk '$3 == $4 && $8 == "-"' "$S/trials" | wc -l)
is "$right/$TRIALS" "$TRIALS/$TRIALS" "every trial's fault blamed on the injected component, and nothing else" ||
	diag "$(awk '$3 != $4 || $8 != "-"' "$S/trials")"
is "$(psql_ctl "select count(*) from fabriciq.drain_hints h join fabriciq.anomalies a on a.id = h.anomaly_id
	where h.action = 'drain' and a.kind like 'fabric_%'")" 0 "no drain hint for a fabric fault"
